"""Inputs on which the property of ``test_run_matches_check.py`` once failed, kept as quick tests: ``check`` and
``--dry-run`` reach the same verdict, with no traceback (``property_inputs._verdicts`` raises otherwise)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import property_inputs as P  # noqa: E402


@pytest.mark.parametrize(
    "overrides",
    [
        # the verl launch's machine check read the GPU counts as integers (OverflowError, ValueError, TypeError)
        ["trainer.nnodes=inf"],
        ["trainer.n_gpus_per_node=nan"],
        ["trainer.n_gpus_per_node=[1,2]"],
        ["trainer.nnodes=???"],
        ["actor_rollout_ref.actor.checkpoint.load_contents=0", "trainer.n_gpus_per_node=nan"],
        # ... and fsdpcfg.env as a mapping (AttributeError: 'int' object has no attribute 'items')
        ["fsdpcfg.env=-1"],
        ["fsdpcfg.env=[1,2]"],
        ["fsdpcfg.env=x"],
    ],
)
def test_check_and_the_dry_run_agree(overrides, tmp_path, monkeypatch):
    workdir = tmp_path / "w" / "x" / "y" / "z"
    workdir.mkdir(parents=True)
    monkeypatch.chdir(workdir)
    argv = ["+recipe=qwen_grpo", "launcher=verl", *overrides]
    assert P._verdicts(argv, argv) == 1  # both refuse, each with a message


def test_an_interpolation_written_on_the_command_line_is_judged_where_it_is_written(tmp_path, monkeypatch):
    """``rollout.agent.agent_loop_config_path=${data.max_prompt_length}`` under the native launcher: check left the
    key to the one it copies (a derived key), the run's gate refused it (FC802): the user wrote this key."""
    workdir = tmp_path / "w" / "x" / "y" / "z"
    workdir.mkdir(parents=True)
    monkeypatch.chdir(workdir)
    argv = ["+recipe=qwen_grpo", "actor_rollout_ref.rollout.agent.agent_loop_config_path=${data.max_prompt_length}"]
    assert P._verdicts(argv, argv) == 1


def test_a_verl_default_of_question_marks_set_again_is_left_to_verl(tmp_path, monkeypatch):
    """``reward.reward_model.rollout.name=???`` is verl's own default written again: check passed it and the export
    to verl refused it ("required value not set"); verl composes its own ``???`` as for any default it holds."""
    workdir = tmp_path / "w" / "x" / "y" / "z"
    workdir.mkdir(parents=True)
    monkeypatch.chdir(workdir)
    argv = ["+recipe=qwen_grpo", "launcher=verl", "reward.reward_model.rollout.name=???", "rollout=sglang"]
    P._verdicts(argv, argv)  # raises when check and the dry run disagree

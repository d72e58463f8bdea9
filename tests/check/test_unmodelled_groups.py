"""FC108: a group option fsdpcfg's tree does not model (one of verl's own groups, a group a ``hydra.searchpath``
package adds) is an info in a verl run script, which verl composes itself (the rest of the command still checked),
and an error for a config fsdpcfg composes and runs (the run would go without it)."""

from __future__ import annotations

import warnings
from pathlib import Path

from fsdpcfg.check import check_overrides
from fsdpcfg.check.sources import check_run_script

SCRIPT = """#!/usr/bin/env bash
python3 -m verl.trainer.main_ppo \\
    hydra.searchpath=[pkg://verl_mlite.config] \\
    actor@actor_rollout_ref.actor=mlite_actor \\
    algorithm.adv_estimator=grpo \\
    data.train_batch_size=60 \\
    actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct \\
    actor_rollout_ref.actor.ppo_mini_batch_size=16 \\
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 \\
    actor_rollout_ref.rollout.name=vllm \\
    actor_rollout_ref.rollout.n=5 \\
    trainer.n_gpus_per_node=8 trainer.nnodes=1
"""


def _found(findings, rules=("FC100", "FC101", "FC108", "FC201")):
    return sorted((f.rule, f.severity) for f in findings if f.rule in rules)


def test_a_searchpath_option_in_a_run_script_is_an_info_and_the_rest_is_checked(tmp_path: Path):
    p = tmp_path / "run.sh"
    p.write_text(SCRIPT)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Hydra warns that the searchpath package is not installed
        (checked,) = check_run_script(p, environ={})
    # the option is named as not checked; the batch of 60 x 5 over 8 ranks is still judged (FC201)
    assert _found(checked.findings) == [("FC108", "info"), ("FC201", "error")]
    info = next(f for f in checked.findings if f.rule == "FC108")
    assert "`actor@actor_rollout_ref.actor=mlite_actor`" in info.message
    assert "hydra.searchpath [pkg://verl_mlite.config]" in info.message


def test_verls_own_group_option_on_fsdpcfgs_command_line_is_an_error():
    found = check_overrides(["+recipe=qwen_grpo", "actor@actor_rollout_ref.actor=dp_actor"])
    assert _found(found) == [("FC108", "error")]
    (f,) = [f for f in found if f.rule == "FC108"]
    assert "one of verl's own config groups" in f.message and "would go without it" in f.message

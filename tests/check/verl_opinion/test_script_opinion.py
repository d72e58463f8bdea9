"""``fsdpcfg check --verl RUN_SCRIPT.sh``: verl's second opinion on a run script is asked with the script's own
override words, as verl's ``@hydra.main`` gets them (issue 20: a merged tree took a misspelt key that verl's Hydra
refuses, and the second opinion said verl accepts it)."""

from __future__ import annotations

import importlib.util

import pytest

from fsdpcfg.check.sources import check_run_script

ENV = {"HOME": "/home/user", "PATH": "/usr/bin"}

SCRIPT = """#!/usr/bin/env bash
set -x
NNODES=$(cat nnodes.txt)
python3 -m verl.trainer.main_ppo \\
    algorithm.adv_estimator=grpo \\
    data.train_batch_size=16 \\
    actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct \\
    actor_rollout_ref.actor.ppo_mini_batch_size=8 \\
    actor_rollout_ref.actor.ppo_micro_batch_size_pergpu=2 \\
    actor_rollout_ref.rollout.name=vllm \\
    actor_rollout_ref.rollout.n=4 \\
    trainer.nnodes=$NNODES \\
    trainer.n_gpus_per_node=8 "$@"
"""


def _job(tmp_path, text=SCRIPT, overrides=()):
    script = tmp_path / "run.sh"
    script.write_text(text)
    (result,) = check_run_script(script, overrides, environ=ENV)
    return result


def test_the_job_is_the_scripts_own_words_on_verls_config(tmp_path):
    result = _job(tmp_path, overrides=["trainer.total_epochs=2"])
    job, note = result.verl_job
    assert job["config_dir"] == "config" and job["config_name"] == "ppo_trainer" and job["kind"] == "ppo"
    # the misspelt key as written (no `+` the check's tree would need), the unknown value as verl's default (1)
    assert job["overrides"] == [
        "algorithm.adv_estimator=grpo",
        "data.train_batch_size=16",
        "actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct",
        "actor_rollout_ref.actor.ppo_mini_batch_size=8",
        "actor_rollout_ref.actor.ppo_micro_batch_size_pergpu=2",
        "actor_rollout_ref.rollout.name=vllm",
        "actor_rollout_ref.rollout.n=4",
        "trainer.nnodes=1",
        "trainer.n_gpus_per_node=8",
        "trainer.total_epochs=2",
    ]
    assert "trainer.nnodes" in note


def test_config_name_and_path_are_the_scripts(tmp_path):
    text = SCRIPT.replace("main_ppo \\", "main_ppo --config-name=ppo_megatron_trainer \\")
    job, _ = _job(tmp_path, text).verl_job
    assert (job["config_dir"], job["config_name"], job["composition"]) == (
        "config",
        "ppo_megatron_trainer",
        "ppo_megatron_trainer",
    )
    own = tmp_path / "conf"
    text = SCRIPT.replace("main_ppo \\", f"main_ppo --config-path={own} --config-name=mine.yaml \\")
    job, _ = _job(tmp_path, text).verl_job
    assert (job["config_dir"], job["config_name"]) == (str(own), "mine")


def test_an_unknown_config_path_is_not_asked(tmp_path):
    text = SCRIPT.replace("main_ppo \\", "main_ppo --config-path=$(cat conf_dir.txt) \\")
    job, note = _job(tmp_path, text).verl_job
    assert job is None and note.startswith("not asked: --config-path cannot be known")


@pytest.mark.verl
@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("verl") is None, reason="verl 0.9.1 is not installed")
def test_verl_refuses_the_misspelt_key_of_a_script(tmp_path):
    from fsdpcfg.check.verl_opinion import second_opinion, start_worker

    start_worker()  # verl's import runs while the script is checked (the process is kept for the module)
    result = _job(tmp_path)
    assert "FC101" in [f.rule for f in result.findings if f.severity == "error"]
    op = second_opinion([result])
    (row,) = op.to_json()
    assert row["accepted"] is False and row["stage"] == "compose" and row["outcome"] == "agree"
    assert "ppo_micro_batch_size_pergpu" in row["error"]
    # the same script spelt right: verl composes it (and a `+` key nothing reads is named as ignored)
    good = SCRIPT.replace("ppo_micro_batch_size_pergpu", "ppo_micro_batch_size_per_gpu")
    good = good.replace("trainer.nnodes=$NNODES", "+actor_rollout_ref.rollout.my_knob=1")
    (row,) = second_opinion([_job(tmp_path, good)]).to_json()
    assert row["stage"] != "compose", row
    assert "actor_rollout_ref.rollout.my_knob" in row["ignored_keys"]


#: a section set to a scalar or a list, and where verl 0.9.1 stops on it (None: it takes it at config time, and its
#: worker fails reading a key of the section: ``self.config.mtp.enable``, ``config.optim.lr``)
SECTIONS = {
    "actor_rollout_ref.model.lora=1": "validate_config",  # 'int' object has no attribute 'get'
    "actor_rollout_ref.rollout.val_kwargs=1": "validate_config",  # 'int' object has no attribute 'do_sample'
    "actor_rollout_ref.model.lora=[1]": "compose",  # Error merging override
    "actor_rollout_ref.actor.policy_loss=[1]": "compose",
    "actor_rollout_ref.rollout.mtp=1": None,
    "actor_rollout_ref.actor.optim=adam": None,
}


@pytest.mark.verl
@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("verl") is None, reason="verl 0.9.1 is not installed")
def test_verl_fails_on_a_section_set_to_a_scalar_or_list_and_check_reports_each(tmp_path):
    from _overrides_oracle_worker import VALID_ONE_GPU as base

    from fsdpcfg.check import check_overrides
    from fsdpcfg.check.verl_opinion import run_worker

    jobs = [
        {"kind": "ppo", "config_dir": "config", "config_name": "ppo_trainer", "overrides": [*base, o]} for o in SECTIONS
    ]
    for (override, stage), res in zip(SECTIONS.items(), run_worker(jobs)["results"], strict=True):
        assert res["stage"] == stage, (override, res)
        key = override.split("=", 1)[0]
        found = check_overrides(["+recipe=qwen_grpo", "launcher=verl", "rollout=vllm", override])
        assert any(f.rule == "FC103" and f.severity == "error" and key in f.keys for f in found), override

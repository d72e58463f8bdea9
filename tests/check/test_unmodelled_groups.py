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


CORPUS = Path(__file__).parent / "scripts"
ENV = {"HOME": "/home/user", "PATH": "/usr/bin"}


def test_the_keys_only_the_unmodelled_option_defines_are_named_not_checked_and_not_false_alarmed():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (checked,) = check_run_script(CORPUS / "mlite_actor.sh", environ=ENV)
    assert not [f for f in checked.findings if f.rule in ("FC101", "FC102", "FC105", "FC112", "FC113")]
    (info,) = [f for f in checked.findings if f.rule == "FC108"]
    assert info.severity == "info" and info.location == (str(CORPUS / "mlite_actor.sh"), 21)
    unchecked = [
        "actor_rollout_ref.actor.engine.tp",
        "actor_rollout_ref.actor.engine.ep",
        "actor_rollout_ref.actor.engine.pp",
        "actor_rollout_ref.actor.engine.param_offload",
        "actor_rollout_ref.actor.engine.optimizer_offload",
        "actor_rollout_ref.actor.engine.impl_cfg.use_thd",
        "actor_rollout_ref.actor.engine.impl_cfg.optimizer",
        "actor_rollout_ref.actor.optim.override_optimizer_config.offload_fraction",
    ]
    assert f"({', '.join(unchecked)})" in info.message
    assert checked.keys_unchecked == len(unchecked)
    # the actor's keys the tree has are still judged (and the section's engine layout is not guessed)
    assert checked.composed.cfg.actor_rollout_ref.actor.ppo_mini_batch_size == 8
    assert checked.composed.unmodelled == ("actor_rollout_ref.actor",)


def test_an_sft_engine_of_a_searchpath_package_is_an_info_with_its_optimizer_config():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (checked,) = check_run_script(CORPUS / "sft_mlite.sh", environ=ENV)
    assert not [f for f in checked.findings if f.severity != "info"]  # was FC100 "no option mlite"; no FC250
    engine, optim = sorted((f for f in checked.findings if f.rule == "FC108"), key=lambda f: "optim" in f.message)
    assert "`engine=mlite`" in engine.message and "(engine.pp, engine.ep, engine.cp, engine.impl_cfg.recompute)" in (
        engine.message
    )
    assert "`optim=megatron`" in optim.message and "the optimizer config of engine=mlite" in optim.message
    assert "(optim.override_optimizer_config.offload_fraction)" in optim.message
    # verl cannot be asked here: the package is not installed (it would say `Could not find`)
    job, note = checked.verl_job
    assert job is None and "pkg://verl_mlite.config is not installed here" in note


def test_without_a_searchpath_an_option_fsdpcfg_lacks_is_still_a_mistake(tmp_path: Path):
    p = tmp_path / "run.sh"
    p.write_text((CORPUS / "sft_mlite.sh").read_text().replace("    hydra.searchpath=[pkg://verl_mlite.config]\n", ""))
    (checked,) = check_run_script(p, environ=ENV)
    assert [(f.rule, f.severity) for f in checked.findings if f.severity == "error"] == [("FC100", "error")]

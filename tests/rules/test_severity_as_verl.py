"""Severity as verl 0.9.1 behaves (issue 20 item 7): ranges as verl reads them. A checkpoint count of 0 (or less)
keeps every checkpoint in verl, as ``null`` does, so it is no error, on either launcher; the chunked-prefill budget
and ``rollout.max_model_len`` are in tests/rules/test_engine_algo_traps.py, case c11 in tests/cases."""

from __future__ import annotations

import importlib.util

import pytest

from fsdpcfg.check import check_overrides

BASE = ["+recipe=qwen_grpo"]
KEEP = ("trainer.max_actor_ckpt_to_keep", "trainer.max_critic_ckpt_to_keep")


@pytest.mark.parametrize("launcher", ["native", "verl"])
@pytest.mark.parametrize("value", [0, -1])
def test_a_keep_count_of_zero_or_less_keeps_all_and_is_no_error(launcher, value):
    findings = check_overrides(BASE + [f"launcher={launcher}"] + [f"{k}={value}" for k in KEEP])
    assert not [(f.rule, f.message) for f in findings if f.severity == "error" and set(f.keys) & set(KEEP)]


def test_a_keep_count_the_native_launcher_does_not_run_is_still_reported():
    # a real limit on the critic's checkpoints is verl's only: the native launcher would keep them all (FC802)
    findings = check_overrides(BASE + ["trainer.max_critic_ckpt_to_keep=2"])
    assert [f.rule for f in findings if "trainer.max_critic_ckpt_to_keep" in f.keys] == ["FC802"]


@pytest.mark.slow
@pytest.mark.verl
@pytest.mark.skipif(importlib.util.find_spec("verl") is None, reason="verl 0.9.1 is not installed")
def test_verl_keeps_every_checkpoint_for_zero_or_less(tmp_path):
    from verl.utils.checkpoint.checkpoint_manager import BaseCheckpointManager

    class Saved:  # the state register_checkpoint reads, without a model
        previous_saved_paths: list[str] = []
        remove_previous_save_local_path = BaseCheckpointManager.remove_previous_save_local_path

    for keep in (0, -1, None):
        saved = Saved()
        saved.previous_saved_paths = []
        for step in range(3):
            d = tmp_path / f"keep{keep}" / f"global_step_{step}"
            d.mkdir(parents=True)
            BaseCheckpointManager.register_checkpoint(saved, str(d), keep)
        assert len(saved.previous_saved_paths) == 3 and all((tmp_path / f"keep{keep}").iterdir()), keep
    saved = Saved()
    saved.previous_saved_paths = []
    for step in range(3):
        d = tmp_path / "keep1" / f"global_step_{step}"
        d.mkdir(parents=True)
        BaseCheckpointManager.register_checkpoint(saved, str(d), 1)
    assert [p.name for p in (tmp_path / "keep1").iterdir()] == ["global_step_2"]  # a positive count prunes

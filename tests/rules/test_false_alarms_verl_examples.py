"""Findings that verl's own example scripts (v0.9.0) showed to be false alarms, written here in their style:
Ascend NPU runs with remove_padding/gradient checkpointing under verl, and on-policy distillation with one sample
per prompt. Each has its true positive beside it."""

from __future__ import annotations

from fsdpcfg.check import check_overrides

VERL = [
    "+recipe=qwen_grpo",
    "launcher=verl",
    "rollout=vllm",
    "trainer=gpu_8x",
    "data.train_batch_size=64",
    "actor_rollout_ref.actor.ppo_mini_batch_size=32",
]


def _rules(overrides, severity="error"):
    return sorted({f.rule for f in check_overrides(overrides) if f.severity == severity})


def test_npu_runs_remove_padding_and_gradient_checkpointing_under_verl():
    npu = VERL + ["trainer.device=npu"]
    assert "FC861" not in _rules(npu + ["patches=remove_padding"])
    assert "FC861" not in _rules(npu + ["patches=gradient_checkpointing"])
    # Liger's Triton kernels need CUDA on any launcher
    assert "FC861" in _rules(npu + ["patches=liger"])


def test_distillation_without_task_rewards_runs_one_sample_per_prompt():
    one = VERL + ["algorithm.adv_estimator=grpo", "actor_rollout_ref.rollout.n=1"]
    distill = ["distillation.enabled=true", "distillation.distillation_loss.use_task_rewards=false"]
    assert "FC601" in _rules(one)  # GRPO with n=1: no group baseline
    assert "FC601" not in _rules(one + distill)
    # with task rewards the GRPO advantage is used again: n=1 is still wrong
    assert "FC601" in _rules(one + ["distillation.enabled=true"])


def test_sft_logger_may_be_one_name_as_verls_tracking_takes():
    assert "FC150" not in _rules(["+recipe=qwen_sft", "trainer.logger=console"])
    assert "FC150" in _rules(["+recipe=qwen_sft", "trainer.logger=conso1e"])

"""The doctor's distributed stages on CUDA: one rank per GPU (at most 2). Two NCCL ranks cannot share one GPU
(rank 1's ``torch.cuda.set_device(1)`` is an invalid ordinal on a 1-GPU machine), so the smoke configs are built
for the world the machine has; on the CPU it stays 2 gloo ranks."""

from __future__ import annotations

import pytest

from fsdpcfg.compose import compose
from fsdpcfg.doctor import smoke
from fsdpcfg.errors import ConfigError
from fsdpcfg.plan import make_plan


def test_world_for_cpu_and_for_a_machine_without_cuda(monkeypatch):
    import torch

    assert smoke.world_for("cpu") == 2
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    with pytest.raises(ConfigError) as e:
        smoke.world_for("cuda")
    assert e.value.key == "trainer.device"
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert smoke.world_for("cuda") == 1
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 8)
    assert smoke.world_for("cuda") == 2


def test_one_gpu_smoke_configs_plan_one_nccl_rank(tmp_path, tiny_model_path):
    composed = compose(["+recipe=qwen_grpo", "trainer=gpu_1x", f"actor_rollout_ref.model.path={tiny_model_path}"])
    cfg = smoke.grpo_config(composed, smoke.Variant("fsdp2"), tmp_path, world=1)
    plan = make_plan(cfg)
    assert (plan.world_size, plan.device, plan.backend) == (1, "cuda", "nccl")
    assert plan.sequences_per_rank == 4  # 2 prompts x n=2 on the one rank
    sft = smoke.sft_config(composed.to_container(resolve=True), "fsdp", tmp_path, world=1)
    assert sft["trainer"]["n_gpus_per_node"] == 1 and sft["data"]["train_batch_size"] == 1
    cpu = smoke.grpo_config(
        compose(["+recipe=qwen_grpo", f"actor_rollout_ref.model.path={tiny_model_path}"]),
        smoke.Variant("fsdp2"),
        tmp_path,
    )
    assert make_plan(cpu).world_size == 2

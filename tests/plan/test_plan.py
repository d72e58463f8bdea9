"""The plan: verl's batch arithmetic, the backend, the torchrun command, and clear errors for sizes that do not
divide. Pure Python (no torch)."""

from __future__ import annotations

import copy
import sys

import pytest

from fsdpcfg.compose import compose
from fsdpcfg.errors import ConfigError
from fsdpcfg.plan import make_plan, total_training_steps


@pytest.fixture(scope="module")
def base_cfg():
    return compose(["+recipe=qwen_grpo"]).to_container()


def _with(cfg, **kv):
    cfg = copy.deepcopy(cfg)
    for dotted, v in kv.items():
        node = cfg
        *parents, leaf = dotted.split("__")
        for p in parents:
            node = node[p]
        node[leaf] = v
    return cfg


def test_qwen_grpo_plan(base_cfg):
    p = make_plan(base_cfg)
    # 4 prompts x n 4 = 16 sequences over 2 ranks; a mini-batch of 4 prompts = 16 sequences = 8 per rank;
    # micro 4 per rank -> 2 micro-batches per optimizer step; 4 / 4 x 1 epoch = 1 optimizer step per step
    assert (p.world_size, p.backend, p.strategy) == (2, "gloo", "fsdp2")
    assert (p.sequences_per_step, p.sequences_per_rank) == (16, 8)
    assert (p.mini_batch_per_rank, p.micro_batch_per_rank, p.grad_accum) == (8, 4, 2)
    assert p.optimizer_steps_per_step == 1
    assert p.use_reference  # grpo's use_kl_loss
    assert "16 = data.train_batch_size 4 x rollout.n 4" in p.describe()


def test_verl_batch_semantics_on_eight_gpus(base_cfg):
    cfg = _with(
        base_cfg,
        trainer__device="cuda",
        trainer__n_gpus_per_node=8,
        data__train_batch_size=64,
        actor_rollout_ref__rollout__n=8,
        actor_rollout_ref__actor__ppo_mini_batch_size=16,
        actor_rollout_ref__actor__ppo_micro_batch_size_per_gpu=2,
        actor_rollout_ref__actor__ppo_epochs=2,
    )
    p = make_plan(cfg)
    # 64 x 8 = 512 sequences, 64 per GPU; mini 16 x 8 / 8 = 16 per GPU; 16 / 2 = 8 micro-batches;
    # 64 / 16 x 2 epochs = 8 optimizer steps
    assert (p.backend, p.world_size, p.sequences_per_rank) == ("nccl", 8, 64)
    assert (p.mini_batch_per_rank, p.grad_accum, p.optimizer_steps_per_step) == (16, 8, 8)


def test_deprecated_global_micro_batch_is_divided_over_ranks(base_cfg):
    cfg = _with(
        base_cfg,
        actor_rollout_ref__actor__ppo_micro_batch_size_per_gpu=None,
        actor_rollout_ref__actor__ppo_micro_batch_size=4,  # must divide ppo_mini_batch_size 4 (FC205, verl's)
    )
    assert make_plan(cfg).micro_batch_per_rank == 2
    with pytest.raises(ConfigError, match=r"global actor_rollout_ref.actor.ppo_micro_batch_size = 8 must divide"):
        make_plan(_with(cfg, actor_rollout_ref__actor__ppo_micro_batch_size=8))


@pytest.mark.parametrize(
    "kv,key,numbers",
    [
        ({"actor_rollout_ref__actor__ppo_mini_batch_size": 3}, "actor_rollout_ref.actor.ppo_mini_batch_size", "4"),
        (
            {"actor_rollout_ref__actor__ppo_micro_batch_size_per_gpu": 3},
            "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",
            "8",
        ),
        (
            {
                "data__train_batch_size": 3,
                "actor_rollout_ref__rollout__n": 1,
                "actor_rollout_ref__actor__ppo_mini_batch_size": 1,
            },
            "data.train_batch_size",
            "3",
        ),
        ({"trainer__device": "tpu"}, "trainer.device", "tpu"),
        ({"trainer__device": "npu"}, "trainer.device", "trainer.device=npu is not implemented by the native launcher"),
        ({"actor_rollout_ref__actor__use_dynamic_bsz": True}, "actor_rollout_ref.actor.use_dynamic_bsz", "dynamic"),
        (
            {"algorithm__use_kl_in_reward": True, "algorithm__kl_ctrl__type": "adaptive"},
            "algorithm.kl_ctrl.type",
            "adaptive",
        ),
        (
            {"actor_rollout_ref__rollout__log_prob_micro_batch_size_per_gpu": None},
            "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu",
            "is set and actor_rollout_ref.rollout.log_prob_use_dynamic_bsz is false (FC203)",
        ),
    ],
)
def test_sizes_that_do_not_divide_are_config_errors(base_cfg, kv, key, numbers):
    with pytest.raises(ConfigError) as e:
        make_plan(_with(base_cfg, **kv))
    assert e.value.key == key
    assert numbers in str(e.value)


def test_total_training_steps(base_cfg):
    assert total_training_steps(base_cfg, 100) == 5  # trainer.total_training_steps set by the recipe
    cfg = _with(base_cfg, trainer__total_training_steps=None, trainer__total_epochs=3)
    assert total_training_steps(cfg, 10) == 3 * (10 // 4)  # the last partial batch is dropped
    with pytest.raises(ConfigError, match="fewer than one batch"):
        total_training_steps(cfg, 3)


def test_plan_imports_no_torch():
    import subprocess

    code = "import sys, fsdpcfg.plan; assert 'torch' not in sys.modules"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0

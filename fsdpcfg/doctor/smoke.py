"""The small configs the distributed stages run: the user's run, shrunk to a smoke test, one per engine/variant.

GRPO (stages 4-5): the user's composed config with batch sizes shrunk (2 prompts x 2 samples, 8 response tokens, micro
batches of 2), 2 steps, 2 ranks on the CPU (one per GPU, at most 2, on CUDA: :func:`world_for`), the run and checkpoint
folders in the doctor's work folder, and ``actor_rollout_ref.actor.strategy`` (hence ref/rollout strategies, which
interpolate it) set to the variant's engine, and the reward replaced by :mod:`fsdpcfg.doctor.smoke_reward` (scores with
spread, so that the update has a gradient). Everything else (model, trust_remote_code, external_lib, patches, dtypes,
wrap policy, rollout, algorithm, optimizer) stays as the user configured it.

SFT (stage 3): the shipped ``qwen_sft`` recipe (verl's sft_trainer_engine layout) with the run's model settings
(path, tokenizer, remote code, external_lib, chat template, LoRA, gradient checkpointing) and engine settings
(strategy, dtypes, wrap policy, fsdp_size) copied over, 2 conversations per step, 2 steps.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from omegaconf import OmegaConf

#: ranks of the distributed stages on the CPU (FSDP only shards, and the weight stream only gathers, with more than
#: one rank); on CUDA one rank per visible GPU, at most this many (:func:`world_for`).
WORLD = 2
STEPS = 2
#: GRPO sizes (sequences): 2 prompts x n=2 = 4 sequences per step, 2 per rank, one micro-batch each.
GRPO_SIZES: dict[str, Any] = {
    "data.train_batch_size": 2,
    "data.max_response_length": 8,
    "data.train_max_samples": 8,
    "data.val_files": None,
    "actor_rollout_ref.rollout.n": 2,
    "actor_rollout_ref.actor.ppo_mini_batch_size": 2,
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": 2,
    "actor_rollout_ref.actor.ppo_epochs": 1,
    "actor_rollout_ref.actor.use_dynamic_bsz": False,
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu": 2,
    "actor_rollout_ref.rollout.log_prob_use_dynamic_bsz": False,
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu": 2,
    "actor_rollout_ref.ref.log_prob_use_dynamic_bsz": False,
    "trainer.total_training_steps": STEPS,
    "trainer.save_freq": -1,
    "trainer.resume_mode": "disable",
    "trainer.nnodes": 1,
    "trainer.val_before_train": False,
    "trainer.test_freq": -1,
    "trainer.max_actor_ckpt_to_keep": None,
    "reward.custom_reward_function.path": str(Path(__file__).with_name("smoke_reward.py")),
    "reward.custom_reward_function.name": "compute_score",
}
#: model keys copied from ``actor_rollout_ref.model`` into the SFT tree's ``model``.
_SFT_MODEL_KEYS = (
    "path",
    "tokenizer_path",
    "trust_remote_code",
    "custom_chat_template",
    "external_lib",
    "override_config",
    "enable_gradient_checkpointing",
    "lora_rank",
    "lora_alpha",
    "target_modules",
    "exclude_modules",
)
_SFT_ENGINE_KEYS = ("dtype", "model_dtype", "reshard_after_forward", "fsdp_size", "wrap_policy")
LORA_RANK = 8


@dataclass
class Variant:
    """One engine configuration of the distributed stages: ``engine`` (fsdp/fsdp2) and ``lora`` (force a LoRA
    actor of rank :data:`LORA_RANK` on top of the config; a config that already sets ``lora_rank`` keeps it)."""

    engine: str
    lora: bool = False

    @property
    def name(self) -> str:
        return self.engine + ("+lora" if self.lora else "")

    @classmethod
    def parse(cls, text: str) -> Variant:
        """``fsdp2`` or ``fsdp2+lora`` -> Variant.

        Raises:
            fsdpcfg.errors.UsageError: anything else.
        """
        from fsdpcfg.errors import UsageError

        engine, _, extra = text.partition("+")
        if engine not in ("fsdp", "fsdp2") or extra not in ("", "lora"):
            raise UsageError(f"unknown variant {text!r}", fix="use fsdp, fsdp2, fsdp+lora or fsdp2+lora")
        return cls(engine, extra == "lora")


def world_for(device: str) -> int:
    """Ranks of the distributed stages on ``device``: :data:`WORLD` on the CPU (gloo runs any number of ranks on
    one machine); on CUDA ``min(WORLD, torch.cuda.device_count())``, since NCCL needs one GPU per rank (two ranks
    on one GPU fail: ``set_device(1)`` is an invalid ordinal on a 1-GPU machine) and a 1-rank FSDP still runs.

    Raises:
        fsdpcfg.errors.ConfigError: ``cuda`` on a machine where torch sees no CUDA device.
    """
    if device != "cuda":
        return WORLD
    import torch

    n = torch.cuda.device_count()
    if n < 1:
        from fsdpcfg.errors import ConfigError

        raise ConfigError(
            "trainer.device = cuda, but torch sees no CUDA device here",
            key="trainer.device",
            value=device,
            fix="run the doctor on a GPU machine, or with trainer=cpu",
        )
    return min(WORLD, n)


def _set(tree: Any, key: str, value: Any) -> None:
    OmegaConf.update(tree, key, value, merge=False, force_add=True)


def grpo_config(composed, variant: Variant, work: Path, world: int = WORLD) -> dict[str, Any]:
    """The resolved GRPO smoke config of ``variant`` (plain dicts) for ``world`` ranks, checked by the native plan.

    Raises:
        ConfigError: the shrunk config cannot be planned (reported at stage 0).
    """
    from fsdpcfg.plan import make_plan

    tree = copy.deepcopy(composed.cfg)
    folder = work / f"grpo-{variant.name}"
    for key, value in GRPO_SIZES.items():
        _set(tree, key, value)
    _set(tree, "trainer.n_gpus_per_node", world)
    _set(tree, "actor_rollout_ref.actor.strategy", variant.engine)
    _set(tree, "trainer.default_local_dir", str(folder / "ckpt"))
    _set(tree, "fsdpcfg.run_dir", str(folder))
    if variant.lora and not (OmegaConf.select(tree, "actor_rollout_ref.model.lora_rank") or 0):
        _set(tree, "actor_rollout_ref.model.lora_rank", LORA_RANK)
    cfg = cast("dict[str, Any]", OmegaConf.to_container(tree, resolve=True))  # a DictConfig gives a str-keyed dict
    make_plan(cfg)
    return cfg


def sft_config(ppo_cfg: dict[str, Any], engine: str, work: Path, world: int = WORLD) -> dict[str, Any]:
    """The resolved SFT smoke config for ``engine`` on ``world`` ranks, built from the run's resolved ``ppo_cfg``.

    Raises:
        ConfigError: the SFT recipe cannot be composed or planned.
    """
    from fsdpcfg.check.key_advice import KEY_ADVICE
    from fsdpcfg.compose import compose
    from fsdpcfg.plan.sft import make_sft_plan

    cfg = compose(["+recipe=qwen_sft"], keys=KEY_ADVICE).to_container(resolve=True)
    arr = ppo_cfg["actor_rollout_ref"]
    for k in _SFT_MODEL_KEYS:
        cfg["model"][k] = copy.deepcopy(arr["model"][k])
    fsdp = arr["actor"]["fsdp_config"]
    for k in _SFT_ENGINE_KEYS:
        cfg["engine"][k] = copy.deepcopy(fsdp[k])
    cfg["engine"]["strategy"] = engine
    cfg["data"].update(
        train_batch_size=world, micro_batch_size_per_gpu=1, train_max_samples=4 * world, use_dynamic_bsz=False
    )
    folder = work / f"sft-{engine}"
    cfg["trainer"].update(
        total_training_steps=STEPS,
        save_freq=-1,
        nnodes=1,
        n_gpus_per_node=world,
        device=ppo_cfg["trainer"]["device"],
        default_local_dir=str(folder / "ckpt"),
        resume_mode="disable",
    )
    cfg["fsdpcfg"]["run_dir"] = str(folder)
    make_sft_plan(cfg)
    return cfg

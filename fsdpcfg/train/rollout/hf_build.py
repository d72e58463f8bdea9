"""The ``hf`` rollout backend's builder, registered in :data:`fsdpcfg.native.backends.ROLLOUTS`: the GRPO loop
calls it once, after the actor is sharded, for its rollout and the weight sync a LoRA replica needs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fsdpcfg.train.model import load_model, to_dtype
from fsdpcfg.train.rollout.hf import HFRollout

if TYPE_CHECKING:
    from fsdpcfg.train.loop import Trainer


def build_hf_rollout(trainer: Trainer) -> tuple[HFRollout, Any]:
    """``(rollout, lora_sync)`` for ``trainer``: an unsharded replica of the policy in
    ``actor_rollout_ref.rollout.dtype`` on the trainer's device (weights arrive by the first sync), or under LoRA
    (``trainer.lora``) the PEFT replica and its :class:`fsdpcfg.train.lora.rollout.LoraWeightSync` (``None``
    otherwise)."""
    rdtype = to_dtype(trainer.rollout_cfg.dtype)
    eos = trainer._eos_ids()
    if trainer.lora is not None:  # a PEFT replica: the base once, then the adapter (fsdpcfg/train/lora)
        from fsdpcfg.train.lora.rollout import build_lora_rollout

        return build_lora_rollout(
            trainer.actor,
            trainer.model_cfg,
            trainer.lora,
            rdtype,
            eos,
            trainer.tokenizer.pad_token_id,
            trainer.device,
            float(trainer.cfg.fsdpcfg.update_weights_bucket_megabytes),
        )
    replica = load_model(trainer.model_cfg, rdtype, weights=False, device=trainer.device)
    return HFRollout(replica, rdtype, eos, trainer.tokenizer.pad_token_id), None

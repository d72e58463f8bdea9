"""AdamW and the learning-rate schedule of ``actor_rollout_ref.actor.optim``, as verl 0.9.1 builds them
(``verl/workers/engine/fsdp/transformer_impl.py``, ``verl/utils/torch_functional.py``)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Union

import torch
from torch.optim.lr_scheduler import LambdaLR

if TYPE_CHECKING:
    from fsdpcfg.schema.actor import Optim
    from fsdpcfg.schema.sft import SftOptim

#: the optimizer section: ``actor_rollout_ref.actor.optim`` (GRPO) or ``optim`` (SFT)
OptimCfg = Union["Optim", "SftOptim"]


def build_optimizer(params, optim_cfg: OptimCfg) -> torch.optim.Optimizer:
    """AdamW with ``lr``, ``betas``, ``weight_decay`` from ``optim_cfg`` (``actor_rollout_ref.actor.optim``, SFT
    ``optim``): the one optimizer of the native trainers (``optimizer=AdamW``, declared in
    :mod:`fsdpcfg.native.support`, rule FC803)."""
    beta1, beta2 = optim_cfg.betas  # the schema holds exactly two (min_length = max_length = 2)
    return torch.optim.AdamW(
        params,
        lr=float(optim_cfg.lr),
        betas=(float(beta1), float(beta2)),
        weight_decay=float(optim_cfg.weight_decay),
    )


def warmup_steps(optim_cfg: OptimCfg, total_steps: int) -> int:
    """``lr_warmup_steps`` when > 0, else ``int(lr_warmup_steps_ratio x total_steps)`` (verl's rule)."""
    steps = optim_cfg.lr_warmup_steps
    if steps is None or steps <= 0:
        steps = int(float(optim_cfg.lr_warmup_steps_ratio) * total_steps)
    return int(steps)


def lr_lambda(optim_cfg: OptimCfg, total_steps: int):
    """Return the multiplier of the base lr as a function of the 0-indexed optimizer step.

    ``constant``: linear warmup from 0 over the warmup steps, then 1. ``cosine``: the same warmup, then
    ``max(min_lr_ratio, c cos(2 pi num_cycles progress) + i)`` with ``c = (1 - min_lr_ratio) / 2`` and
    ``i = (1 + min_lr_ratio) / 2``.
    """
    warm = warmup_steps(optim_cfg, total_steps)
    kind = optim_cfg.lr_scheduler_type
    if kind == "constant":
        return lambda step: float(step) / float(max(1, warm)) if step < warm else 1.0
    # cosine: the schema's literal (constant, cosine) leaves no other kind
    mn = float(optim_cfg.min_lr_ratio or 0.0)
    cycles = float(optim_cfg.num_cycles)
    coef, intercept = (1 - mn) * 0.5, (1 + mn) * 0.5

    def cosine(step: int) -> float:
        if step < warm:
            return float(step) / float(max(1, warm))
        progress = float(step - warm) / float(max(1, total_steps - warm))
        return max(mn, math.cos(math.pi * cycles * 2.0 * progress) * coef + intercept)

    return cosine


def build_scheduler(optimizer: torch.optim.Optimizer, optim_cfg: OptimCfg, total_steps: int) -> LambdaLR:
    """The ``LambdaLR`` of :func:`lr_lambda`; ``total_steps`` counts optimizer steps of the whole run
    (verl sets ``optim.total_training_steps`` to the trainer's step count)."""
    return LambdaLR(optimizer, lr_lambda(optim_cfg, total_steps))

"""The ``gradient_checkpointing`` patch's declaration (activation checkpointing of every decoder layer); the
implementation is :mod:`fsdpcfg.train.patches.gradient_checkpointing`."""

from __future__ import annotations

from fsdpcfg.patches.registry import Patch

PATCH = Patch(
    name="gradient_checkpointing",
    title="activation checkpointing of every decoder layer (recompute in backward)",
    targets=("decoder_layer.checkpoint",),
    config_key="actor_rollout_ref.model.enable_gradient_checkpointing",
    is_on=bool,
    model_types=None,
    impls={"*": "fsdpcfg.train.patches.gradient_checkpointing:apply"},
    source="verl/workers/engine/fsdp/transformer_impl.py (gradient_checkpointing_enable, use_reentrant=False)",
)

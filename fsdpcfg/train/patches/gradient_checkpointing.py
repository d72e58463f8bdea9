"""``gradient_checkpointing``: activation checkpointing of every decoder layer
(``actor_rollout_ref.model.enable_gradient_checkpointing``).

As verl does (``verl/workers/engine/fsdp/transformer_impl.py`` ``_build_module``): Hugging Face's
``gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})`` on the unsharded
model, before FSDP wraps it. Non-reentrant checkpointing recomputes each layer's forward during backward and
gives the same gradients (tests/train/patches/test_gradient_checkpointing.py). It only acts in ``train()`` mode.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fsdpcfg.errors import ConfigError

if TYPE_CHECKING:
    from transformers import PreTrainedModel


def apply(model: PreTrainedModel) -> None:
    """Enable non-reentrant gradient checkpointing on ``model`` (an unsharded HF ``PreTrainedModel``).

    Raises:
        ConfigError: the model class does not support gradient checkpointing (names its model_type).
    """
    if not getattr(model, "supports_gradient_checkpointing", False):
        raise ConfigError(
            f"gradient_checkpointing: {type(model).__name__} (model_type "
            f"{getattr(model.config, 'model_type', '?')!r}) does not support gradient checkpointing",
            key="actor_rollout_ref.model.enable_gradient_checkpointing",
            fix="set actor_rollout_ref.model.enable_gradient_checkpointing=false (patches=none)",
        )
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})

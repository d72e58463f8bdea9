"""Model-level patch sets (the ``patches=`` group): selection from the config, application. The declarations
(names, targets, model types, launchers) are :mod:`fsdpcfg.patches` (torch-free), re-exported here.

Public API::

    REGISTRY                      # PatchRegistry of the built-in patches (fsdpcfg.patches)
    selected(cfg) -> list[str]    # names the resolved config turns on (verl's keys)
    problems(names, model_type=, device=, launcher=) -> list[Problem]   # shared by rules and engine
    apply_patches(model, names, device=, launcher=)                      # the engine, before sharding
    is_packed(module) -> bool     # the engine forward's switch for remove_padding

Implementations: :mod:`.remove_padding`, :mod:`.gradient_checkpointing` (applied by the native engine); ``liger``
and ``ulysses`` are passed to verl. A patch is dispatched from the model's ``config.json`` ``model_type``.
Importing this package imports neither torch nor transformers. With every patch off the model is the plain padded
Hugging Face model, untouched (tests/train/patches).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from fsdpcfg.errors import ConfigError
from fsdpcfg.patches import REGISTRY, Patch, PatchConflict, PatchRegistry, Problem, target_conflicts
from fsdpcfg.train.patches.remove_padding import is_packed

if TYPE_CHECKING:
    from pydantic import BaseModel
    from transformers import PreTrainedModel

__all__ = [
    "REGISTRY",
    "Patch",
    "PatchConflict",
    "PatchRegistry",
    "Problem",
    "apply_patches",
    "is_packed",
    "problems",
    "selected",
    "target_conflicts",
]


def _getter(cfg: dict | BaseModel) -> Any:
    from pydantic import BaseModel

    if isinstance(cfg, BaseModel):
        from fsdpcfg.schema import attr_path

        return lambda key: attr_path(cfg, key)
    from fsdpcfg import keypath

    return lambda key: keypath.get(cfg, key, None)


def selected(cfg: dict | BaseModel) -> list[str]:
    """Names of the patches a config turns on, in registry order: the typed config of a trainer
    (:class:`fsdpcfg.schema.RunConfig`) or a resolved config as nested dicts (the start-up audit, the doctor)."""
    return REGISTRY.selected(_getter(cfg))


def problems(
    names: Iterable[str], *, model_type: str | None, device: str | None, launcher: str | None
) -> list[Problem]:
    """Everything that keeps ``names`` from running (see :meth:`PatchRegistry.problems`)."""
    return REGISTRY.problems(names, model_type=model_type, device=device, launcher=launcher)


def apply_patches(model: PreTrainedModel, names: Iterable[str], *, device: str, launcher: str = "native") -> list[str]:
    """Apply the patches ``names`` to the unsharded HF ``model`` (before FSDP wraps it), dispatched on
    ``model.config.model_type``; with no names the model is left exactly as loaded.

    Returns:
        The names applied, in registry order.

    Raises:
        ConfigError: every problem of the selection at once (unknown patch, unsupported model_type, device,
            launcher, missing required patch, target conflict), or a patch whose apply function refuses this
            model instance.
    """
    names = [n for n in REGISTRY.names() if n in set(names)] + [n for n in names if n not in REGISTRY]
    model_type = getattr(model.config, "model_type", None)
    found = problems(names, model_type=model_type, device=device, launcher=launcher)
    if found:
        first = found[0]
        key = REGISTRY[first.patch].config_key if first.patch in REGISTRY else "actor_rollout_ref.model"
        raise ConfigError("; ".join(p.message for p in found), key=key, fix="; ".join(p.fix for p in found))
    for n in names:
        fn = REGISTRY[n].impl_for(model_type)
        if fn is None:  # declared but run by another launcher only: problems() already refused it
            raise ConfigError(
                f"patch {n!r} has no native implementation", key=REGISTRY[n].config_key, fix="use launcher=verl"
            )
        fn(model)
    return names

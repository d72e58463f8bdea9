"""The declarations of the model-level patch sets (the ``patches=`` group): names, targets, config keys, model
types, devices and launchers. Torch-free: the rules (FC36x/FC86x) read them, the engine applies them
(:mod:`fsdpcfg.train.patches`, the implementations).

Public API::

    REGISTRY        # PatchRegistry of the built-in patches (one declaration module each, below)
    Patch, PatchRegistry, PatchConflict, Problem, target_conflicts   # see :mod:`.registry`

Patches: :mod:`.remove_padding`, :mod:`.gradient_checkpointing` (applied by the native engine), :mod:`.liger`
and :mod:`.ulysses` (passed to verl). Importing this package imports neither torch nor transformers.
"""

from __future__ import annotations

from fsdpcfg.patches import gradient_checkpointing, liger, remove_padding, ulysses
from fsdpcfg.patches.registry import Patch, PatchConflict, PatchRegistry, Problem, target_conflicts

__all__ = ["REGISTRY", "Patch", "PatchConflict", "PatchRegistry", "Problem", "target_conflicts"]

REGISTRY = PatchRegistry([remove_padding.PATCH, gradient_checkpointing.PATCH, liger.PATCH, ulysses.PATCH])

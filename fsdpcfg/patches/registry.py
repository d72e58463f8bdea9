"""The patch registry: declarations of model-level patches, target claims, and what a selection needs.

Pattern: torchtitan's override registry (``torchtitan/config/override.py``): a component replaced by name is
registered once, and two registrations claiming the same target are rejected. Here a *target* is the part of
the model (or of the engine's forward) a patch changes, for example ``"decoder_layer.checkpoint"``.

Nothing here imports torch or transformers: ``fsdpcfg check`` (rules FC36x/FC86x) reads the declarations, and
the engine applies them at launch (:func:`fsdpcfg.train.patches.apply_patches`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any


class PatchConflict(ValueError):
    """Two patches claim the same target (or one name is registered twice); the message names both."""


@dataclass(frozen=True)
class Patch:
    """One model-level patch, as the ``patches=`` group option of the same name selects it.

    Attributes:
        name: the option name (``conf/patches/<name>.yaml``), e.g. ``remove_padding``.
        title: one line saying what it does.
        targets: what it changes, e.g. ``("decoder_layer.checkpoint",)``; disjoint between patches.
        config_key: the verl key that turns it on (``actor_rollout_ref.model.use_remove_padding``).
        is_on: ``value of config_key -> bool``.
        model_types: config.json ``model_type`` values it supports; ``None``: any causal LM (the apply
            function checks the model instance and raises ConfigError naming the model_type when it cannot).
        devices: ``trainer.device`` values the native loop runs it on.
        verl_devices: ``trainer.device`` values verl runs it on (launcher=verl: verl's own implementation; verl's
            Ascend examples use remove_padding, gradient checkpointing and Ulysses on ``npu``).
        launchers: ``fsdpcfg.launcher`` values that run it (``verl`` only: passed to verl, never applied here).
        requires: other patches it needs (``ulysses`` needs ``remove_padding``).
        requires_checked_by: the rule that already reports a missing requirement (no duplicate finding).
        packages: importable modules it needs at run time (checked at apply time, never imported by a check).
        impls: ``model_type`` (or ``"*"``) -> ``"module:function"`` applying it to a loaded model; empty for
            patches the native engine does not run.
        source: where its semantics come from.
    """

    name: str
    title: str
    targets: tuple[str, ...]
    config_key: str
    is_on: Callable[[Any], bool]
    model_types: frozenset[str] | None = None
    devices: tuple[str, ...] = ("cpu", "cuda")
    verl_devices: tuple[str, ...] = ("cuda", "npu")
    launchers: tuple[str, ...] = ("native", "verl")
    requires: tuple[str, ...] = ()
    requires_checked_by: str | None = None
    packages: tuple[str, ...] = ()
    impls: dict[str, str] = field(default_factory=dict)
    source: str = ""

    def supports(self, model_type: str | None) -> bool:
        """True when the patch declares support for ``model_type`` (any type when ``model_types`` is None)."""
        return self.model_types is None or (model_type in self.model_types)

    def impl_for(self, model_type: str | None) -> Callable[..., Any] | None:
        """The apply function for ``model_type`` (its own entry, else ``"*"``), imported now; ``None`` when
        the native engine has no implementation."""
        spec = self.impls.get(model_type or "", self.impls.get("*"))
        if spec is None:
            return None
        mod, fn = spec.split(":")
        return getattr(importlib.import_module(mod), fn)


@dataclass(frozen=True)
class Problem:
    """Why a selection cannot run: ``kind`` is one of ``unknown``, ``conflict``, ``model_type``, ``device``,
    ``launcher``, ``requires``; ``patch`` the patch concerned; ``message`` and ``fix`` for a person."""

    kind: str
    patch: str
    message: str
    fix: str


def target_conflicts(patches: Iterable[Patch]) -> list[tuple[str, str, str]]:
    """``(target, first_patch, second_patch)`` for every target claimed by two of ``patches``."""
    owner: dict[str, str] = {}
    out = []
    for p in patches:
        for t in p.targets:
            if t in owner and owner[t] != p.name:
                out.append((t, owner[t], p.name))
            owner.setdefault(t, p.name)
    return out


class PatchRegistry:
    """Patches by name; each target has at most one claimant.

    Raises (``register``):
        PatchConflict: the name is taken, or a target is already claimed (the message names both patches).
    """

    def __init__(self, patches: Iterable[Patch] = ()) -> None:
        self._patches: dict[str, Patch] = {}
        for p in patches:
            self.register(p)

    def register(self, patch: Patch) -> Patch:
        """Add ``patch``; return it."""
        if patch.name in self._patches:
            raise PatchConflict(f"patch {patch.name!r} is registered twice")
        for target, first, second in target_conflicts([*self._patches.values(), patch]):
            raise PatchConflict(
                f"patches {first!r} and {second!r} both claim the target {target!r}; "
                "a target may be patched by one patch only"
            )
        self._patches[patch.name] = patch
        return patch

    def __getitem__(self, name: str) -> Patch:
        return self._patches[name]

    def __contains__(self, name: object) -> bool:
        return name in self._patches

    def __iter__(self):
        return iter(self._patches.values())

    def names(self) -> list[str]:
        """Registered names, in registration order."""
        return list(self._patches)

    def selected(self, get: Callable[[str], Any]) -> list[str]:
        """Names of the patches the config turns on; ``get(key)`` returns a config value (or None)."""
        return [p.name for p in self if p.is_on(get(p.config_key))]

    def problems(
        self,
        names: Iterable[str],
        *,
        model_type: str | None,
        device: str | None,
        launcher: str | None,
        extra: Iterable[Patch] = (),
    ) -> list[Problem]:
        """Everything that keeps the selection ``names`` (plus ``extra`` patches from elsewhere, e.g. another
        registry) from running on ``model_type`` / ``device`` / ``launcher``. ``None`` skips that check."""
        out: list[Problem] = []
        chosen: list[Patch] = []
        for n in names:
            if n not in self:
                out.append(
                    Problem(
                        "unknown",
                        n,
                        f"unknown patch {n!r}; known: {', '.join(self.names())}",
                        f"choose one of {', '.join(self.names())}",
                    )
                )
            else:
                chosen.append(self[n])
        chosen += list(extra)
        for target, first, second in target_conflicts(chosen):
            out.append(
                Problem(
                    "conflict",
                    second,
                    f"patches {first!r} and {second!r} both claim the target {target!r}",
                    f"select only one of {first}, {second}",
                )
            )
        have = {p.name for p in chosen}
        for p in chosen:
            if model_type is not None and not p.supports(model_type):
                out.append(
                    Problem(
                        "model_type",
                        p.name,
                        f"patch {p.name!r} does not support model_type "
                        f"{model_type!r} (it supports: {', '.join(sorted(p.model_types or ()))})",
                        f"turn it off ({p.config_key}=false), or use a model of a supported type",
                    )
                )
            devices = p.verl_devices if launcher == "verl" else p.devices
            if device is not None and device not in devices:
                who = "verl runs" if launcher == "verl" else "runs"
                out.append(
                    Problem(
                        "device",
                        p.name,
                        f"patch {p.name!r} {who} on {' or '.join(devices)} only, not on trainer.device={device}",
                        f"turn it off ({p.config_key}={_off(p)}), or run on {devices[0]}",
                    )
                )
            if launcher is not None and launcher not in p.launchers:
                out.append(
                    Problem(
                        "launcher",
                        p.name,
                        f"patch {p.name!r} is run by launcher="
                        f"{' or '.join(p.launchers)} only, not by launcher={launcher}",
                        f"use launcher={p.launchers[0]}, or turn it off ({p.config_key}={_off(p)})",
                    )
                )
            for r in p.requires:
                if r not in have:
                    out.append(
                        Problem(
                            "requires",
                            p.name,
                            f"patch {p.name!r} needs patch {r!r}",
                            f"turn on {self[r].config_key if r in self else r}",
                        )
                    )
        return out


def _off(p: Patch) -> str:
    return "1" if p.config_key.endswith("_size") else "false"

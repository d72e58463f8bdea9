"""The value kinds verl's config dataclasses declare for each key, read from their annotations at build time.

verl turns each config section that has a ``_target_`` (``verl.workers.config.FSDPActorConfig``,
``verl.trainer.config.AlgoConfig`` ...) into that dataclass (``verl/utils/config.py`` ``omega_conf_to_dataclass``),
and the annotation is the type verl means: ``rollout_is_threshold: str | float = 2.0`` takes ``"0.5_4.0"``, which
a check by the default's type alone would refuse. :func:`field_kinds` walks verl's composed tree, follows each
``_target_`` (and the nested dataclasses its fields name) and records, per dotted leaf key, the JSON kinds its
annotation admits: ``bool``, ``int``, ``float``, ``str``, ``list``, ``dict``, ``null``, or ``any``.

:func:`absent_fields` lists the fields of those dataclasses that verl's YAML leaves out
(``actor_rollout_ref.actor.fsdp_config.mixed_precision``, ``critic.optim.grad_clip`` ...): ``omega_conf_to_dataclass``
takes them, so a user adds them with ``+``.

Used by :func:`fsdpcfg.verlref.build_reference` (which imports verl); reading the result needs neither verl nor
torch (:func:`fsdpcfg.verlref.value_kinds`, :func:`fsdpcfg.verlref.fields`).
"""

from __future__ import annotations

import dataclasses
import importlib
import types
import typing
from typing import Any

_SCALARS = {bool: "bool", int: "int", float: "float", str: "str", type(None): "null"}


def _kinds(ann: Any) -> tuple[set[str], Any]:
    """``(kinds, nested dataclass or None)`` of one annotation."""
    if ann is Any or isinstance(ann, (str, typing.TypeVar)):  # Any, or an annotation left unevaluated
        return {"any"}, None
    origin = typing.get_origin(ann)
    if origin is typing.Annotated:
        return _kinds(typing.get_args(ann)[0])
    if origin in (typing.Union, types.UnionType):
        kinds: set[str] = set()
        nested = None
        for a in typing.get_args(ann):
            k, n = _kinds(a)
            kinds |= k
            nested = nested or n
        return kinds, nested
    if origin is typing.Literal:
        return {_SCALARS.get(type(v), "any") for v in typing.get_args(ann)}, None
    if ann in _SCALARS:
        return {_SCALARS[ann]}, None
    base = origin or ann
    if isinstance(base, type):
        if issubclass(base, (list, tuple, set, frozenset)):
            return {"list"}, None
        if issubclass(base, dict):
            return {"dict"}, None
        if dataclasses.is_dataclass(base):
            return {"dict"}, base
    return {"any"}, None


def _target_class(node: dict[str, Any]) -> type | None:
    target = node.get("_target_")
    if not isinstance(target, str) or "." not in target:
        return None
    module, _, name = target.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), name)
    except Exception:  # a target verl cannot import here (an optional backend): its keys keep the default's type
        return None
    return cls if isinstance(cls, type) and dataclasses.is_dataclass(cls) else None


def field_kinds(tree: dict[str, Any]) -> dict[str, list[str]]:
    """``{dotted leaf key: sorted kinds}`` for every leaf of ``tree`` (verl's composed config as nested dicts) that
    a verl config dataclass declares. Keys no dataclass declares (plain sections, free mappings) are left out.

    Raises:
        ImportError: verl is not importable (its dataclasses are read).
    """
    out: dict[str, list[str]] = {}

    def visit(node: dict[str, Any], prefix: str, cls: type | None) -> None:
        cls = _target_class(node) or cls
        hints: dict[str, Any] = {}
        if cls is not None:
            try:
                hints = typing.get_type_hints(cls)
            except Exception:  # an annotation that names a type verl imports only when its backend is present
                hints = {f.name: f.type for f in dataclasses.fields(cls)}
            names = {f.name for f in dataclasses.fields(cls)}
            hints = {k: v for k, v in hints.items() if k in names}
        for k, v in node.items():
            key = f"{prefix}{k}"
            ann = hints.get(k) if isinstance(k, str) else None
            kinds, nested = _kinds(ann) if k in hints else (set(), None)
            if isinstance(v, dict) and v:
                visit(v, key + ".", nested)
            elif kinds:
                out[key] = sorted(kinds)

    visit(tree, "", None)
    return out


def absent_fields(tree: dict[str, Any]) -> tuple[dict[str, list[str]], list[str]]:
    """The fields of verl's config dataclasses that ``tree`` (verl's composed config as nested dicts) leaves out,
    and the sections verl's config dataclasses hold.

    Returns:
        ``({dotted key: sorted kinds}, sorted dotted sections)``: for each section that is a config dataclass (a
        ``_target_``, or a field its parent's dataclass annotates with one: ``actor_rollout_ref.actor.qat`` is a
        ``QATConfig``), its ``__init__`` fields (not ``_``-prefixed) that the section does not list; and those
        sections, whose keys are the dataclass's fields (a dict-typed field of the same name elsewhere, such as
        ``RolloutConfig.qat``, leaves its keys free). One level: the fields of a nested dataclass that is itself
        left out are not listed.

    Raises:
        ImportError: verl is not importable (its dataclasses are read).
    """
    out: dict[str, list[str]] = {}
    sections: list[str] = []

    def visit(node: dict[str, Any], prefix: str, nested: type | None) -> None:
        cls = _target_class(node) or nested
        hints: dict[str, Any] = {}
        if cls is not None:
            sections.append(prefix[:-1])
            try:
                hints = typing.get_type_hints(cls)
            except Exception:  # an annotation that names a type verl imports only when its backend is present
                hints = {f.name: f.type for f in dataclasses.fields(cls)}
            for f in dataclasses.fields(cls):
                if f.init and not f.name.startswith("_") and f.name not in node:
                    out[f"{prefix}{f.name}"] = sorted(_kinds(hints.get(f.name, f.type))[0])
        for k, v in node.items():
            if isinstance(v, dict) and v:
                sub = _kinds(hints[k])[1] if isinstance(k, str) and k in hints else None
                visit(v, f"{prefix}{k}.", sub if isinstance(sub, type) and dataclasses.is_dataclass(sub) else None)

    visit(tree, "", None)
    return out, sorted(s for s in sections if s)

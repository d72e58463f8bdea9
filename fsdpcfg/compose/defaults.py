"""The one home of every default: the config a run gets when nothing is overridden.

A run always starts from a composed tree (:func:`fsdpcfg.compose.compose`): verl's own composition first
(:mod:`fsdpcfg.compose.verl_base`, verl's defaults), then ``conf/config.yaml`` (``conf/sft/config.yaml`` for
the SFT tree) and the group options its defaults list picks. So the default of a key *is* its value in
``compose([])`` (``compose([], kind="sft")``), and every place that states a default reads it from here or is
tested equal to it (``tests/catalog/test_one_default.py``): ``fsdpcfg explain`` (:mod:`fsdpcfg.catalog.keyinfo`),
``fsdpcfg show`` (the same composition), the JSON Schema's ``default`` (:mod:`fsdpcfg.catalog.schema_files`),
the Pydantic field defaults of :mod:`fsdpcfg.schema` and the deliberate differences from verl's defaults that
``docs/reference.md`` lists (:mod:`fsdpcfg.catalog.deliberate_defaults`).

Where a schema field default legitimately differs: a key the tree leaves ``???`` (``actor_rollout_ref.model.path``,
``data.train_files``) is required, so the field has no default; a key the tree does not hold (a verl key of
another engine, a ``+key`` of verl's dataclasses) keeps the field's default, which then is verl's
(:func:`fsdpcfg.schema._base.V`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from types import MappingProxyType
from typing import Any

#: What the tree writes for a value that must be set (Hydra's missing marker).
MISSING = "???"


#: Resolvers whose value depends on the machine (:mod:`fsdpcfg.compose.resolvers`: the fsdpcfg home, the installed
#: package's data folder, the newest checkpoint): a default written with one is stated as written.
MACHINE_RESOLVERS = ("fsdpcfg_home", "fsdpcfg_data", "fsdpcfg_pkg", "fsdpcfg_latest")
_REFERENCE = re.compile(r"\$\{(?:oc\.select:)?([A-Za-z_][\w.]*)")


@cache
def _rows(kind: str) -> dict[str, tuple[Any, Any, str]]:
    from fsdpcfg.compose import compose
    from fsdpcfg.compose.flat import rows

    return {r.key: (r.value, r.value if r.raw is None else r.raw, r.source) for r in rows(compose([], kind=kind))}


@cache
def _machine_keys(kind: str) -> frozenset[str]:
    """Keys whose default is written with a machine resolver, or copies (``${key}``) such a key."""
    raw = {k: v[1] for k, v in _rows(kind).items()}
    out: set[str] = set()
    changed = True
    while changed:
        changed = False
        for k, v in raw.items():
            if k in out or not isinstance(v, str) or "${" not in v:
                continue
            refs = _REFERENCE.findall(v)
            if any(f"${{{r}:" in v for r in MACHINE_RESOLVERS) or any(r in out for r in refs):
                out.add(k)
                changed = True
    return frozenset(out)


def machine_dependent(key: str, kind: str = "ppo") -> bool:
    """True when the default of ``key`` resolves differently per machine (a path under the fsdpcfg home or the
    package, :data:`MACHINE_RESOLVERS`): its default is stated as written (``${fsdpcfg_data:...}``)."""
    return key in _machine_keys(kind)


def tree(kind: str = "ppo") -> Mapping[str, Any]:
    """Return ``{dotted key: default}`` for every leaf of the ``kind`` tree's default config (``ppo`` or
    ``sft``): the value ``fsdpcfg show`` prints (interpolations resolved; ``"???"`` for a value that must be
    set), except that a machine-dependent value (:func:`machine_dependent`) is given as written. Composed once
    per process (about half a second); the mapping is read-only.

    Raises:
        KeyError: ``kind`` is not one of :data:`fsdpcfg.paths.KINDS`.
    """
    return MappingProxyType(_tree(kind))


@cache
def _tree(kind: str) -> dict[str, Any]:
    machine = _machine_keys(kind)
    return {k: (raw if k in machine else value) for k, (value, raw, _) in _rows(kind).items()}


def resolved_tree(kind: str = "ppo") -> Mapping[str, Any]:
    """Return the defaults as this machine resolves them (machine-dependent paths too): ``fsdpcfg show``'s values."""
    return MappingProxyType({k: v[0] for k, v in _rows(kind).items()})


def raw_tree(kind: str = "ppo") -> Mapping[str, Any]:
    """Return the defaults as written (``${...}`` interpolations kept), keyed as :func:`tree`."""
    return MappingProxyType({k: v[1] for k, v in _rows(kind).items()})


def default(key: str, kind: str = "ppo") -> Any:
    """Return the default of dotted leaf ``key`` in the ``kind`` tree, as :func:`tree` states it.

    Raises:
        KeyError: the tree has no such leaf.
    """
    return _tree(kind)[key]


def source(key: str, kind: str = "ppo") -> str:
    """Return where the default of ``key`` is written (``conf/config.yaml:42``, ``trainer=cpu (...)``, ``verl
    0.9.1 default``), as ``fsdpcfg show`` prints it.

    Raises:
        KeyError: the tree has no such leaf.
    """
    return _rows(kind)[key][2]


def is_set(value: Any) -> bool:
    """True unless ``value`` is the missing marker ``???`` (a value that must be set has no default)."""
    return not (isinstance(value, str) and value == MISSING)

"""The one walker of dotted keys (``"actor_rollout_ref.actor.ppo_epochs"``) over plain nested dicts.

Semantics, the same for every caller:

- a key is split on ``"."``; each part indexes a ``dict`` (a part is never an index into a list: a list, like any
  other non-dict value, is a leaf, and a key that goes below a leaf is *missing*);
- :func:`get` returns ``default`` for a missing key and raises ``KeyError(key)`` when no default is given; a
  key whose value is ``None`` (YAML ``null``) is *present* and returns ``None``;
- :func:`set` creates the missing parent dicts (``setdefault``) and overwrites the leaf; it raises
  ``TypeError`` when a parent on the way is not a dict (it never replaces a value by a section);
- :func:`delete` removes the leaf and returns whether it was there (missing: ``False``, no error);
- :func:`flatten` turns nested dicts into ``{dotted key: leaf}``: lists and empty dicts are leaves;
  :func:`unflatten` is its inverse.

``DictConfig`` trees are walked by ``OmegaConf.select``/``OmegaConf.update``, not here (they resolve
interpolations and know ``???``).
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping
from typing import Any

MISSING: Any = object()
"""The default of :func:`get`'s ``default``: raise ``KeyError`` on a missing key."""


def get(tree: Any, key: str, default: Any = MISSING) -> Any:
    """Return ``tree[a][b][c]`` for ``key="a.b.c"``.

    Returns ``default`` when a part is missing or a value on the way is not a dict; a ``None`` value is returned
    as ``None`` (present). Raises ``KeyError(key)`` for a missing key when no ``default`` is given.
    """
    node = tree
    for part in key.split("."):
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        else:
            if default is MISSING:
                raise KeyError(key)
            return default
    return node


def has(tree: Any, key: str) -> bool:
    """True when dotted ``key`` is present in ``tree`` (a ``None`` value counts as present)."""
    return get(tree, key, _ABSENT) is not _ABSENT


_ABSENT: Any = object()


def set(tree: dict[str, Any], key: str, value: Any) -> None:  # noqa: A001 - the walker's verb
    """Set dotted ``key`` of ``tree`` to ``value``, creating missing parent dicts.

    Raises:
        TypeError: a parent on the way holds a value that is not a dict.
    """
    *parents, leaf = key.split(".")
    node = tree
    for part in parents:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise TypeError(f"cannot set {key}: {part} holds {type(node).__name__}, not a section")
    node[leaf] = value


def delete(tree: dict[str, Any], key: str) -> bool:
    """Remove dotted ``key`` from ``tree``; return whether it was there (a missing key is not an error)."""
    parent, _, leaf = key.rpartition(".")
    node = get(tree, parent, None) if parent else tree
    if isinstance(node, dict) and leaf in node:
        del node[leaf]
        return True
    return False


def flatten(tree: Any, prefix: str = "") -> dict[str, Any]:
    """Flatten nested dicts into ``{dotted key: leaf}``; lists, empty dicts and non-dict values are leaves
    (a non-dict ``tree`` gives ``{prefix: tree}``)."""
    if isinstance(tree, dict) and tree:
        out: dict[str, Any] = {}
        for k, v in tree.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: tree}


def unflatten(items: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """Build nested dicts from ``{dotted key: value}`` (or pairs), the inverse of :func:`flatten`.

    Raises:
        TypeError: a key lies below another key's non-dict value.
    """
    out: dict[str, Any] = {}
    for k, v in items.items() if isinstance(items, Mapping) else items:
        set(out, k, v)
    return out


def prefixes(keys: Iterable[str]) -> builtins.set[str]:
    """Every proper dotted prefix of ``keys`` (the sections above the leaves): ``a.b.c`` gives ``a``, ``a.b``."""
    out: builtins.set[str] = builtins.set()
    for k in keys:
        p = k.split(".")
        out.update(".".join(p[:i]) for i in range(1, len(p)))
    return out


def targets(tree: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """Every ``_target_`` in ``tree`` (nested dicts, and dicts inside lists, as Hydra's ``instantiate`` walks them)
    as ``(dotted key of the _target_, its value)``; a list item's part is its index (``hydra.callbacks.log._target_``,
    ``a.handlers.0._target_``). Built on :func:`flatten`, each list's items flattened in turn."""
    out: list[tuple[str, Any]] = []
    todo: list[tuple[str, Any]] = [(prefix, tree)]
    while todo:
        base, node = todo.pop(0)
        for key, value in flatten(node, base).items():
            if key == "_target_" or key.endswith("._target_"):
                out.append((key, value))
            elif isinstance(value, list):
                todo += [(f"{key}.{i}" if key else str(i), item) for i, item in enumerate(value)]
    return out

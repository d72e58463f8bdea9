"""Flatten a composed config into rows of (key, value, source) and print them.

Values are resolved one key at a time, so one unresolvable interpolation or a ``???`` value shows as it
is written instead of failing the whole listing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml
from omegaconf import DictConfig, ListConfig, OmegaConf

if TYPE_CHECKING:
    from fsdpcfg.compose import Composed

#: Shown for a value that is missing on one side of a diff.
ABSENT = "(absent)"


@dataclass(frozen=True)
class Row:
    """One leaf of a config.

    Attributes:
        key: dotted key.
        value: the resolved value (plain Python), or the raw text when it cannot be resolved.
        raw: the value as written (``${...}`` kept) when it differs from ``value``, else ``None``.
        source: where the value came from (``file:line``, ``group=option (file:line)``, command line).
    """

    key: str
    value: Any
    raw: Any = None
    source: str = ""


def _leaves(node: Any, prefix: str) -> Iterable[tuple[str, Any]]:
    if isinstance(node, DictConfig) and len(node) > 0:
        for k in node.keys():
            yield from _leaves(node._get_node(k), f"{prefix}.{k!s}" if prefix else str(k))
    else:
        yield prefix, node


def _value(cfg: DictConfig, key: str, node: Any) -> tuple[Any, Any]:
    raw = (
        OmegaConf.to_container(node, resolve=False)
        if isinstance(node, (DictConfig, ListConfig))
        else node._value()
        if hasattr(node, "_value")
        else node
    )
    try:  # a ``???`` value or a broken interpolation raises: show it as written
        got = OmegaConf.select(cfg, key, throw_on_missing=True)
        val = OmegaConf.to_container(got, resolve=True) if isinstance(got, (DictConfig, ListConfig)) else got
    except Exception:
        return raw, None
    return val, (raw if raw != val else None)


def rows(composed: Composed, prefix: str | None = None) -> list[Row]:
    """Return one :class:`Row` per leaf of ``composed.cfg`` (lists and empty mappings are leaves; an
    interpolation that resolves to a section gives that section's leaves), in the config's key order;
    ``prefix`` keeps only keys equal to it or under it."""
    cfg = composed.cfg
    out: list[Row] = []
    for key, node in _leaves(cfg, ""):
        if prefix and not (key == prefix or key.startswith(prefix + ".")):
            continue
        val, raw = _value(cfg, key, node)
        src = composed.provenance.source_of(key)
        shown = str(src) if src is not None else ""
        if isinstance(val, dict) and val and raw is not None:
            # an interpolation that copies a section (verl's ``mtp: ${oc.select:actor_rollout_ref.model.mtp,
            # null}``): its leaves, as a dumped config holds them
            from fsdpcfg.verlref import flatten

            out.extend(Row(k, v, None, shown) for k, v in flatten(val, key).items())
            continue
        out.append(Row(key, val, raw, shown))
    return out


def flat(composed: Composed) -> dict[str, Any]:
    """Return ``{dotted key: resolved value}`` for every leaf (unresolvable values as written)."""
    return {r.key: r.value for r in rows(composed)}


def format_value(value: Any) -> str:
    """Render a leaf value the way YAML writes it inline (``null``, ``true``, ``[a, b]``, ``{}``, ``'n'``)."""
    text = yaml.safe_dump(value, default_flow_style=True, width=1_000_000, allow_unicode=True).strip()
    if text.endswith("..."):
        text = text[:-3].rstrip()
    return text


def table(header: list[str], body: list[list[str]], max_width: int = 40) -> str:
    """Format ``body`` under ``header`` as left-aligned columns. The first column is as wide as its widest
    cell; the middle columns are capped at ``max_width`` (a longer cell pushes only its own row)."""
    n = len(header)
    widths = [max([len(header[i])] + [len(r[i]) for r in body]) for i in range(n)]
    widths = [w if i == 0 else min(w, max_width) for i, w in enumerate(widths)]
    lines = []
    for r in [header, *body]:
        line = ""
        for i, c in enumerate(r):
            target = sum(widths[:i]) + 2 * i
            if i and len(line) < target:
                line = line.ljust(target)
            elif i:
                line += "  "
            line += c
        lines.append(line.rstrip())
    return "\n".join(lines)


def rows_table(items: list[Row]) -> str:
    """Format rows as aligned ``KEY  VALUE  SOURCE`` columns; an interpolated value's source ends with
    the expression as written (``from ${...}``)."""
    body = []
    for r in items:
        src = r.source + (f"  from {format_value(r.raw)}" if r.raw is not None else "")
        body.append([r.key, format_value(r.value), src])
    return table(["KEY", "VALUE", "SOURCE"], body)


def rows_yaml(items: list[Row]) -> str:
    """Format rows as nested YAML with each leaf's source as an end-of-line comment."""
    lines: list[str] = []
    opened: list[str] = []
    for r in items:
        parts = r.key.split(".")
        common = 0
        while common < min(len(opened), len(parts) - 1) and opened[common] == parts[common]:
            common += 1
        opened = opened[:common]
        for depth in range(common, len(parts) - 1):
            lines.append("  " * depth + f"{_yaml_key(parts[depth])}:")
            opened.append(parts[depth])
        leaf = "  " * (len(parts) - 1) + f"{_yaml_key(parts[-1])}: {format_value(r.value)}"
        note = r.source + (f"; written {format_value(r.raw)}" if r.raw is not None else "")
        lines.append(f"{leaf}  # {note}" if note else leaf)
    return "\n".join(lines)


def _yaml_key(k: str) -> str:
    return format_value(k)


def rows_json(items: list[Row], choices: dict[str, str] | None = None) -> str:
    """Format rows as JSON: ``{"choices": {...}, "config": {nested}, "provenance": {key: source}}``."""
    from fsdpcfg import keypath

    tree = keypath.unflatten((r.key, r.value) for r in items)
    doc = {"choices": choices or {}, "config": tree, "provenance": {r.key: r.source for r in items}}
    return json.dumps(doc, indent=2, default=str)

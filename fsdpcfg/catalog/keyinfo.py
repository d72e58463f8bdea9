"""Everything known about one config key, from the single sources that hold it.

* type, allowed values, range and description: the Pydantic models (via their JSON Schema, the same text
  editors show);
* the default: the composed default tree (:mod:`fsdpcfg.compose.defaults`: what a run gets when nothing is
  overridden, ``fsdpcfg show``'s value), for the RL tree and the SFT tree;
* verl's default: :mod:`fsdpcfg.verlref` (the pinned verl release's own config);
* where the tree sets it: the YAML files of ``conf/`` and ``recipes/`` (file:line);
* the rules that read it: ``RULES[...].keys`` of the rule table;
* whether the native launcher implements it: :mod:`fsdpcfg.native.support`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from fsdpcfg import paths, verlref
from fsdpcfg.compose import defaults

_UNSET = object()


@dataclass
class KeyInfo:
    """What ``fsdpcfg explain KEY`` prints.

    Attributes:
        key: the dotted key.
        kind: ``schema`` (modelled), ``verl`` (verl knows it, the schema does not), ``free`` (inside a free-form
            mapping), ``legacy``, ``section`` (a mapping of keys) -- see :func:`fsdpcfg.schema.keys.classify`.
        description: the schema field's description ("" when not modelled).
        type: the value type in words (``integer, >= 1``).
        allowed: the literal values the schema accepts (empty when any value of the type is fine).
        default: the default of the RL (``ppo``) tree (:mod:`fsdpcfg.compose.defaults`); for a key the tree does
            not hold, the schema's (``_UNSET`` when the key is required or neither knows it).
        default_source: where that default is written (``conf/config.yaml:199``, ``trainer=cpu (...)``);
            ``schema`` for the schema's default, ``""`` when there is none.
        sft_default: the default of the SFT tree when it holds the key (``_UNSET`` otherwise).
        verl_default: verl's default as written (``_UNSET`` when verl does not know the key).
        set_in: ``file:line`` of every tree file that sets the key, root config first.
        rules: ``(rule ID, title)`` of every rule that reads the key.
        native: why the native launcher does not implement it, the values it runs, or how it implements it,
            else ``None``.
        children: for a section, ``(child key, description)`` of its direct members.
        parent: for an entry of a free-form mapping, the mapping's key.
    """

    key: str
    kind: str
    description: str = ""
    type: str = ""
    allowed: list[Any] = field(default_factory=list)
    default: Any = _UNSET
    default_source: str = ""
    sft_default: Any = _UNSET
    verl_default: Any = _UNSET
    set_in: list[str] = field(default_factory=list)
    rules: list[tuple[str, str]] = field(default_factory=list)
    native: str | None = None
    children: list[tuple[str, str]] = field(default_factory=list)
    parent: str | None = None

    @staticmethod
    def has(value: Any) -> bool:
        """True unless ``value`` is the "no default" marker."""
        return value is not _UNSET


@cache
def _strict_schema() -> dict[str, Any]:
    from fsdpcfg.schema import RunConfig

    return RunConfig.model_json_schema()


def _deref(node: dict[str, Any]) -> dict[str, Any]:
    doc = _strict_schema()
    refs = [node] + node.get("allOf", [])
    for n in refs:
        if "$ref" in n:
            return doc["$defs"][n["$ref"].rsplit("/", 1)[1]]
    return node


def schema_node(key: str) -> dict[str, Any] | None:
    """Return the JSON Schema property of dotted ``key`` (a section's property resolved to its model)."""
    node: dict[str, Any] = _strict_schema()
    for part in key.split("."):
        props = _deref(node).get("properties", {})
        if part not in props:
            return None
        node = props[part]
    return node


def type_text(prop: dict[str, Any]) -> str:
    """Describe a JSON Schema property's type in words (``integer, >= 1``; ``string or null``)."""
    if "anyOf" in prop:
        return " or ".join(dict.fromkeys(type_text(p) for p in prop["anyOf"]))
    if "const" in prop:
        return f"the constant {prop['const']!r}"
    t = prop.get("type", "object" if "properties" in prop or "$ref" in prop else "any")
    t = " or ".join(t) if isinstance(t, list) else t
    if t == "array" and "items" in prop:
        t = f"list of {type_text(prop['items'])}"
    if t == "object" and prop.get("additionalProperties") not in (None, False):
        t = "mapping"
    bounds = [
        f"{op} {prop[k]}"
        for k, op in (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="), ("exclusiveMaximum", "<"))
        if k in prop
    ]
    return ", ".join([t, *bounds])


@cache
def _tree_lines() -> list[tuple[str, dict[str, int]]]:
    from fsdpcfg.catalog.tree import all_options, kinds, recipes
    from fsdpcfg.compose.provenance import yaml_leaf_lines

    files: list[Path] = [paths.conf_dir(k) / "config.yaml" for k in kinds()] + [o.path for o in all_options()]
    files += [r.path for r in recipes()]
    root = paths.REPO_DIR
    out = []
    for f in files:
        try:
            shown = str(f.resolve().relative_to(root))
        except ValueError:
            shown = str(f)
        out.append((shown, yaml_leaf_lines(f)))
    return out


def set_in(key: str) -> list[str]:
    """Return ``file:line`` of every config-tree file (root config, group options, recipes) that sets ``key``."""
    return [f"{name}:{lines[key]}" for name, lines in _tree_lines() if key in lines]


def rules_reading(key: str) -> list[tuple[str, str]]:
    """Return ``(rule ID, title)`` of the rules whose ``keys`` include ``key``, by ID."""
    from fsdpcfg.check import load_rule_modules
    from fsdpcfg.rules.registry import RULES

    load_rule_modules()
    return sorted((r.id, r.title) for r in RULES.values() if key in r.keys)


def all_keys() -> list[str]:
    """Every key and section ``explain`` knows (schema, verl, tree), for did-you-mean."""
    from fsdpcfg.schema import keys

    pool = set(keys.suggestion_pool())
    for _, lines in _tree_lines():
        pool.update(lines)
    return sorted(pool)


def key_info(key: str) -> KeyInfo | None:
    """Return what is known about ``key``, or ``None`` when nothing (schema, verl, tree) knows it."""
    from fsdpcfg.schema import keys

    kind = keys.classify(key)
    where = set_in(key)
    in_tree = any(key in defaults.tree(k) for k in ("ppo", "sft"))
    if kind in ("unknown", "conflict") and not where and not in_tree:
        return None
    node = schema_node(key)
    info = KeyInfo(key, kind, set_in=where, rules=rules_reading(key))
    raw_verl = verlref.defaults(resolved=False)
    raw_sft = verlref.defaults("sft_trainer_engine", resolved=False)
    if key in raw_verl:
        info.verl_default = raw_verl[key]
    elif key in raw_sft:
        info.verl_default = raw_sft[key]
    if node is not None:
        model = _deref(node)
        info.description = node.get("description") or model.get("description", "")
        if "properties" in model:
            info.kind = "section"
            info.children = [(f"{key}.{k}", v.get("description", "")) for k, v in model.get("properties", {}).items()]
        else:
            info.type = type_text(node)
            info.allowed = keys.allowed_values(key)
            if key not in defaults.tree("ppo"):
                try:
                    info.default, info.default_source = keys.schema_default(key), "schema"
                except KeyError:
                    pass
    elif kind == "verl" and key not in raw_verl:
        info.kind = "section"
        info.children = [(k, "") for k in sorted(raw_verl) if k.startswith(key + ".") and "." not in k[len(key) + 1 :]]
    if info.kind != "section":
        for tree_kind in ("ppo", "sft"):
            tree = defaults.tree(tree_kind)
            if key not in tree:
                continue
            value = tree[key] if defaults.is_set(tree[key]) else _UNSET
            if tree_kind == "ppo":
                info.default, info.default_source = value, defaults.source(key, tree_kind)
            else:
                info.sft_default = value
    if info.kind == "free":
        info.parent = keys.known_parent(key)
    info.native = _native_text(key)
    return info


def _native_text(key: str) -> str | None:
    """What the native launcher does with ``key`` (:mod:`fsdpcfg.native.support`), or ``None`` when undeclared."""
    from fsdpcfg.native import support

    if key in support.NATIVE_UNSUPPORTED:
        return f"not implemented by the native launcher ({support.NATIVE_UNSUPPORTED[key]}); use launcher=verl"
    if key in support.NATIVE_VALUES:
        when = support.NATIVE_WHEN.get(key)
        only = f" (with {when[0]}={str(when[1]).lower()})" if when is not None else ""
        return f"the native launcher runs only{only}: " + ", ".join(map(str, support.NATIVE_VALUES[key]))
    feature = support.feature_of(key)
    if isinstance(feature, support.Native) and feature.note:
        return f"implemented by the native launcher: {feature.note}"
    return None

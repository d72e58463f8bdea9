"""Resolve a composed config without raising: the keys whose interpolation fails are left out and named, and the
keys that copy another key through an interpolation are named (the checker reports a bad value once, where it
was written; the schema counts it once)."""

from __future__ import annotations

import re
from typing import Any

from omegaconf import OmegaConf

from fsdpcfg import keypath, verlref
from fsdpcfg.errors import ConfigError

#: resolvers whose ``${...}`` values are paths, not copies of another key.
_VALUE_RESOLVERS = ("${fsdpcfg_", "${oc.env", "${oc.decode")


def resolve(composed: Any, raw: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, str], frozenset[str]]:
    """Resolve the composed config without raising. ``raw``: the config as plain containers, interpolations kept
    (``composed.to_container(resolve=False)``), when the caller has it already.

    Returns:
        (config as nested dicts, {key: why its interpolation failed} (those keys are left out),
        keys whose value copies another key through an interpolation).
    """
    if raw is None:
        raw = OmegaConf.to_container(composed.cfg, resolve=False)  # type: ignore[assignment]
    flat = verlref.flatten(raw)
    prov = getattr(composed, "provenance", None)
    derived = frozenset(
        k
        for k, v in flat.items()
        if isinstance(v, str)
        and v.startswith("${")
        and not v.startswith(_VALUE_RESOLVERS)
        and not _written_on_the_command_line(prov, k)
    )
    try:
        return composed.to_container(resolve=True), {}, derived
    except ConfigError:
        pass
    failed: dict[str, str] = {}
    out: dict[str, Any] = {}
    for key, value in flat.items():
        if isinstance(value, str) and "${" in value or isinstance(value, list):
            try:
                node = OmegaConf.select(composed.cfg, key, throw_on_resolution_failure=True)
                value = OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node
            except Exception as e:
                failed[key] = f"{value!r} cannot be resolved: {str(e).strip().splitlines()[0]}"
                continue
        _set(out, key, value)
    # a key that copies a broken key is left out too, but only the broken key is reported
    roots = {k: why for k, why in failed.items() if _target(flat.get(k)) not in failed}
    return out, roots or failed, derived


def _written_on_the_command_line(prov: Any, key: str) -> bool:
    """True when the command line set ``key`` (``key=${other}``): the user chose the key, so the rules judge it
    where it is written, as the launch's own checks (fsdpcfg.rules.gate, on the resolved values) do."""
    src = prov.source_of(key) if prov is not None else None
    return src is not None and src.kind == "override"


#: ``${oc.select:KEY,DEFAULT}`` whose default is a list or a mapping.
_SELECT_CONTAINER_DEFAULT = re.compile(r"^\$\{oc\.select:\s*([^,}]+?)\s*,\s*[\[{]")
_ABSENT = object()


def container_defaults_taken(cfg: Any) -> dict[str, str]:
    """``{key: KEY}`` for each value ``${oc.select:KEY,[...]}`` (or ``{...}``) of the composed ``cfg`` whose KEY
    is missing, so that it takes its list or mapping default. ``OmegaConf.to_container`` resolves it; verl's
    in-place ``OmegaConf.resolve`` (verl/trainer/main_ppo.py ``TaskRunner.run``) cannot put a resolver's list or
    dict in place of the interpolation and raises ``UnsupportedValueType``: verl 0.9.1's own YAML holds such values
    (``actor_rollout_ref.rollout.profiler.tool_config.npu.contents``), so ``~actor_rollout_ref.actor.profiler``
    stops a verl run before it starts."""
    out: dict[str, str] = {}
    for key, value in verlref.flatten(OmegaConf.to_container(cfg, resolve=False)).items():
        m = _SELECT_CONTAINER_DEFAULT.match(value) if isinstance(value, str) else None
        if m and OmegaConf.select(cfg, m.group(1), default=_ABSENT, throw_on_resolution_failure=False) is _ABSENT:
            out[key] = m.group(1)
    return out


def _target(raw: Any) -> str | None:
    m = re.match(r"^\$\{(?:oc\.select:)?([^,}:]+)", raw) if isinstance(raw, str) else None
    return m.group(1).strip() if m else None


def _set(tree: dict[str, Any], key: str, value: Any) -> None:
    keypath.set(tree, key, value)

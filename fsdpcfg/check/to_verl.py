"""The translation of a composed config into verl's own tree: what ``fsdpcfg export`` and ``launcher=verl`` write
(:mod:`fsdpcfg.launch.verl`) and what the second opinion hands verl (:mod:`fsdpcfg.check.verl_opinion`).

:func:`verl_tree` gives the config in verl's key names, the ``fsdpcfg`` section removed, fsdpcfg's resolvers
resolved and plain references between verl keys kept; :func:`verl_composition` names verl's composition it
extends and :func:`verl_defaults_list` the defaults list a YAML on top of that composition starts with.

Reads the composed config only; imports neither verl nor torch.
"""

from __future__ import annotations

import re
from typing import Any

from fsdpcfg import keypath, verlref
from fsdpcfg.errors import ConfigError

#: fsdpcfg config kind -> verl entry-point config name (see :data:`fsdpcfg.verlref.ENTRY_POINTS`).
KIND_TO_VERL_CONFIG = {"ppo": "ppo_trainer", "sft": "sft_trainer_engine"}

_INTERP = re.compile(r"\$\{([^}]*)\}")


def verl_config_name(kind: str) -> str:
    """Return verl's entry-point config name for an fsdpcfg config ``kind``.

    Raises:
        ConfigError: ``kind`` is neither ``ppo`` nor ``sft``.
    """
    try:
        return KIND_TO_VERL_CONFIG[kind]
    except KeyError:
        raise ConfigError(
            f"config kind `{kind}` has no verl entry point",
            key="fsdpcfg.kind",
            value=kind,
            fix=f"use one of: {', '.join(KIND_TO_VERL_CONFIG)}",
        ) from None


def _keep_interpolation(text: str, known: frozenset[str]) -> bool:
    """True when every ``${...}`` in ``text`` is a plain reference verl can resolve itself: relative
    (``${.x}``) or an absolute verl key. Resolver calls (``${fsdpcfg_data:...}``, ``${oc.env:...}``) and
    references into the ``fsdpcfg`` section are resolved by fsdpcfg instead."""
    refs = _INTERP.findall(text)
    if not refs:
        return False
    for ref in refs:
        if ":" in ref or "$" in ref:
            return False
        if ref.startswith("."):
            continue
        if ref.startswith("fsdpcfg") or ref not in known:
            return False
    return True


def _merge_raw(raw: Any, resolved: Any, known: frozenset[str]) -> Any:
    if isinstance(raw, dict):
        return {
            k: _merge_raw(v, resolved.get(k) if isinstance(resolved, dict) else None, known) for k, v in raw.items()
        }
    if isinstance(raw, list):
        res = resolved if isinstance(resolved, list) and len(resolved) == len(raw) else [None] * len(raw)
        return [_merge_raw(a, b, known) for a, b in zip(raw, res, strict=True)]
    if isinstance(raw, str) and "${" in raw and _keep_interpolation(raw, known):
        return raw
    return resolved


def _drop_unlisted_nulls(tree: Any, known: frozenset[str], prefix: str) -> Any:
    """Remove ``null`` values of keys verl's YAML does not list (and mappings left empty by that).

    verl reads such keys with ``config.get(name, default)``: a key present with ``null`` returns ``None``
    instead of verl's default. Example: ``fsdp_config.wrap_policy.transformer_layer_cls_to_wrap: null`` would
    make ``verl.utils.fsdp_utils.get_fsdp_wrap_policy`` skip the model's ``_no_split_modules`` and wrap no layer.
    """
    if not isinstance(tree, dict):
        return tree
    out = {}
    for k, v in tree.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        if v is None and key not in known:
            continue
        if isinstance(v, dict) and v:
            v = _drop_unlisted_nulls(v, known, key)
            if not v:
                continue
        out[k] = v
    return out


def verl_composition(composed: Any) -> str:
    """Return verl's composition the config extends (``ppo_trainer``, ``ppo_megatron_trainer``,
    ``ppo_veomni_trainer``, ``ppo_torchtitan_trainer``, ``sft_trainer_engine`` or ``sft_megatron_trainer`` ...),
    from verl's own ``model_engine`` key (SFT: ``engine._target_``) (:func:`fsdpcfg.compose.verl_base.composition_of`).

    Raises:
        ConfigError: the config kind is neither ``ppo`` nor ``sft``.
    """
    from fsdpcfg.compose.verl_base import composition_of

    kind = getattr(composed, "kind", "ppo")
    verl_config_name(kind)
    return composition_of(composed.to_container(resolve=False), kind)


def verl_defaults_list(config: str) -> list[Any]:
    """The defaults list of the written YAML for verl's composition ``config``: verl's entry config, the
    ``model_engine`` choice for the engines that have no entry config of their own, then this file
    (``[ppo_trainer, {override model_engine: veomni}, _self_]``, as ``ppo_megatron_trainer.yaml`` does)."""
    name, overrides = verlref.COMPOSITIONS[config]
    out: list[Any] = [name]
    for o in overrides:
        group, value = o.split("=", 1)
        out.append({f"override {group}": value})
    return out + ["_self_"]


def _drop_verl_defaults(tree: Any, provenance: Any, prefix: str) -> Any:
    """Remove the leaves that come from verl's own tree untouched (provenance ``verl``): verl composes them
    itself, with its interpolations live (``critic.ppo_mini_batch_size`` keeps following the actor's when the
    user appends ``actor_rollout_ref.actor.ppo_mini_batch_size=...`` to the command)."""
    if provenance is None or not isinstance(tree, dict):
        return tree
    out = {}
    for k, v in tree.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        src = provenance.source_of(key)
        if isinstance(v, dict) and v:
            v = _drop_verl_defaults(v, provenance, key)
            if not v:
                continue
        elif src is not None and src.kind == "verl":
            continue
        out[k] = v
    return out


def verl_tree(composed: Any, *, strict: bool = True) -> dict[str, Any]:
    """Return the config as verl should see it: nested dicts in verl's key names, the ``fsdpcfg`` section
    removed, fsdpcfg's resolvers (``${fsdpcfg_data:...}``) resolved to absolute paths, and plain
    references between verl keys (``${data.max_prompt_length}``) kept so verl resolves them as usual.

    ``strict=False`` leaves required values (``???``) in place for verl to meet (the second opinion).

    Raises:
        ConfigError: an interpolation cannot be resolved, or (``strict``) a required value is not set.
    """
    config = verl_composition(composed)
    known = verlref.keys(config) | verlref.prefixes(config)
    resolved = composed.to_container(resolve=True)
    raw = composed.to_container(resolve=False)
    tree = _merge_raw(raw, resolved, known)
    tree.pop("fsdpcfg", None)
    tree = _drop_verl_defaults(tree, getattr(composed, "provenance", None), "")
    tree = _drop_unlisted_nulls(tree, verlref.keys(config), "")
    # a `???` that is verl's own default (written out by a verl dump, or set again by the user) is left to verl's
    # composition, as every untouched verl default is; only a required value verl's tree does not leave open stops
    # (a key of fsdpcfg's schema, such as rollout.name, is required here whatever verl's default: FC104)
    from fsdpcfg.schema.keys import classify

    raw_defaults = verlref.defaults(config, resolved=False)
    for key, v in list(verlref.flatten(tree).items()):
        if v == "???" and raw_defaults.get(key) == "???" and classify(key) == "verl":
            keypath.delete(tree, key)
    missing = [k for k, v in verlref.flatten(tree).items() if v == "???"]
    if missing and strict:
        raise ConfigError(
            f"required value not set (verl would stop on it): {', '.join(missing)}",
            key=missing[0],
            fix=f"set it, e.g. {missing[0]}=VALUE",
        )
    return tree

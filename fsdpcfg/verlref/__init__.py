"""verl's own key set and defaults for the pinned release, as data in the package.

``fsdpcfg/data/verl_reference.json`` holds, for each verl composition (:data:`COMPOSITIONS`: ``ppo_trainer``
for ``verl.trainer.main_ppo`` with the FSDP engine, ``ppo_megatron_trainer``, the veomni and torchtitan
engines of ``main_ppo``, ``sft_trainer_engine`` for ``verl.trainer.sft_trainer`` with the FSDP engine and
``sft_{megatron,automodel,veomni,torchtitan}_trainer`` for its other engines), every leaf key with its
default as written (interpolations kept as ``${...}`` text) and as resolved. It is generated from the
installed verl by ``scripts/gen_verl_reference.py`` (:func:`build_reference`) and a test keeps it in sync.
Reading it needs neither verl nor torch.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from types import MappingProxyType
from typing import Any

from fsdpcfg import keypath, paths

#: verl release the reference was generated from, and the one fsdpcfg's key names follow.
VERL_VERSION = "0.9.1"
#: verl composition -> the entry point that reads it.
ENTRY_POINTS = {
    "ppo_trainer": "verl.trainer.main_ppo",
    "ppo_megatron_trainer": "verl.trainer.main_ppo",
    "ppo_veomni_trainer": "verl.trainer.main_ppo",
    "ppo_torchtitan_trainer": "verl.trainer.main_ppo",
    "sft_trainer_engine": "verl.trainer.sft_trainer",
    "sft_megatron_trainer": "verl.trainer.sft_trainer",
    "sft_automodel_trainer": "verl.trainer.sft_trainer",
    "sft_veomni_trainer": "verl.trainer.sft_trainer",
    "sft_torchtitan_trainer": "verl.trainer.sft_trainer",
}
#: verl composition -> (verl config name, the overrides that select it), as a verl user selects it:
#: ``--config-name=ppo_megatron_trainer`` (verl 0.9.1's file: ppo_trainer with ``model_engine: megatron``);
#: the veomni and torchtitan engines have no entry config of their own, only ``model_engine=...``
#: (verl/trainer/config/model_engine/*.yaml, ``_generated_ppo_{veomni,torchtitan}_trainer.yaml``).
#: ``verl.trainer.sft_trainer`` composes ``engine@engine`` and ``optim@optim`` groups
#: (verl/trainer/config/sft_trainer_engine.yaml, engine/*.yaml, optim/*.yaml): its other engines are
#: ``engine=X optim=X``, as verl's examples/sft run them (run_qwen_megatron_fsdp.sh, run_qwen2_5_0_5b_automodel.sh).
COMPOSITIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "ppo_trainer": ("ppo_trainer", ()),
    "ppo_megatron_trainer": ("ppo_megatron_trainer", ()),
    "ppo_veomni_trainer": ("ppo_trainer", ("model_engine=veomni",)),
    "ppo_torchtitan_trainer": ("ppo_trainer", ("model_engine=torchtitan",)),
    "sft_trainer_engine": ("sft_trainer_engine", ()),
    "sft_megatron_trainer": ("sft_trainer_engine", ("engine=megatron", "optim=megatron")),
    "sft_automodel_trainer": ("sft_trainer_engine", ("engine=automodel", "optim=automodel")),
    "sft_veomni_trainer": ("sft_trainer_engine", ("engine=veomni", "optim=veomni")),
    "sft_torchtitan_trainer": ("sft_trainer_engine", ("engine=torchtitan", "optim=torchtitan")),
}
#: The compositions ``verl.trainer.main_ppo`` reads, one per ``model_engine`` (dp, megatron, veomni, torchtitan).
PPO_COMPOSITIONS = ("ppo_trainer", "ppo_megatron_trainer", "ppo_veomni_trainer", "ppo_torchtitan_trainer")
#: The compositions ``verl.trainer.sft_trainer`` reads, one per ``engine``/``optim`` group option (fsdp first).
SFT_COMPOSITIONS = (
    "sft_trainer_engine",
    "sft_megatron_trainer",
    "sft_automodel_trainer",
    "sft_veomni_trainer",
    "sft_torchtitan_trainer",
)
#: The unions :func:`defaults` and :func:`keys` take as a config name: every key the entry point reads.
_UNIONS = {"ppo": PPO_COMPOSITIONS, "sft": SFT_COMPOSITIONS}
_MISSING = "???"


@cache
def _load() -> dict[str, Any]:
    return json.loads((paths.data_dir() / "verl_reference.json").read_text())


def verl_version() -> str:
    """Return the verl version the shipped reference was generated from."""
    return _load()["verl_version"]


def defaults(config: str = "ppo_trainer", resolved: bool = True) -> Mapping[str, Any]:
    """Return ``{dotted key: default}`` for every leaf of verl's ``config`` (a name of :data:`COMPOSITIONS`, or
    ``"ppo"``/``"sft"``: the union of :data:`PPO_COMPOSITIONS`/:data:`SFT_COMPOSITIONS`, the FSDP composition's
    values first). Lists and empty
    mappings are leaves. ``resolved=False`` gives the values as written, interpolations as ``${...}`` text;
    ``"???"`` marks a required value. The mapping is read-only and shared (no copy per call).

    Raises:
        KeyError: ``config`` is not one of :data:`COMPOSITIONS`.
    """
    return MappingProxyType(_defaults(config, resolved))


@cache
def _defaults(config: str, resolved: bool) -> dict[str, Any]:
    if config in _UNIONS:  # every key the entry point reads with some engine; the FSDP composition's value first
        out: dict[str, Any] = {}
        for c in reversed(_UNIONS[config]):
            out.update(_defaults(c, resolved))
        return out
    entry = _load()["configs"][config]
    return entry["defaults"] if resolved else entry["raw"]


def value_kinds(key: str, config: str = "ppo") -> frozenset[str] | None:
    """The kinds of value (``bool``, ``int``, ``float``, ``str``, ``list``, ``dict``, ``null``, ``any``) verl's
    config dataclass declares for ``key`` (:mod:`fsdpcfg.verlref.field_types`), ``None`` when no dataclass
    declares it; ``config`` as in :func:`defaults` (``"ppo"``: the union over :data:`PPO_COMPOSITIONS`)."""
    return _kinds_table(config).get(key)


@cache
def _kinds_table(config: str) -> dict[str, frozenset[str]]:
    if config == "ppo":
        out: dict[str, frozenset[str]] = {}
        for c in PPO_COMPOSITIONS:
            for k, v in _kinds_table(c).items():
                out[k] = out.get(k, frozenset()) | v
        return out
    entry = _load()["configs"][config]
    return {k: frozenset(v) for k, v in {**entry.get("fields", {}), **entry.get("types", {})}.items()}


@cache
def sections(config: str = "ppo_trainer") -> frozenset[str]:
    """Return the dotted sections of verl's ``config`` that verl converts to a config dataclass (a ``_target_``,
    or a field annotated with one: ``actor_rollout_ref.actor.qat``): their keys are that dataclass's fields.
    ``config`` as in :func:`keys`."""
    if config in _UNIONS:
        return frozenset().union(*(sections(c) for c in _UNIONS[config]))
    return frozenset(_load()["configs"][config].get("sections", []))


@cache
def fields(config: str = "ppo_trainer") -> frozenset[str]:
    """Return the dotted keys of the fields of verl's config dataclasses that verl's YAML for ``config`` leaves
    out (``actor_rollout_ref.actor.fsdp_config.mixed_precision``, ``algorithm.gdpo_reward_keys`` ...): verl's
    ``omega_conf_to_dataclass`` takes them, so they are added with ``+`` (:func:`fsdpcfg.verlref.field_types.
    absent_fields`). ``config`` as in :func:`keys` (``"ppo"``/``"sft"``: the union over the entry point's
    compositions)."""
    if config in _UNIONS:
        return frozenset().union(*(fields(c) for c in _UNIONS[config]))
    return frozenset(_load()["configs"][config].get("fields", {}))


@cache
def keys(config: str = "ppo_trainer") -> frozenset[str]:
    """Return the set of dotted leaf keys verl's ``config`` knows (a name of :data:`COMPOSITIONS`, or
    ``"ppo"``/``"sft"`` for the union of :data:`PPO_COMPOSITIONS`/:data:`SFT_COMPOSITIONS`: every key
    ``main_ppo``/``sft_trainer`` reads with some engine)."""
    if config in _UNIONS:
        return frozenset().union(*(keys(c) for c in _UNIONS[config]))
    return frozenset(_load()["configs"][config]["defaults"])


@cache
def prefixes(config: str = "ppo_trainer") -> frozenset[str]:
    """Return every dotted prefix of a known key (the mapping nodes), e.g. ``actor_rollout_ref.actor``."""
    return frozenset(keypath.prefixes(keys(config)))


def tree(config: str = "ppo_trainer") -> dict[str, Any]:
    """Return verl's ``config`` as nested dicts, values as written (``${...}`` interpolations and ``???``
    kept): the tree verl composes, ready to be a Hydra config node (:mod:`fsdpcfg.compose.verl_base`) or the base a
    config file's keys merge on top of (:func:`fsdpcfg.compose.config_file.load`).

    Raises:
        KeyError: ``config`` is not one of :data:`COMPOSITIONS`.
    """
    return keypath.unflatten(_load()["configs"][config]["raw"])


#: nested dicts to ``{dotted key: leaf}`` (lists and empty dicts are leaves): :func:`fsdpcfg.keypath.flatten`.
flatten = keypath.flatten


def build_reference() -> dict[str, Any]:
    """Compose verl's configs from the installed verl and return the reference document (imports verl).

    Raises:
        ImportError: verl is not installed.
    """
    import os

    import verl
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    from fsdpcfg.verlref.field_types import absent_fields, field_kinds

    cfg_dir = os.path.join(os.path.dirname(verl.__file__), "trainer", "config")
    configs: dict[str, Any] = {}
    for name, (config_name, overrides) in COMPOSITIONS.items():
        GlobalHydra.instance().clear()
        with initialize_config_dir(config_dir=cfg_dir, version_base=None):
            cfg = compose(config_name=config_name, overrides=list(overrides))
        container = OmegaConf.to_container(cfg, resolve=False)
        raw = flatten(container)
        fields, sections = absent_fields(container)  # type: ignore[arg-type]
        resolved: dict[str, Any] = {}
        for k, v in raw.items():
            if v == _MISSING:
                resolved[k] = _MISSING
                continue
            try:
                node = OmegaConf.select(cfg, k, throw_on_missing=False)
                resolved[k] = OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node
            except Exception:  # an interpolation that needs another config (verl resolves it at run time)
                resolved[k] = v
        configs[name] = {
            "entry_point": ENTRY_POINTS[name],
            "config_name": config_name,
            "overrides": list(overrides),
            "raw": raw,
            "defaults": resolved,
            "types": field_kinds(container),  # type: ignore[arg-type]
            "fields": fields,
            "sections": sections,
        }
        GlobalHydra.instance().clear()
    return {"verl_version": verl.__version__, "configs": configs}

"""verl's own composed tree as the first layer of fsdpcfg's tree.

The root configs (``conf/config.yaml``, ``conf/sft/config.yaml``) start their defaults list with
``verl_base@_global_: ppo_${engine}`` (``sft_trainer_engine`` for SFT). The options of that group are not
files: they are verl 0.9.1's compositions from :mod:`fsdpcfg.verlref` (values as written, ``${...}``
interpolations and ``???`` kept), stored in Hydra's ConfigStore. So every key verl's composition defines is in
fsdpcfg's tree with verl's default, ``key=value`` overrides it exactly where verl takes ``key=value``, and ``+``
is needed exactly where verl needs it. fsdpcfg's own files then override verl's values.

Which composition: the ``engine`` group option picks it, as ``model_engine`` does in verl
(``verl/trainer/config/ppo_trainer.yaml`` ``${model_engine}_actor``; ``ppo_megatron_trainer.yaml`` sets
``model_engine: megatron``): :data:`ENGINE_COMPOSITION`.

Storing a composition builds an OmegaConf node (~50 ms for 900 keys), so only the compositions a compose can
select are stored: the engine option named on the command line or by the recipe, else every one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fsdpcfg import verlref

#: Name of the config group the root configs' first defaults entry selects.
GROUP = "verl_base"
#: fsdpcfg ``engine`` option (RL tree) -> verl 0.9.1 composition (``fsdpcfg.verlref.COMPOSITIONS``).
ENGINE_COMPOSITION = {
    "fsdp": "ppo_trainer",
    "fsdp2": "ppo_trainer",
    "megatron": "ppo_megatron_trainer",
    "veomni": "ppo_veomni_trainer",
    "torchtitan": "ppo_torchtitan_trainer",
}
#: The engines fsdpcfg checks in depth and runs natively (the rest get FC111 and the engine-independent rules).
FSDP_ENGINES = ("fsdp", "fsdp2")
#: verl's ``model_engine`` value (a key of every ``main_ppo`` composition) -> the composition it selects.
MODEL_ENGINE_COMPOSITION = {
    "dp": "ppo_trainer",
    "megatron": "ppo_megatron_trainer",
    "veomni": "ppo_veomni_trainer",
    "torchtitan": "ppo_torchtitan_trainer",
}
#: The SFT tree's option of :data:`GROUP` (its engines are all FSDP: ``conf/sft/engine/``).
SFT_OPTION = "sft_trainer_engine"

_stored: set[str] = set()
#: Provenance kinds of fsdpcfg's own tree (root config and group options), whose keys :func:`prune` may drop.
_OWN_KINDS = ("default", "group")


def option(kind: str, engine: str | None) -> str:
    """Return the :data:`GROUP` option a config of ``kind`` with engine option ``engine`` composes."""
    return SFT_OPTION if kind == "sft" else f"ppo_{engine}"


def composition(kind: str, engine: str | None) -> str:
    """Return the verl composition (a name of :data:`fsdpcfg.verlref.COMPOSITIONS`) of ``kind``/``engine``;
    an engine fsdpcfg does not know reads as verl's FSDP ``ppo_trainer``."""
    if kind == "sft":
        return "sft_trainer_engine"
    return ENGINE_COMPOSITION.get(str(engine), "ppo_trainer")


def engine_overrides(overrides: list[str]) -> list[str]:
    """Read verl's own engine choice, ``model_engine=megatron`` (a config group in verl's ``ppo_trainer``, a
    key in fsdpcfg's tree), as the ``engine`` option that selects the same composition: ``megatron``,
    ``veomni``, ``torchtitan`` become ``engine=...``; ``dp`` (verl's FSDP) keeps the recipe's FSDP engine.

    Raises:
        ConfigError: a ``model_engine`` verl 0.9.1 does not have (verl/trainer/config/model_engine/).
    """
    from fsdpcfg.errors import ConfigError

    out = []
    for o in overrides:
        key, eq, value = o.partition("=")
        if not eq or key.lstrip("+") != "model_engine":
            out.append(o)
            continue
        value = value.strip().strip("'\"")
        if value not in MODEL_ENGINE_COMPOSITION:
            raise ConfigError(
                f"no model_engine `{value}` in verl {verlref.VERL_VERSION}",
                key="model_engine",
                value=value,
                fix=f"choose one of: {', '.join(MODEL_ENGINE_COMPOSITION)} (fsdpcfg's "
                "engine=fsdp2/fsdp/megatron/veomni/torchtitan)",
            )
        if value != "dp":
            out.append(f"engine={value}")
    return out


def register(kind: str, engines: Iterable[str] | None = None) -> None:
    """Store the :data:`GROUP` options for ``engines`` (every RL engine when ``None``) in Hydra's ConfigStore,
    once per process."""
    from hydra.core.config_store import ConfigStore

    if kind == "sft":
        wanted = {SFT_OPTION: "sft_trainer_engine"}
    else:
        names = ENGINE_COMPOSITION if engines is None else [e for e in engines if e in ENGINE_COMPOSITION]
        wanted = {option(kind, e): ENGINE_COMPOSITION[e] for e in names}
    for name, comp in wanted.items():
        if name in _stored:
            continue
        ConfigStore.instance().store(group=GROUP, name=name, node=verlref.tree(comp))
        _stored.add(name)


def stored() -> frozenset[str]:
    """The :data:`GROUP` options stored in Hydra's ConfigStore so far (a composition depends on them)."""
    return frozenset(_stored)


def register_all_if_missing() -> bool:
    """Store every option of :data:`GROUP` (both trees); return ``False`` when all were stored already (a
    compose that failed then failed for another reason)."""
    before = len(_stored)
    register("ppo")
    register("sft")
    return len(_stored) > before


def composition_of(cfg: Any, kind: str = "ppo") -> str:
    """Return the verl composition a composed or loaded config belongs to, from verl's own ``model_engine`` key
    (``dp`` when absent: a config written for ``ppo_trainer``); ``sft_trainer_engine`` for SFT."""
    if kind == "sft":
        return "sft_trainer_engine"
    engine = cfg.get("model_engine") if hasattr(cfg, "get") else None
    return MODEL_ENGINE_COMPOSITION.get(str(engine), "ppo_trainer") if engine is not None else "ppo_trainer"


def foreign_keys(flat_keys: Iterable[str], comp: str) -> list[str]:
    """The keys of ``flat_keys`` (dotted leaves) that verl's composition ``comp`` does not define, leaving out
    fsdpcfg's own section and keys below a leaf of ``comp`` (a free mapping such as ``override_config: {}``, or
    an interpolation that copies a section: ``${oc.select:actor_rollout_ref.model.mtp,null}``): what a
    Megatron, veomni or torchtitan run would carry from FSDP sections."""
    known = verlref.keys(comp)
    out = []
    for key in flat_keys:
        if key in known or key.split(".", 1)[0] == "fsdpcfg":
            continue
        parts = key.split(".")
        if any(".".join(parts[:i]) in known for i in range(1, len(parts))):
            continue  # below a leaf of verl's: a free mapping, or an interpolation that copies a section
        out.append(key)
    return out


def prune(cfg: Any, provenance: Any, comp: str) -> list[str]:
    """Delete from ``cfg`` (a composed ``DictConfig``) the keys that fsdpcfg's own tree (``conf/config.yaml``
    and the group options, written for the FSDP engines) sets and that verl's composition ``comp`` does not
    define (``actor_rollout_ref.actor.fsdp_config.*`` under ``engine=megatron``), and return them. A key the
    user set (recipe, command line) stays, for rule FC113 to report. Nothing is pruned for ``ppo_trainer``.
    """
    from omegaconf import OmegaConf

    if comp == "ppo_trainer" or comp == "sft_trainer_engine":
        return []
    flat = verlref.flatten(OmegaConf.to_container(cfg, resolve=False))
    dropped = []
    for key in foreign_keys(flat, comp):
        src = provenance.source_of(key)
        if src is None or src.kind not in _OWN_KINDS:
            continue
        parent, _, leaf = key.rpartition(".")
        node = OmegaConf.select(cfg, parent) if parent else cfg
        if node is not None and leaf in node:
            del node[leaf]
            dropped.append(key)
    for key in sorted({k.rpartition(".")[0] for k in dropped}, key=lambda k: -k.count(".")):
        while key:  # mappings left empty
            node = OmegaConf.select(cfg, key)
            if node is None or len(node):
                break
            parent, _, leaf = key.rpartition(".")
            del (OmegaConf.select(cfg, parent) if parent else cfg)[leaf]
            key = parent
    return dropped

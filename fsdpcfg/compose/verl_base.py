"""verl's own composed tree as the first layer of fsdpcfg's tree.

The root configs (``conf/config.yaml``, ``conf/sft/config.yaml``) start their defaults list with
``verl_base@_global_: ppo_${engine}`` (``sft_${engine}`` for SFT). The options of that group are not
files: they are verl 0.9.1's compositions from :mod:`fsdpcfg.verlref` (values as written, ``${...}``
interpolations and ``???`` kept), stored in Hydra's ConfigStore. So every key verl's composition defines is in
fsdpcfg's tree with verl's default, ``key=value`` overrides it exactly where verl takes ``key=value``, and ``+``
is needed exactly where verl needs it. fsdpcfg's own files then override verl's values.

Which composition: the ``engine`` group option picks it, as ``model_engine`` does in verl
(``verl/trainer/config/ppo_trainer.yaml`` ``${model_engine}_actor``; ``ppo_megatron_trainer.yaml`` sets
``model_engine: megatron``): :data:`ENGINE_COMPOSITION`. In the SFT tree it picks verl's ``engine=X optim=X``
group options of ``sft_trainer_engine`` (verl's examples/sft run ``engine=megatron optim=megatron``):
:data:`SFT_ENGINE_COMPOSITION`; the optimizer config follows the engine (:func:`sft_optim_overrides`).

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
#: fsdpcfg ``engine`` option (SFT tree, ``conf/sft/engine/``) -> verl 0.9.1 composition of ``sft_trainer``.
SFT_ENGINE_COMPOSITION = {
    "fsdp": "sft_trainer_engine",
    "fsdp2": "sft_trainer_engine",
    "megatron": "sft_megatron_trainer",
    "automodel": "sft_automodel_trainer",
    "veomni": "sft_veomni_trainer",
    "torchtitan": "sft_torchtitan_trainer",
}
#: fsdpcfg SFT ``engine`` option -> verl's ``optim`` group option it composes with (``fsdp`` for both FSDPs).
SFT_OPTIM = {e: ("fsdp" if e in FSDP_ENGINES else e) for e in SFT_ENGINE_COMPOSITION}
#: The sections of an SFT config that verl's ``engine``/``optim`` group options fill (fsdpcfg's root config
#: writes them for FSDP: verl's engine/fsdp.yaml and optim/fsdp.yaml).
SFT_ENGINE_SECTIONS = ("engine", "optim")

_stored: set[str] = set()
#: Provenance kinds of fsdpcfg's own tree (root config and group options), whose keys :func:`prune` may drop.
_OWN_KINDS = ("default", "group")


def option(kind: str, engine: str | None) -> str:
    """Return the :data:`GROUP` option a config of ``kind`` with engine option ``engine`` composes."""
    return f"{kind}_{engine}" if kind == "sft" else f"ppo_{engine}"


def composition(kind: str, engine: str | None) -> str:
    """Return the verl composition (a name of :data:`fsdpcfg.verlref.COMPOSITIONS`) of ``kind``/``engine``;
    an engine fsdpcfg does not know reads as verl's FSDP ``ppo_trainer``."""
    if kind == "sft":
        return SFT_ENGINE_COMPOSITION.get(str(engine), "sft_trainer_engine")
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
    """Store the :data:`GROUP` options for ``engines`` (every engine of the ``kind`` tree when ``None``) in
    Hydra's ConfigStore, once per process."""
    from hydra.core.config_store import ConfigStore

    table = SFT_ENGINE_COMPOSITION if kind == "sft" else ENGINE_COMPOSITION
    names = table if engines is None else [e for e in engines if e in table]
    wanted = {option(kind, e): table[e] for e in names}
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
    (when absent, as in a dump of an older or flattened config: from ``actor_rollout_ref.actor.strategy``, else
    ``ppo_trainer``); for SFT from verl's own ``engine._target_``
    (the engine config class: ``McoreEngineConfig`` is ``sft_megatron_trainer``; verl's Megatron engine has no
    ``engine.strategy`` key), else ``engine.strategy``, else ``sft_trainer_engine``."""
    if kind == "sft":
        return _sft_composition(cfg)
    engine = cfg.get("model_engine") if hasattr(cfg, "get") else None
    if engine is not None:
        return MODEL_ENGINE_COMPOSITION.get(str(engine), "ppo_trainer")
    # a dump without verl's model_engine key (written by an older verl, or flattened): the actor's strategy
    # names the engine, as verl's compositions set it (ppo_megatron_trainer: strategy megatron)
    actor = _section(_section(cfg, "actor_rollout_ref"), "actor")
    strategy = actor.get("strategy") if actor is not None else None
    return ENGINE_COMPOSITION.get(str(strategy), "ppo_trainer")


def _section(node: Any, name: str) -> Any:
    sub = node.get(name) if node is not None and hasattr(node, "get") else None
    return sub if hasattr(sub, "get") else None


def _sft_composition(cfg: Any) -> str:
    engine: Any = cfg.get("engine") if hasattr(cfg, "get") else None
    if engine is None or not hasattr(engine, "get"):
        return "sft_trainer_engine"
    target, strategy = engine.get("_target_"), engine.get("strategy")
    for comp in verlref.SFT_COMPOSITIONS:
        if target is not None and target == verlref.defaults(comp).get("engine._target_"):
            return comp
    return SFT_ENGINE_COMPOSITION.get(str(strategy), "sft_trainer_engine")


def sft_engine(comp: str) -> str:
    """The fsdpcfg SFT ``engine`` option of verl's SFT composition ``comp`` (``fsdp`` for ``sft_trainer_engine``)."""
    return next((e for e, c in SFT_ENGINE_COMPOSITION.items() if c == comp), "fsdp")


def sft_optim_overrides(overrides: list[str], engine: str | None) -> list[str]:
    """Read verl's ``optim=X`` group choice of ``sft_trainer`` against the ``engine`` option: verl composes
    ``optim/X.yaml`` beside ``engine/X.yaml`` (its examples run ``engine=megatron optim=megatron``); fsdpcfg's SFT
    tree selects both with the engine option (:data:`SFT_OPTIM`: ``fsdp`` for fsdp and fsdp2), so a matching
    ``optim=X`` is dropped (nothing to change) and the rest are returned.

    Raises:
        ConfigError: ``optim=X`` is not the optimizer config of ``engine`` (``optim=fsdp`` with
            ``engine=megatron``: verl builds a Megatron engine with the FSDP optimizer config), or not an
            option of verl 0.9.1's ``optim`` group.
    """
    from fsdpcfg.errors import ConfigError

    engine = engine or "fsdp2"
    out = []
    for o in overrides:
        key, eq, value = o.partition("=")
        if not eq or key != "optim":
            out.append(o)
            continue
        value = value.strip().strip("'\"")
        want = SFT_OPTIM.get(engine)
        if value == want:
            continue
        known = sorted(set(SFT_OPTIM.values()))
        what = f"is not an option of verl {verlref.VERL_VERSION}'s optim group ({', '.join(known)})"
        if value in known:
            what = f"is not the optimizer config of engine={engine} (verl's optim/{want}.yaml)"
        raise ConfigError(
            f"optim={value} {what}: the SFT tree selects verl's optim group option with the engine option",
            key="optim",
            value=value,
            fix=f"drop optim={value} (engine={engine} composes optim={want}), or choose the engine it belongs to "
            f"(engine={value})"
            if value in known
            else f"drop optim={value}, or set optim={want}",
        )
    return out


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
    user set (recipe, command line) stays, for rule FC113 to report. Nothing is pruned for ``ppo_trainer`` and
    ``sft_trainer_engine``. In an SFT tree on another engine, the ``engine.*``/``optim.*`` values fsdpcfg's own
    tree sets (verl's FSDP ones) that the composition has with another default are reset to verl's
    (``optim.optimizer: adam`` for Megatron, ``engine.strategy: automodel``).
    """
    from omegaconf import OmegaConf

    if comp == "ppo_trainer" or comp == "sft_trainer_engine":
        return []
    flat = verlref.flatten(OmegaConf.to_container(cfg, resolve=False))
    if comp in verlref.SFT_COMPOSITIONS:
        _reset_sft_engine_sections(cfg, provenance, comp, flat)
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


def _reset_sft_engine_sections(cfg: Any, provenance: Any, comp: str, flat: dict[str, Any]) -> None:
    """Set the ``engine.*``/``optim.*`` leaves of ``cfg`` that fsdpcfg's own tree set (root config, group options
    other than ``engine=``) and that verl's SFT composition ``comp`` has with another default to verl's value
    as written, recording verl as their source."""
    from omegaconf import OmegaConf

    from fsdpcfg.compose.provenance import Source

    raw = verlref.defaults(comp, resolved=False)
    for key, value in flat.items():
        if key.split(".", 1)[0] not in SFT_ENGINE_SECTIONS or key not in raw or raw[key] == value:
            continue
        src = provenance.source_of(key)
        if src is None or src.kind not in _OWN_KINDS or (src.option or "").startswith("engine="):
            continue
        OmegaConf.update(cfg, key, raw[key], merge=False)
        provenance.record(key, Source("verl", f"verl {verlref.VERL_VERSION} default"))

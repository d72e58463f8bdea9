"""FC111, FC113: verl's other training engines (Megatron, veomni, torchtitan ...).

fsdpcfg checks the FSDP engines in depth. A role whose ``strategy`` is another engine verl 0.9.1 registers
(``EngineRegistry.register`` in ``verl/workers/engine/*/transformer_impl.py``) gets none of the FSDP-only rules
(they read :func:`fsdpcfg.rules._common.fsdp_sections`, which lists FSDP roles only); the engine-independent rules
(batch arithmetic, rollout, data, reward, trainer, model files) still run. The native launcher runs FSDP only:
``actor_rollout_ref.actor.strategy`` is declared with its values in :mod:`fsdpcfg.native.support` (rule FC803
names launcher=verl).

SFT (``verl.trainer.sft_trainer``): the engine option picks verl's ``engine=X optim=X`` composition
(``sft_megatron_trainer`` ...); FC111 and FC113 read it the same way, the FSDP-only SFT rules skip it
(:func:`fsdpcfg.rules.sft_rules.fsdp_engine`) and FC254 refuses it under the native SFT trainer.
"""

from __future__ import annotations

from collections.abc import Iterable

from fsdpcfg import verlref
from fsdpcfg.compose import verl_base
from fsdpcfg.rules._common import non_fsdp_roles
from fsdpcfg.rules.context import Context
from fsdpcfg.rules.finding import Finding
from fsdpcfg.rules.registry import rule
from fsdpcfg.schema import keys as K


@rule(
    "FC111",
    "a Megatron, veomni or torchtitan engine is checked by the engine-independent rules only",
    severity="info",
    keys=["actor_rollout_ref.actor.strategy", "critic.strategy"],
    example=["launcher=verl", "engine=megatron"],
    kinds=("ppo", "sft"),
)
def non_fsdp_engine(ctx: Context) -> Iterable[Finding]:
    """One info for the run when any role it builds (actor, reference when KL is used, critic when GAE is
    used) trains on an engine other than FSDP/FSDP2: fsdpcfg checks FSDP engines; the engine-independent rules
    ran, the FSDP ones (wrap policy, fsdp_size, offload flags, FSDP1/FSDP2 traps) did not, and the engine's own
    sections (``actor_rollout_ref.actor.megatron.*`` ...) are accepted as verl's keys with verl's defaults; of them,
    the parallel sizes the data-parallel group is derived from (Megatron TP x PP x CP, veomni Ulysses) are judged
    by FC302 and feed the batch rules.

    Source: verl 0.9.1 ``verl/trainer/config/model_engine/*.yaml`` (dp, megatron, veomni, torchtitan) and
    ``EngineRegistry.register`` in ``verl/workers/engine/*/transformer_impl.py``; issue 12.

    SFT: one info when the engine option is not fsdp/fsdp2 (verl's ``engine=megatron optim=megatron`` ...):
    the engine-independent SFT rules ran (batch split, data, trainer, model files).
    """
    if ctx.composed.kind == "sft":
        yield from _non_fsdp_sft(ctx)
        return
    roles = non_fsdp_roles(ctx)
    if not roles:
        return
    engines = sorted({s for _, _, s in roles})
    keys = [k for _, k, _ in roles]
    yield ctx.finding(
        "FC111",
        keys,
        f"fsdpcfg checks FSDP engines; engine-independent rules ran ({', '.join(f'{r}: {s}' for r, _, s in roles)}"
        f"): the FSDP rules were skipped and the {'/'.join(engines)} settings are passed to verl "
        "as they are",
        f"check the {'/'.join(engines)} settings with verl itself (`fsdpcfg check "
        "--verl` composes and validates them with the installed verl)",
        severity="info",
    )


def _non_fsdp_sft(ctx: Context) -> Iterable[Finding]:
    comp = ctx.verl_config
    if comp == "sft_trainer_engine":
        return
    engine = verl_base.sft_engine(comp)
    yield ctx.finding(
        "FC111",
        [],
        f"fsdpcfg checks FSDP engines; engine-independent rules ran (SFT engine={engine}: verl's {comp}, "
        f"engine={engine} optim={engine}): the FSDP rules were skipped and the engine.*/optim.* settings are "
        "passed to verl as they are",
        f"check the {engine} settings with verl itself (`fsdpcfg check --verl` composes and validates them with "
        "the installed verl)",
        severity="info",
    )


@rule(
    "FC113",
    "a key the chosen engine's verl config does not have",
    keys=["actor_rollout_ref.actor.strategy"],
    example=["launcher=verl", "engine=megatron", "actor_rollout_ref.actor.fsdp_config.param_offload=true"],
    kinds=("ppo", "sft"),
)
def foreign_engine_key(ctx: Context) -> Iterable[Finding]:
    """A key set by the recipe or the command line that belongs to another engine's sections: with
    ``engine=megatron`` (verl's ``ppo_megatron_trainer``), ``actor_rollout_ref.actor.fsdp_config.*`` does not
    exist, so verl rejects it as an override ("Could not override") or never reads it from a file; with the
    FSDP engines, ``+actor_rollout_ref.actor.megatron.*`` is accepted by Hydra and never read. fsdpcfg's
    own FSDP defaults are left out of such a tree (:func:`fsdpcfg.compose.verl_base.prune`), so only what the
    user wrote is reported.

    Source: verl 0.9.1's compositions (``fsdpcfg/data/verl_reference.json``: ``ppo_megatron_trainer``,
    ``ppo_veomni_trainer``, ``ppo_torchtitan_trainer``); issue 12.
    """
    if ctx.composed.kind == "sft":
        yield from _foreign_sft_key(ctx)
        return
    if ctx.composed.kind != "ppo":
        return
    comp = ctx.verl_config
    engine = ctx.get("model_engine")
    for key in verl_base.foreign_keys(verlref.flatten(ctx.cfg), comp):
        src = ctx.composed.provenance.source_of(key)
        if src is not None and src.kind in ("verl", "default", "group"):
            continue  # verl's own tree or fsdpcfg's (kept where verl_base.prune could not tell)
        if key in verlref.fields(comp):
            continue  # a field this engine's dataclasses read without a YAML entry (fsdp_config.mixed_precision)
        if key in K.VERL_PLUS_KEYS:
            continue  # a + key verl accepts
        section = None
        other: str | None
        if K.classify(key) == "free":
            # below a mapping verl hands to a library (override_transformer_config.*): free inside it, but the
            # mapping itself must be one of this engine's sections
            section = _known_section(key)
            if section is None or _has(comp, section):
                continue
            other = next(c for c in verlref.PPO_COMPOSITIONS if _has(c, section))
        else:
            holders = (c for c in verlref.PPO_COMPOSITIONS if key in verlref.keys(c) or key in verlref.fields(c))
            other = next(holders, None)
        if other is None:
            continue  # in no engine's composition: an unknown key, FC101/FC102's (a `+` key verl accepts)
        where = (
            f" (it is a key of verl's {other})"
            if section is None
            else f" ({section} is a section of verl's {other}, not of {comp})"
        )
        choose = next((e for e, c in verl_base.ENGINE_COMPOSITION.items() if c == other), other)
        yield ctx.finding(
            "FC113",
            [key, "model_engine"],
            f"{key} is not a key of verl's {comp} (model_engine={engine}){where}: verl rejects it "
            "as an override and ignores it in a config file",
            f"remove it, or set the engine's own key (`fsdpcfg explain {key.rsplit('.', 1)[-1]}`), or "
            f"choose the engine it belongs to (engine={choose})",
        )


def _has(comp: str, key: str) -> bool:
    """True when verl's composition ``comp`` holds ``key`` as a leaf, a section or a dataclass field."""
    return key in verlref.keys(comp) or key in verlref.prefixes(comp) or key in verlref.fields(comp)


def _known_section(key: str) -> str | None:
    """The longest dotted prefix of ``key`` that some engine's composition of ``main_ppo`` holds (the free
    mapping's place in verl's tree, ``actor_rollout_ref.actor.megatron.override_transformer_config``), or
    ``None``."""
    parts = key.split(".")
    for i in range(len(parts) - 1, 0, -1):
        prefix = ".".join(parts[:i])
        if any(_has(c, prefix) for c in verlref.PPO_COMPOSITIONS):
            return prefix
    return None


def _foreign_sft_key(ctx: Context) -> Iterable[Finding]:
    """FC113 of an SFT config on another engine than FSDP: an ``engine.*``/``optim.*`` key the user set that
    verl's ``engine=X optim=X`` composition does not have (``engine.fsdp_size`` under Megatron)."""
    comp = ctx.verl_config
    if comp == "sft_trainer_engine":
        return  # the FSDP tree: the SFT schema (FC150) names unknown keys
    engine = verl_base.sft_engine(comp)
    for key in verl_base.foreign_keys(verlref.flatten(ctx.cfg), comp):
        if key.split(".", 1)[0] not in verl_base.SFT_ENGINE_SECTIONS:
            continue  # the other sections are the SFT schema's (FC150)
        src = ctx.composed.provenance.source_of(key)
        if src is not None and src.kind in ("verl", "default", "group"):
            continue
        if any(p in K.VERL_DICT_FIELDS for p in key.split(".")[:-1]):
            continue  # below a mapping verl hands to a library (+engine.override_transformer_config.*)
        other = next((c for c in verlref.SFT_COMPOSITIONS if key in verlref.keys(c)), None)
        where = f" (it is a key of verl's {other}, engine={verl_base.sft_engine(other)})" if other else ""
        yield ctx.finding(
            "FC113",
            [key],
            f"{key} is not a key of verl's {comp} (engine={engine} optim={engine}){where}: verl rejects it as "
            "an override and ignores it in a config file",
            f"remove it, or set the engine's own key (`fsdpcfg show +recipe=qwen_sft engine={engine}` lists them), "
            "or choose the engine it belongs to",
        )

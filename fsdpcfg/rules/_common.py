"""Shared helpers of the FC2xx-FC7xx rules: effective values through verl's own interpolated defaults, the
roles that run in a PPO/GRPO step, and the data-parallel arithmetic verl's workers use.

Nothing here registers a rule; the rule modules import it. No torch, transformers or verl imports.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fsdpcfg import verlref
from fsdpcfg.native import backends

if TYPE_CHECKING:
    from fsdpcfg.rules.context import Context

A = "actor_rollout_ref"
#: Rollout backends that run a separate inference engine (verl/workers/rollout/base.py _ROLLOUT_REGISTRY).
ENGINE_ROLLOUTS = backends.engine_rollouts()

_INTERP = re.compile(r"^\$\{(?:oc\.select:)?([^,}]+)(?:,([^}]*))?\}$")


def val(ctx: Context, key: str) -> Any:
    """Return the effective value of ``key``; a verl default written as ``${other.key}`` or
    ``${oc.select:other.key,default}`` (``critic.ppo_mini_batch_size``, ``actor_rollout_ref.ref.*``) is
    resolved against *this* config, as verl resolves it when the config is handed over."""
    if ctx.is_set(key):
        return ctx.get(key)
    raw = verlref.defaults("ppo", resolved=False).get(key)
    if isinstance(raw, str):
        m = _INTERP.match(raw.strip())
        if m:
            target, fallback = m.group(1).strip(), m.group(2)
            if target.startswith("."):
                target = key.rsplit(".", 1)[0] + target
            if target != key:
                got = val(ctx, target)
                if got is not None:
                    return got
                if fallback is not None:
                    return _literal(fallback.strip())
    return ctx.get(key)


def _literal(text: str) -> Any:
    if text in ("null", "None", ""):
        return None
    if text in ("true", "false"):
        return text == "true"
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


def num(x: Any) -> int | None:
    """``x`` as an int, or ``None`` when it is not a whole number (the schema reports the type)."""
    if isinstance(x, bool):
        return None
    if isinstance(x, int):
        return x
    if isinstance(x, float) and x.is_integer():
        return int(x)
    if isinstance(x, str) and re.fullmatch(r"-?\d+", x.strip()):
        return int(x)
    return None


def flag(x: Any) -> bool:
    """Truthiness of a config flag (``"true"`` strings from a shell script count)."""
    if isinstance(x, str):
        return x.strip().lower() in ("true", "1", "yes", "on")
    return bool(x)


def need_critic(ctx: Context) -> bool:
    """verl/trainer/ppo/utils.py ``need_critic``: ``critic.enable`` if set, else ``adv_estimator == gae``."""
    enable = ctx.get("critic.enable")
    if enable is not None:
        return flag(enable)
    return str(ctx.get("algorithm.adv_estimator")) == "gae"


def need_ref(ctx: Context) -> bool:
    """verl/trainer/ppo/utils.py ``need_reference_policy``: KL in the reward or KL as a loss."""
    return flag(ctx.get("algorithm.use_kl_in_reward")) or flag(ctx.get(f"{A}.actor.use_kl_loss"))


#: verl's FSDP strategies (``verl/workers/engine/fsdp``); the other strategies verl 0.9.1 composes are
#: ``megatron``, ``veomni`` and ``torchtitan`` (``verl/trainer/config/model_engine/``).
FSDP_STRATEGIES = backends.fsdp_engines()


def model_roles(ctx: Context) -> list[tuple[str, str, str]]:
    """``(role, engine config section, strategy key)`` of every model role the run builds, whatever its
    engine: the actor always, the reference when :func:`need_ref`, the critic when :func:`need_critic`
    (verl/trainer/ppo/utils.py, verl's own role derivation). The section is the FSDP one (``fsdp_config``,
    the critic's ``fsdp``); a Megatron role's is ``megatron``."""
    out = [("actor", f"{A}.actor.fsdp_config", f"{A}.actor.strategy")]
    if need_ref(ctx):
        out.append(("ref", f"{A}.ref.fsdp_config", f"{A}.ref.strategy"))
    if need_critic(ctx):
        out.append(("critic", "critic.fsdp", "critic.strategy"))
    return out


def fsdp_sections(ctx: Context) -> list[tuple[str, str]]:
    """``(fsdp config section, strategy key)`` of every FSDP role the run builds (:func:`model_roles` whose
    strategy is fsdp or fsdp2): the list every FSDP-only rule reads, so a Megatron, veomni or torchtitan role
    gets none of them (rule FC111 says so)."""
    return [(sec, skey) for _, sec, skey in model_roles(ctx) if str(val(ctx, skey)) in FSDP_STRATEGIES]


def non_fsdp_roles(ctx: Context) -> list[tuple[str, str, str]]:
    """``(role, strategy key, strategy)`` of the roles whose engine is not FSDP (``megatron``, ...)."""
    out = []
    for role, _, skey in model_roles(ctx):
        s = str(val(ctx, skey))
        if s not in FSDP_STRATEGIES:
            out.append((role, skey, s))
    return out


def rollout_name(ctx: Context) -> str:
    return str(ctx.get(f"{A}.rollout.name"))


def engine_rollout(ctx: Context) -> bool:
    """True when the rollout is a separate inference engine (vLLM, SGLang, TensorRT-LLM)."""
    return rollout_name(ctx) in ENGINE_ROLLOUTS


#: The parallel sizes of each engine fsdpcfg models, ``(leaf key in the engine's config section, name in messages,
#: whether it splits each sequence)``: their product times the data-parallel size is the world.
#:
#: - FSDP: ``world = dp x ulysses`` (verl/workers/engine/fsdp/transformer_impl.py ``_init_device_mesh``,
#:   ``get_data_parallel_size``: ``world // ulysses_sequence_parallel_size``);
#: - veomni: the same (verl/workers/engine/veomni/transformer_impl.py: ``dp_size = world_size //
#:   ulysses_parallel_size``; VeOmni's ``ParallelState`` requires the product of its sizes to be the world);
#: - Megatron: ``world = tp x pp x cp x dp`` (verl/utils/config.py ``validate_config`` ``megatron_dp``;
#:   Megatron-core ``parallel_state.initialize_model_parallel``).
ENGINE_SIZES: dict[str, tuple[tuple[str, str, bool], ...]] = {
    **{s: (("ulysses_sequence_parallel_size", "ulysses", True),) for s in FSDP_STRATEGIES},
    "veomni": (("ulysses_parallel_size", "veomni ulysses", True),),
    "megatron": (
        ("tensor_model_parallel_size", "tensor", False),
        ("pipeline_model_parallel_size", "pipeline", False),
        ("context_parallel_size", "context", True),
    ),
}


@dataclass(frozen=True)
class Size:
    """One parallel size of an engine, as verl hands it over: ``key`` (a key of the tree the rule judges: the RL
    tree's ``actor_rollout_ref.actor.megatron.*``, the SFT tree's ``engine.*``), ``value`` as the config holds it
    (verl's default when the config does not hold the key, ``None`` for an explicit null), ``name`` for messages
    and ``sequence``: whether it splits each sequence (the factor of the token budgets)."""

    key: str
    value: Any
    name: str
    sequence: bool

    @property
    def size(self) -> int | None:
        """The value as a whole number (0 and negative numbers too: rule FC302 reports them), ``None`` when it
        is not one (null, a string, a run script's value the check cannot know)."""
        return num(self.value)


def engine_sizes(
    ctx: Context, section: str, *, strategy: str | None = None, engine_keys: str | None = None
) -> tuple[str, tuple[Size, ...]] | None:
    """``(strategy, sizes)``: the parallel sizes (:data:`ENGINE_SIZES`) of the engine configured at ``section``
    (``actor_rollout_ref.actor``, ``actor_rollout_ref.ref``, ``critic``; ``engine`` for SFT), read from the keys
    of the tree being judged. ``strategy``: the engine (default ``<section>.strategy``); ``engine_keys``: where
    that engine's own keys are (default, the RL tree's: ``<section>.fsdp_config`` (the critic's
    ``critic.fsdp``), ``<section>.megatron``, ``<section>.veomni``; ``engine`` in verl's SFT tree).

    An RL FSDP role's Ulysses size is its ``<section>.ulysses_sequence_parallel_size`` (deprecated) when that is
    > 1 (or not a whole number: then the size is not known), else its engine config's:
    verl/workers/config/actor.py ``FSDPActorConfig.__post_init__`` copies the former into the latter only when
    > 1. The critic's is read the same way, as the critic rules always have (verl 0.9.1's ``FSDPCriticConfig``
    copies nothing: its engine reads ``critic.fsdp.ulysses_sequence_parallel_size`` alone).

    ``None`` for an engine fsdpcfg does not model (torchtitan, automodel, fsdp_turbo), or one a run script's group
    option fills that the check cannot compose (``actor@actor_rollout_ref.actor=mlite_actor``, SFT's
    ``engine=mlite`` from a ``hydra.searchpath`` package: FC108; ``composed.unmodelled``).
    """
    unmodelled = getattr(ctx.composed, "unmodelled", None) or ()
    if any(section == p or section.startswith(p + ".") for p in unmodelled):
        return None
    strategy = strategy or str(val(ctx, f"{section}.strategy"))
    spec = ENGINE_SIZES.get(strategy)
    if spec is None:
        return None
    fsdp = strategy in FSDP_STRATEGIES
    if engine_keys is not None:
        own = engine_keys
    elif fsdp:
        own = "critic.fsdp" if section == "critic" else f"{section}.fsdp_config"
    else:
        own = f"{section}.{strategy}"
    sizes = []
    for leaf, name, sequence in spec:
        key = f"{own}.{leaf}"
        if fsdp and engine_keys is None:
            top = f"{section}.ulysses_sequence_parallel_size"
            t = num(val(ctx, top))
            key = top if t is None or t > 1 else key
        sizes.append(Size(key, val(ctx, key), name, sequence))
    return strategy, tuple(sizes)


def sequence_parallel(ctx: Context, section: str) -> tuple[int, tuple[str, ...]] | None:
    """``(size, keys)``: how many ranks split one sequence in the engine configured at ``section``, the factor of
    its token budgets (verl/workers/engine/utils.py ``prepare_micro_batches``: ``max_token_len_per_gpu x
    sp_size``, each engine setting ``sp_size``): FSDP's Ulysses size, Megatron's ``context_parallel_size``
    (megatron/transformer_impl.py), veomni's ``ulysses_parallel_size`` (veomni/transformer_impl.py); ``keys``: the
    key it was read from (:func:`engine_sizes`).

    ``None`` for an engine fsdpcfg does not model (torchtitan, automodel, fsdp_turbo), and when the size is not a
    whole number >= 1 (rule FC302 reports it) or cannot be known.
    """
    got = engine_sizes(ctx, section)
    if got is None:
        return None
    s = next(s for s in got[1] if s.sequence)
    n = s.size
    return (n, (s.key,)) if n is not None and n >= 1 else None


@dataclass(frozen=True)
class Role:
    """One model role that consumes batches: who, its keys, and its Ulysses size.

    ``mini`` is the mini-batch key (``None`` for forward-only roles); ``micro``/``micro_gpu`` the global
    (deprecated) and per-GPU micro-batch keys; ``dyn`` the dynamic-batch flag; ``tokens`` the per-GPU token
    budget key; ``sp`` the sequence-parallel size of the engine that runs it (:func:`sequence_parallel`; 0 when
    fsdpcfg does not model that engine's, or the size is not a whole number >= 1: FC302 reports it); ``section``
    that engine's config section.
    """

    name: str
    mini: str | None
    micro: str
    micro_gpu: str
    dyn: str
    tokens: str
    sp: int
    #: the config section of the engine that runs the role (its ``strategy`` and ``megatron.*`` keys)
    section: str = f"{A}.actor"
    #: the keys ``sp`` was read from (a finding judged on it names them)
    sp_keys: tuple[str, ...] = ()


def roles(ctx: Context) -> list[Role]:
    """The roles a PPO/GRPO step runs, as verl 0.9.1 builds them (verl/workers/engine_workers.py
    ``ActorRolloutRefWorker.init_model``; the critic from ``need_critic``): the actor update, the old
    log-prob pass (run by the actor engine with the rollout's log-prob keys), the reference log-prob pass
    when KL is used, and the critic's update and value pass when a critic is used."""

    def sp(section: str) -> dict[str, Any]:
        got = sequence_parallel(ctx, section)
        return {"sp": 0, "section": section} if got is None else {"sp": got[0], "section": section, "sp_keys": got[1]}

    out = [
        Role(
            "actor update",
            f"{A}.actor.ppo_mini_batch_size",
            f"{A}.actor.ppo_micro_batch_size",
            f"{A}.actor.ppo_micro_batch_size_per_gpu",
            f"{A}.actor.use_dynamic_bsz",
            f"{A}.actor.ppo_max_token_len_per_gpu",
            **sp(f"{A}.actor"),
        ),
        Role(
            "old log-prob (actor engine)",
            None,
            f"{A}.rollout.log_prob_micro_batch_size",
            f"{A}.rollout.log_prob_micro_batch_size_per_gpu",
            f"{A}.rollout.log_prob_use_dynamic_bsz",
            f"{A}.rollout.log_prob_max_token_len_per_gpu",
            **sp(f"{A}.actor"),
        ),
    ]
    if need_ref(ctx):
        out.append(
            Role(
                "reference log-prob",
                None,
                f"{A}.ref.log_prob_micro_batch_size",
                f"{A}.ref.log_prob_micro_batch_size_per_gpu",
                f"{A}.ref.log_prob_use_dynamic_bsz",
                f"{A}.ref.log_prob_max_token_len_per_gpu",
                **sp(f"{A}.ref"),
            )
        )
    if need_critic(ctx):
        out.append(
            Role(
                "critic update",
                "critic.ppo_mini_batch_size",
                "critic.ppo_micro_batch_size",
                "critic.ppo_micro_batch_size_per_gpu",
                "critic.use_dynamic_bsz",
                "critic.ppo_max_token_len_per_gpu",
                **sp("critic"),
            )
        )
        out.append(
            Role(
                "critic values",
                None,
                "critic.forward_micro_batch_size",
                "critic.forward_micro_batch_size_per_gpu",
                "critic.use_dynamic_bsz",
                "critic.forward_max_token_len_per_gpu",
                **sp("critic"),
            )
        )
    return out


def world(ctx: Context) -> int | None:
    """Trainer ranks (``trainer.nnodes x trainer.n_gpus_per_node``), ``None`` when either is not a positive
    whole number (the schema reports that)."""
    nn, g = num(ctx.get("trainer.nnodes")), num(ctx.get("trainer.n_gpus_per_node"))
    if not nn or not g or nn < 1 or g < 1:
        return None
    return nn * g


@dataclass(frozen=True)
class DataParallel:
    """The data-parallel group of one engine: ``size`` ranks, the ``derivation`` for people, and the ``keys`` the
    size comes from (the world's and the engine's parallel sizes): a finding judged on the size names them, so
    that a finding on a size the check could not know (a run script's unknown value) is left out with it."""

    size: int
    derivation: str
    keys: tuple[str, ...]


WORLD_KEYS = ("trainer.n_gpus_per_node", "trainer.nnodes")


def data_parallel(
    ctx: Context, section: str, *, strategy: str | None = None, engine_keys: str | None = None
) -> DataParallel | None:
    """The data-parallel group of the engine configured at ``section`` (``actor_rollout_ref.actor``,
    ``actor_rollout_ref.ref``, ``critic``; ``engine`` for SFT): the ranks a batch is split over, ``world //`` the
    product of the engine's parallel sizes (:func:`engine_sizes`, :data:`ENGINE_SIZES`: FSDP's and veomni's
    Ulysses size, Megatron's tensor x pipeline x context parallel size). ``strategy`` and ``engine_keys`` as for
    :func:`engine_sizes`; the group's ``keys`` are the world's and the sizes' own keys, keys of the tree judged.

    ``None`` when the world is unknown, a size is not a whole number >= 1 or their product does not divide the
    world (rule FC302 reports both), a size cannot be known, or the engine is another one (torchtitan, automodel,
    fsdp_turbo: their layouts are not modelled here, so no per-rank rule guesses; FC111 says so).
    """
    w = world(ctx)
    got = engine_sizes(ctx, section, strategy=strategy, engine_keys=engine_keys)
    if w is None or got is None:
        return None
    sizes = got[1]
    ns = [n for n in (s.size for s in sizes) if n is not None and n >= 1]
    if len(ns) < len(sizes) or w % math.prod(ns):
        return None
    dp = w // math.prod(ns)
    split = " x ".join(f"{s.name} {n}" for s, n in zip(sizes, ns, strict=True))
    return DataParallel(
        dp, f"{dp} data-parallel ranks = {w} ranks / ({split} parallel)", WORLD_KEYS + tuple(s.key for s in sizes)
    )


def world_derivation(ctx: Context) -> str:
    """``16 ranks = 2 nodes x 8 GPUs``."""
    nn, g = ctx.get("trainer.nnodes"), ctx.get("trainer.n_gpus_per_node")
    unit = "GPUs" if str(ctx.get("trainer.device")) != "cpu" else "processes"
    return f"{world(ctx)} ranks = {nn} node(s) x {g} {unit} (trainer.nnodes x trainer.n_gpus_per_node)"


def smallest_multiple(step: int, need: int) -> int:
    """The smallest positive ``m`` with ``m * step`` divisible by ``need``."""
    return need // math.gcd(step, need)


#: Divisor searches stop after this many trial divisions, so a huge number (a typo like 10**18) cannot stall
#: ``fsdpcfg check``; every number returned is still a true divisor.
_TRIALS = 1_000_000


def divisors(n: int) -> list[int]:
    """Return the divisors of ``n >= 1`` in increasing order (``[]`` for ``n < 1``).

    Found in pairs ``(d, n // d)`` for ``d`` up to ``sqrt(n)``; when ``sqrt(n)`` exceeds a million trials, only the
    pairs with ``d`` below that are returned (a partial but true list), so the call takes milliseconds for any n.
    """
    if n < 1:
        return []
    small, large = [], []
    d = 1
    while d * d <= n and d <= _TRIALS:
        if n % d == 0:
            small.append(d)
            if d != n // d:
                large.append(n // d)
        d += 1
    return small + large[::-1]


def largest_divisor_at_most(n: int, cap: int) -> int:
    """Return the largest divisor of ``n >= 1`` that is ``<= cap`` (at least 1), within :data:`_TRIALS` steps."""
    best = 1
    for d in divisors(n):
        if d <= cap:
            best = d
    return best


def src(ctx: Context, key: str) -> str:
    """``(from verl 0.9.1 default)`` / ``(from recipes/x.yaml:3)`` for messages."""
    return f"(from {ctx.source(key)})"

"""FC3xx: parallel layouts — FSDP mesh, the training engines' parallel sizes (FSDP and veomni Ulysses, Megatron
TP x PP x CP), rollout engine TP x DP x PP.

verl 0.9.1 sources:
- ``verl/workers/engine/fsdp/utils.py`` ``create_device_mesh``: ``(world // fsdp_size, fsdp_size)`` mesh.
- ``verl/workers/engine/fsdp/transformer_impl.py`` ``FSDPEngine._init_device_mesh`` (``(dp, sp)`` Ulysses
  mesh) and ``__init__`` (sequence parallelism requires remove-padding).
- ``verl/workers/engine/veomni/transformer_impl.py`` (``world // ulysses_parallel_size`` data-parallel ranks),
  ``verl/utils/config.py`` ``validate_config`` and Megatron-core ``initialize_model_parallel`` (``world //
  (tp x pp x cp)``).
- ``verl/workers/config/actor.py`` ``FSDPActorConfig.validate`` (same remove-padding rule).
- ``verl/models/transformers/monkey_patch.py`` ``apply_monkey_patch`` (Ulysses head divisibility).
- ``verl/workers/engine_workers.py`` ``ActorRolloutRefWorker.init_model`` (rollout world divisible by
  ``tp x dp x pp``); ``verl/workers/config/rollout.py`` ``RolloutConfig.__post_init__`` (pipeline parallel
  not implemented for vllm/sglang/trtllm, expert parallel = tp x dp).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from fsdpcfg.rules._common import (
    ENGINE_SIZES,
    FSDP_STRATEGIES,
    WORLD_KEYS,
    A,
    Size,
    divisors,
    engine_rollout,
    engine_sizes,
    flag,
    fsdp_sections,
    model_roles,
    num,
    rollout_name,
    src,
    val,
    world,
    world_derivation,
)
from fsdpcfg.rules.context import Context
from fsdpcfg.rules.finding import Finding
from fsdpcfg.rules.registry import rule

R = f"{A}.rollout"


@rule(
    "FC301",
    "fsdp_size must divide the world size",
    keys=[f"{A}.actor.fsdp_config.fsdp_size"],
    example=["trainer.n_gpus_per_node=8", "actor_rollout_ref.actor.fsdp_config.fsdp_size=3"],
)
def fsdp_size_divides(ctx: Context) -> Iterable[Finding]:
    """A ``fsdp_size`` between 1 and the world size builds a ``(world // fsdp_size, fsdp_size)`` HSDP mesh,
    which needs ``world % fsdp_size == 0``; 0 divides by zero. -1 (or >= world) shards over all ranks.

    Source: verl/workers/engine/fsdp/utils.py ``create_device_mesh`` (:func:`fsdpcfg.estimate.mesh.mesh_shape`).
    """
    from fsdpcfg.estimate.mesh import mesh_shape

    w = world(ctx)
    if w is None:
        return
    for sec, _ in fsdp_sections(ctx):
        key = f"{sec}.fsdp_size"
        fs = num(val(ctx, key))
        if fs is None:
            continue
        if mesh_shape(fs, w) is None:
            ok = [d for d in divisors(w) if d < w]
            yield ctx.finding(
                "FC301",
                [key, *WORLD_KEYS],
                f"{key} = {fs} does not divide the {w} ranks, so the (replicate, shard) mesh "
                f"({w} // {fs}, {fs}) cannot be built",
                f"set {key} to -1 (shard over all ranks) or one of {ok}",
                derivation=world_derivation(ctx),
            )


def _engine_roles(ctx: Context) -> list[tuple[str, str, str | None, str | None]]:
    """``(role, section, strategy, engine_keys)`` of every engine the run builds (:func:`engine_sizes`'s
    arguments): RL, each model role (:func:`model_roles`: actor, reference, critic) with its ``strategy`` key's
    engine; SFT, verl's ``engine`` section (its keys are ``engine.*``)."""
    if getattr(ctx.composed, "kind", "ppo") == "sft":
        from fsdpcfg.rules.sft_rules import fsdp_engine, sft_engine

        return [("SFT engine", "engine", "fsdp" if fsdp_engine(ctx) else sft_engine(ctx), "engine")]
    return [(role, skey.rsplit(".", 1)[0], None, None) for role, _, skey in model_roles(ctx)]


def _sp_roles(ctx: Context) -> list[tuple[str, str, int]]:
    """``(role, key, sp)`` for each FSDP role's Ulysses size that is a whole number (:func:`engine_sizes`: ``key``
    is the one the size is read from)."""
    out = []
    for role, section, _, _ in _engine_roles(ctx):
        got = engine_sizes(ctx, section)
        if got is None or got[0] not in FSDP_STRATEGIES:
            continue
        for s in got[1]:
            if s.size is not None:
                out.append((role, s.key, s.size))
    return out


#: What verl 0.9.1 does with an engine's parallel sizes, for FC302's messages: ``(how the data-parallel size is
#: derived, where, what fails when their product does not divide the world, the config class holding them)``.
_VERL_LAYOUT = {
    "fsdp": (
        "verl's FSDP engine takes world // ulysses data-parallel ranks",
        "verl/workers/engine/fsdp/transformer_impl.py get_data_parallel_size",
        "the (dp, sp) device mesh cannot be built",
        "FSDPEngineConfig",
    ),
    "veomni": (
        "verl's veomni engine takes world // ulysses_parallel_size data-parallel ranks",
        "verl/workers/engine/veomni/transformer_impl.py VeOmniEngine.__init__",
        "VeOmni's ParallelState raises (the product of its sizes must be the world)",
        "VeOmniEngineConfig",
    ),
    "megatron": (
        "verl's Megatron engine takes world // (tensor x pipeline x context) data-parallel ranks",
        "verl/workers/engine/megatron/transformer_impl.py, Megatron-core parallel_state.initialize_model_parallel; "
        "RL: verl/utils/config.py validate_config",
        "Megatron-core's initialize_model_parallel raises (RL: verl's validate_config asserts it first, without "
        "dynamic batch size)",
        "McoreEngineConfig",
    ),
}


def _schema_validates(ctx: Context, key: str) -> bool:
    """True when the schema rule reports ``key``'s range (FC103 for the RL tree, FC150 for the SFT FSDP tree), so
    FC302 does not report it a second time."""
    if getattr(ctx.composed, "kind", "ppo") == "sft":
        from fsdpcfg.rules.sft_rules import _schema_defaults, fsdp_engine

        return fsdp_engine(ctx) and key in _schema_defaults()
    from fsdpcfg.schema.keys import classify

    return classify(key) == "schema"


def _why_not_a_size(ctx: Context, s: Size, strategy: str, w: int | None, others: int) -> str | None:
    """Why ``s`` cannot run (what verl does with it; ``others``: the product of the engine's other valid sizes), or
    ``None`` when it is a whole number >= 1, absent (verl's default applies), not a number (the schema reports the
    type; a run script's unknown value is left out) or a key the schema judges."""
    if _schema_validates(ctx, s.key):
        return None
    layout, source, _, cls = _VERL_LAYOUT["fsdp" if strategy in FSDP_STRATEGIES else strategy]
    if s.value is None:
        if not ctx.is_set(s.key):
            return None
        return f"verl's {cls} field is an int and {layout} ({source}): null raises a TypeError"
    n = s.size
    if n is None or n >= 1:
        return None
    if n == 0:
        return f"{layout} ({source}): 0 divides by zero (ZeroDivisionError)"
    ranks = f"{w} // {others * n} = {w // (others * n)}" if w else "a negative number of"
    return f"{layout} ({source}): {n} gives {ranks} data-parallel ranks"


def _choices(w: int, others: int) -> list[int]:
    """The sizes that make ``others x size`` divide the ``w`` ranks."""
    return divisors(w // others) if others >= 1 and w % others == 0 else []


@rule(
    "FC302",
    "parallel sizes (Ulysses, veomni Ulysses, Megatron TP x PP x CP) are whole numbers >= 1 that divide the world",
    keys=[
        f"{A}.actor.ulysses_sequence_parallel_size",
        f"{A}.actor.fsdp_config.ulysses_sequence_parallel_size",
        f"{A}.actor.veomni.ulysses_parallel_size",
        *(f"{A}.actor.megatron.{leaf}" for leaf, _, _ in ENGINE_SIZES["megatron"]),
        "engine.ulysses_sequence_parallel_size",
    ],
    example=["trainer.n_gpus_per_node=8", "actor_rollout_ref.actor.ulysses_sequence_parallel_size=3"],
    kinds=("ppo", "sft"),
)
def parallel_sizes_divide_world(ctx: Context) -> Iterable[Finding]:
    """Each engine's parallel sizes (:data:`fsdpcfg.rules._common.ENGINE_SIZES`) multiply with its data-parallel
    size to the world: FSDP builds a ``(world // sp, sp)`` Ulysses mesh, veomni takes ``world //
    ulysses_parallel_size`` data-parallel ranks, Megatron ``world // (tp x pp x cp)``. A size must be a whole
    number >= 1 (0 divides by zero, a negative size gives a negative data-parallel size, null is a TypeError:
    verl's config classes take them unchecked), and the product must divide the world. A key absent from the
    config reads as verl's default. Run for every role the run builds (actor, reference, critic; the SFT tree's
    ``engine.*``), on the key the engine reads (:func:`fsdpcfg.rules._common.engine_sizes`); a key the schema
    judges (``actor.ulysses_sequence_parallel_size``, SFT ``engine.ulysses_sequence_parallel_size``) has its range
    reported by FC103/FC150.

    Source: verl/workers/engine/fsdp/transformer_impl.py ``_init_device_mesh`` and ``get_data_parallel_size``;
    verl/workers/engine/veomni/transformer_impl.py ``VeOmniEngine.__init__`` (``dp_size = world_size //
    ulysses_parallel_size``, VeOmni ``ParallelState``: the sizes' product must equal the world);
    verl/utils/config.py ``validate_config`` (``n_gpus % (tp x pp x cp)`` asserted without dynamic batch size) and
    Megatron-core ``parallel_state.initialize_model_parallel`` (world not divisible by tp x pp x cp: RuntimeError);
    verl/workers/config/engine.py ``McoreEngineConfig``/``VeOmniEngineConfig``/``FSDPEngineConfig`` (int fields,
    default 1, no range check in ``__post_init__``).
    """
    w = world(ctx)
    seen: set[tuple[str, object]] = set()  # (leaf, value) reported: a copy of it (the ref's ${oc.select:...}) is not
    for role, section, strategy, engine_keys in _engine_roles(ctx):
        got = engine_sizes(ctx, section, strategy=strategy, engine_keys=engine_keys)
        if got is None:
            continue
        engine, sizes = got
        _, source, failure, _ = _VERL_LAYOUT["fsdp" if engine in FSDP_STRATEGIES else engine]
        bad = []
        for s in sizes:
            others = math.prod(n for x in sizes if x is not s and (n := x.size) is not None and n >= 1)
            if why := _why_not_a_size(ctx, s, engine, w, others):
                bad.append((s, why, others))
        for s, why, others in bad:
            if _copied(ctx, s.key, s.value, seen):
                continue
            ok = _choices(w, others) if w else []
            shown = "null" if s.value is None else s.value
            yield ctx.finding(
                "FC302",
                [s.key],
                f"{role}: {s.key} = {shown} {src(ctx, s.key)} is not a parallel size (a whole number >= 1): {why}",
                f"set {s.key} to a whole number >= 1"
                + (f": one of {ok}" if ok else "")
                + f" (1: no {s.name} parallelism)",
                derivation=world_derivation(ctx) if w else None,
            )
        ns = [n for n in (s.size for s in sizes) if n is not None and n >= 1]
        if bad or w is None or len(ns) < len(sizes) or w % math.prod(ns) == 0:
            continue
        if all([_copied(ctx, s.key, n, seen) for s, n in zip(sizes, ns, strict=True)]):
            continue
        prod = math.prod(ns)
        what = " x ".join(f"{s.key} = {n}" for s, n in zip(sizes, ns, strict=True))
        if len(sizes) > 1:
            what += f" = {prod} ranks"
        fixes = [f"{s.key} to one of {ok}" for s, n in zip(sizes, ns, strict=True) if (ok := _choices(w, prod // n))]
        yield ctx.finding(
            "FC302",
            [*(s.key for s in sizes), *WORLD_KEYS],
            f"{role}: {what} does not divide the {w} ranks: {failure} ({source})",
            ("set " + ", or ".join(fixes) if fixes else "change the sizes")
            + (f", or run on a multiple of {prod} ranks" if len(sizes) > 1 else ""),
            derivation=world_derivation(ctx),
        )


def _copied(ctx: Context, key: str, value: object, seen: set[tuple[str, object]]) -> bool:
    """True when ``key``'s value is a copy (an interpolation, ``ctx.derived``) of a size already reported with the
    same leaf and value, the reference's ``${oc.select:actor_rollout_ref.actor.megatron.*,1}``: fixing that key
    fixes both. Records ``key`` as reported otherwise."""
    leaf = (key.rsplit(".", 1)[-1], value)
    if key in getattr(ctx, "derived", frozenset()) and leaf in seen:
        return True
    seen.add(leaf)
    return False


@rule(
    "FC303",
    "sequence parallelism requires remove-padding",
    keys=[f"{A}.model.use_remove_padding", f"{A}.actor.ulysses_sequence_parallel_size"],
    example=[
        "actor_rollout_ref.model.use_remove_padding=false",
        "actor_rollout_ref.actor.ulysses_sequence_parallel_size=2",
    ],
)
def sp_needs_rmpad(ctx: Context) -> Iterable[Finding]:
    """Ulysses is implemented on the packed (remove-padding) path only.

    Source: verl/workers/config/actor.py ``FSDPActorConfig.validate`` and
    verl/workers/engine/fsdp/transformer_impl.py ``FSDPEngine.__init__`` (ValueError). Case c08.
    """
    for role, key, sp in _sp_roles(ctx):
        if sp <= 1:
            continue
        rk = "critic.model.use_remove_padding" if role == "critic" else f"{A}.model.use_remove_padding"
        if not flag(val(ctx, rk)):
            yield ctx.finding(
                "FC303",
                [rk, key],
                f"{role}: {key} = {sp} but {rk} = false {src(ctx, rk)}; sequence parallelism runs only on the "
                f"remove-padding path",
                f"set {rk}=true (patches=remove_padding), or {key}=1",
            )


@rule(
    "FC304",
    "Ulysses size must fit the model's attention and KV heads",
    keys=[f"{A}.actor.ulysses_sequence_parallel_size"],
    example=[
        "trainer.nnodes=2",
        "trainer.n_gpus_per_node=8",
        "actor_rollout_ref.actor.ulysses_sequence_parallel_size=16",
    ],
)
def ulysses_heads(ctx: Context) -> Iterable[Finding]:
    """Ulysses splits attention heads over the ``sp`` ranks: ``num_attention_heads % sp == 0``, and
    ``num_key_value_heads % sp == 0`` or ``sp % num_key_value_heads == 0`` (KV heads are then repeated).
    The valid sizes also divide the world. Heads are read from config.json (``text_config`` for VLMs).

    Source: verl/models/transformers/monkey_patch.py ``apply_monkey_patch`` (asserts). Case c07.
    """
    m = ctx.model
    if m is None or m.config is None:
        return
    tc = m.text_config
    heads = num(tc.get("num_attention_heads"))
    kv = num(tc.get("num_key_value_heads")) or heads
    if not heads or not kv:
        return
    w = world(ctx) or 1
    for role, key, sp in _sp_roles(ctx):
        if sp <= 1:
            continue
        bad = []
        if heads % sp:
            bad.append(f"num_attention_heads {heads} is not divisible by {sp}")
        if kv % sp and sp % kv:
            bad.append(f"num_key_value_heads {kv} and {sp} do not divide one another")
        if bad:
            valid = [d for d in divisors(heads) if w % d == 0 and (kv % d == 0 or d % kv == 0)]
            yield ctx.finding(
                "FC304",
                [key],
                f"{role}: {key} = {sp}: "
                + "; ".join(bad)
                + f" ({m.architectures[0] if m.architectures else m.model_type})",
                f"set {key} to one of {valid}",
                derivation=f"valid = divisors of {heads} heads that divide {w} ranks and fit {kv} KV heads",
            )


@rule(
    "FC305",
    "rollout TP x DP x PP must divide the world and fit the GPUs",
    keys=[
        f"{R}.tensor_model_parallel_size",
        f"{R}.data_parallel_size",
        f"{R}.pipeline_model_parallel_size",
        "trainer.n_gpus_per_node",
    ],
    example=["launcher=verl", "rollout=vllm", "trainer.n_gpus_per_node=1"],
)
def rollout_layout(ctx: Context) -> Iterable[Finding]:
    """Each inference engine replica spans ``tp x dp x pp`` GPUs; the trainer world must be a whole number of
    replicas. A replica larger than one node spans the inter-node network (warning).

    Source: verl/workers/engine_workers.py ``ActorRolloutRefWorker.init_model`` (``assert world_size %
    infer_world_size == 0``). Case c06 (verl's default TP is 2, silently inherited on one GPU).
    """
    if not engine_rollout(ctx):
        return
    w = world(ctx)
    tp, dp, pp = (
        num(val(ctx, f"{R}.{k}"))
        for k in ("tensor_model_parallel_size", "data_parallel_size", "pipeline_model_parallel_size")
    )
    if w is None or not tp or not dp or not pp or min(tp, dp, pp) < 1:
        return
    size = tp * dp * pp
    tk = f"{R}.tensor_model_parallel_size"
    deriv = f"replica = TP {tp} x DP {dp} x PP {pp} = {size} GPUs; {world_derivation(ctx)}"
    if w % size:
        ok = [d for d in divisors(w) if d * dp * pp <= w and w % (d * dp * pp) == 0]
        yield ctx.finding(
            "FC305",
            [tk, *WORLD_KEYS, f"{R}.data_parallel_size"],
            f"rollout replica of {size} GPUs (tensor_model_parallel_size = {tp} {src(ctx, tk)}) does not fit "
            f"evenly into the {w} trainer ranks",
            f"set {tk} to one of {ok}" + (" (1 on a single GPU)" if w == 1 else ""),
            derivation=deriv,
        )
        return
    g = num(ctx.get("trainer.n_gpus_per_node")) or w
    if size > g:
        yield ctx.finding(
            "FC305",
            [tk, "trainer.n_gpus_per_node"],
            f"rollout replica of {size} GPUs is larger than one node ({g} GPUs): its collectives cross nodes",
            f"keep tp x dp x pp <= {g} unless the model does not fit one node",
            severity="warning",
            derivation=deriv,
        )


@rule(
    "FC306",
    "rollout engines do not implement pipeline parallelism; expert parallel = TP x DP",
    keys=[f"{R}.pipeline_model_parallel_size", f"{R}.expert_parallel_size"],
    example=["launcher=verl", "rollout=vllm", "actor_rollout_ref.rollout.pipeline_model_parallel_size=2"],
)
def rollout_pp_ep(ctx: Context) -> Iterable[Finding]:
    """``pipeline_model_parallel_size > 1`` raises NotImplementedError for vllm/sglang/trtllm, and
    ``expert_parallel_size > 1`` must equal ``tp x dp`` (except trtllm).

    Source: verl/workers/config/rollout.py ``RolloutConfig.__post_init__``.
    """
    if not engine_rollout(ctx):
        return
    name = rollout_name(ctx)
    pk, ek = f"{R}.pipeline_model_parallel_size", f"{R}.expert_parallel_size"
    pp, ep = num(val(ctx, pk)), num(val(ctx, ek))
    if pp and pp > 1:
        yield ctx.finding(
            "FC306",
            [pk],
            f"{pk} = {pp}: verl 0.9.1's {name} rollout does not implement pipeline parallelism",
            f"set {pk}=1 and raise {R}.tensor_model_parallel_size instead",
        )
    tp, dp = num(val(ctx, f"{R}.tensor_model_parallel_size")), num(val(ctx, f"{R}.data_parallel_size"))
    if name != "trtllm" and ep and ep > 1 and tp and dp and ep != tp * dp:
        yield ctx.finding(
            "FC306",
            [ek, f"{R}.tensor_model_parallel_size", f"{R}.data_parallel_size"],
            f"{ek} = {ep} must equal tensor_model_parallel_size x data_parallel_size = {tp} x {dp}",
            f"set {ek}={tp * dp}",
        )


@rule(
    "FC307",
    "rollout tensor-parallel size must fit the model's attention and KV heads (vLLM, SGLang)",
    keys=[f"{R}.tensor_model_parallel_size", f"{A}.model.path"],
    example=[
        "launcher=verl",
        "rollout=vllm",
        "trainer=gpu_8x",
        "actor_rollout_ref.rollout.tensor_model_parallel_size=4",
        "actor_rollout_ref.model.path=<Qwen2.5-0.5B-Instruct folder>",
    ],
)
def rollout_tp_heads(ctx: Context) -> Iterable[Finding]:
    """vLLM and SGLang shard attention by heads over the rollout's tensor-parallel ranks: ``num_attention_heads
    % tp == 0``, and the KV heads are either split (``num_key_value_heads % tp == 0``) or replicated
    (``tp % num_key_value_heads == 0``). Otherwise the engine refuses the model when verl starts the rollout
    server, after the trainer workers and the model are up. Heads are read from config.json (``text_config``
    for VLMs).

    Source: vLLM ``vllm/config`` ``ModelConfig.verify_with_parallel_config`` ("Total number of attention heads
    (N) must be divisible by tensor parallel size (T)") and ``vllm/model_executor/layers/linear.py``
    ``QKVParallelLinear`` (``divide(total_num_kv_heads, tp_size)`` or ``divide(tp_size, total_num_kv_heads)``);
    SGLang ``python/sglang/srt/layers/linear.py`` ``QKVParallelLinear`` (the same two ``divide`` calls).
    Public reports: vllm-project/vllm#2652, #414, #4232 (40 heads on TP 6), #11797 (Qwen2-7B: 28 heads, 4 KV
    heads, cannot run on 8 GPUs); THU-KEG/AdaptThink#1 (DeepSeek-R1-Distill-Qwen-7B on TP 8, a verl-based
    project). verl passes ``rollout.tensor_model_parallel_size`` as the engine's ``tensor_parallel_size``
    (verl/workers/rollout/vllm_rollout/vllm_async_server.py, sglang_rollout/async_sglang_server.py).
    """
    if rollout_name(ctx) not in ("vllm", "sglang"):
        return
    m = ctx.model
    if m is None or m.status != "ok" or m.config is None or m.config_problems:
        return
    tc = m.text_config
    heads = num(tc.get("num_attention_heads"))
    kv = num(tc.get("num_key_value_heads")) or heads
    tk = f"{R}.tensor_model_parallel_size"
    tp = num(val(ctx, tk))
    if not heads or not kv or heads < 1 or kv < 1 or not tp or tp <= 1:
        return
    bad = []
    if heads % tp:
        bad.append(f"num_attention_heads = {heads} is not divisible by {tp}")
    if kv % tp and tp % kv:
        bad.append(f"num_key_value_heads = {kv} and {tp} do not divide one another")
    if not bad:
        return
    w = world(ctx) or tp
    valid = [d for d in divisors(heads) if w % d == 0 and (kv % d == 0 or d % kv == 0)]
    arch = m.architectures[0] if m.architectures else m.model_type
    yield ctx.finding(
        "FC307",
        [tk, f"{A}.model.path"],
        f"{tk} = {tp} {src(ctx, tk)}: " + "; ".join(bad) + f" ({arch}, {m.folder}/config.json); "
        f"{rollout_name(ctx)} refuses to shard the model when the rollout starts",
        f"set {tk} to one of {valid}",
        derivation=f"valid = divisors of {heads} attention heads that divide {w} ranks and fit {kv} KV heads",
    )

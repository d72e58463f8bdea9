"""FC3xx: parallel layouts — FSDP mesh, Ulysses sequence parallelism, rollout engine TP x DP x PP.

verl 0.9.1 sources:
- ``verl/workers/engine/fsdp/utils.py`` ``create_device_mesh``: ``(world // fsdp_size, fsdp_size)`` mesh.
- ``verl/workers/engine/fsdp/transformer_impl.py`` ``FSDPEngine._init_device_mesh`` (``(dp, sp)`` Ulysses
  mesh) and ``__init__`` (sequence parallelism requires remove-padding).
- ``verl/workers/config/actor.py`` ``FSDPActorConfig.validate`` (same remove-padding rule).
- ``verl/models/transformers/monkey_patch.py`` ``apply_monkey_patch`` (Ulysses head divisibility).
- ``verl/workers/engine_workers.py`` ``ActorRolloutRefWorker.init_model`` (rollout world divisible by
  ``tp x dp x pp``); ``verl/workers/config/rollout.py`` ``RolloutConfig.__post_init__`` (pipeline parallel
  not implemented for vllm/sglang/trtllm, expert parallel = tp x dp).
"""

from __future__ import annotations

from collections.abc import Iterable

from fsdpcfg.rules._common import (
    WORLD_KEYS,
    A,
    actor_sp,
    divisors,
    engine_rollout,
    flag,
    fsdp_sections,
    need_critic,
    need_ref,
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

    Source: verl/workers/engine/fsdp/utils.py ``create_device_mesh`` (:func:`fsdpcfg.plan.mesh.mesh_shape`).
    """
    from fsdpcfg.plan.mesh import mesh_shape

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


def _sp_roles(ctx: Context) -> list[tuple[str, str, int]]:
    """``(role, key, sp)`` for each role that runs a Ulysses mesh."""
    a = actor_sp(ctx)
    akey = f"{A}.actor.ulysses_sequence_parallel_size"
    if num(val(ctx, akey)) in (None, 1) and a > 1:
        akey = f"{A}.actor.fsdp_config.ulysses_sequence_parallel_size"
    out = [("actor", akey, a)]
    if need_ref(ctx):
        out.append(
            (
                "ref",
                f"{A}.ref.ulysses_sequence_parallel_size",
                num(val(ctx, f"{A}.ref.ulysses_sequence_parallel_size")) or 1,
            )
        )
    if need_critic(ctx):
        out.append(
            (
                "critic",
                "critic.ulysses_sequence_parallel_size",
                num(val(ctx, "critic.ulysses_sequence_parallel_size")) or 1,
            )
        )
    return out


@rule(
    "FC302",
    "Ulysses sequence-parallel size must divide the world size",
    keys=[f"{A}.actor.ulysses_sequence_parallel_size"],
    example=["trainer.n_gpus_per_node=8", "actor_rollout_ref.actor.ulysses_sequence_parallel_size=3"],
)
def ulysses_divides_world(ctx: Context) -> Iterable[Finding]:
    """Each role's engine builds a ``(world // sp, sp)`` device mesh for Ulysses; ``sp`` must divide the
    world, and data-parallel size is ``world // sp``.

    Source: verl/workers/engine/fsdp/transformer_impl.py ``_init_device_mesh`` and
    ``get_data_parallel_size``.
    """
    w = world(ctx)
    if w is None:
        return
    for role, key, sp in _sp_roles(ctx):
        if sp < 1 or w % sp:
            yield ctx.finding(
                "FC302",
                [key, *WORLD_KEYS],
                f"{role}: {key} = {sp} does not divide the {w} ranks; the (dp, sp) mesh cannot be built",
                f"set {key} to one of {divisors(w)}",
                derivation=world_derivation(ctx),
            )


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

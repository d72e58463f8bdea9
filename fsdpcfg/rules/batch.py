"""FC2xx: batch arithmetic for every role (actor update, old log-prob, reference log-prob, critic).

What verl 0.9.1 does with the batch sizes, and where it checks them (all re-derived here before launch):

- ``verl/trainer/ppo/ray_trainer.py`` ``_update_actor``/``_update_critic``: the mini batch is counted in
  prompts and normalised as ``ppo_mini_batch_size x rollout.n`` sequences.
- ``verl/workers/engine_workers.py`` ``TrainingWorker.train_batch``: ``mini x n`` must divide by the
  data-parallel size ``world // ulysses_sp`` (``FSDPEngine.get_data_parallel_size``), giving the per-rank
  mini batch; ``verl/utils/tensordict_utils.py`` ``make_iterator``: the per-rank batch must divide by it.
- ``verl/workers/engine/utils.py`` ``prepare_micro_batches``: the per-rank batch must divide by
  ``micro_batch_size_per_gpu``; with dynamic batch size ``max_token_len_per_gpu x sp`` must hold the
  longest sequence (``verl/utils/seqlen_balancing.py`` ``rearrange_micro_batches``).
- ``verl/utils/config.py`` ``validate_config``: ``train_batch_size x n`` divisible by the GPU count; one
  micro-batch form for the rollout and reference log-prob passes.
- ``verl/workers/config/actor.py`` ``ActorConfig.__post_init__``/``validate``, ``critic.py``
  ``CriticConfig.__post_init__``/``validate``: one micro-batch form, ``train >= mini``, ``mini % micro``,
  ``micro x sp >= n_gpus`` for the global form.
- ``verl/workers/engine_workers.py`` ``ActorRolloutRefWorker.init_model``: actor and rollout dynamic-batch
  flags must agree; the per-GPU micro batch keys must be set (the deprecated global form is not read).
"""

from __future__ import annotations

from collections.abc import Iterable

from fsdpcfg.rules._common import (
    A,
    DataParallel,
    Role,
    data_parallel,
    flag,
    largest_divisor_at_most,
    num,
    roles,
    smallest_multiple,
    src,
    val,
    world,
    world_derivation,
)
from fsdpcfg.rules.context import Context
from fsdpcfg.rules.finding import Finding
from fsdpcfg.rules.registry import rule

TBS, N = "data.train_batch_size", f"{A}.rollout.n"


def _train_n(ctx: Context) -> tuple[int, int] | None:
    t, n = num(ctx.get(TBS)), num(ctx.get(N))
    if not t or not n or t < 1 or n < 1:
        return None
    return t, n


@rule(
    "FC201",
    "train_batch_size x rollout.n must split evenly over the ranks",
    keys=[TBS, N],
    example=[
        "launcher=verl",
        "trainer.nnodes=2",
        "trainer.n_gpus_per_node=8",
        "data.train_batch_size=4",
        "actor_rollout_ref.rollout.n=2",
    ],
)
def train_batch_divisible(ctx: Context) -> Iterable[Finding]:
    """Every step's ``train_batch_size x n`` sequences are dispatched evenly over the data-parallel ranks.

    With a Megatron actor the unit is its data-parallel size (``world / (tp x pp x cp)``) times
    ``ppo_micro_batch_size_per_gpu`` without dynamic batch size, and the data-parallel size with it.

    Source: verl/utils/config.py ``validate_config`` (``real_train_batch_size % minimal_bsz``: ``n_gpus``, or
    ``megatron_dp x ppo_micro_batch_size_per_gpu`` for megatron), and the dispatch/``_balance_batch(equal_size=True)``
    in verl/trainer/ppo/ray_trainer.py. Case c01.
    """
    tn, w = _train_n(ctx), world(ctx)
    if tn is None or w is None:
        return
    t, n = tn
    if str(val(ctx, f"{A}.actor.strategy")) == "megatron":
        yield from _megatron_train_batch(ctx, t, n)
        return
    if (t * n) % w:
        good = smallest_multiple(n, w)
        yield ctx.finding(
            "FC201",
            [TBS, N, "trainer.n_gpus_per_node", "trainer.nnodes"],
            f"{TBS} x {N} = {t} x {n} = {t * n} sequences cannot be split evenly over {w} ranks",
            f"make {TBS} a multiple of {good} (then {good} x {n} sequences divide by {w} ranks), "
            f"or change {N} or the number of GPUs",
            derivation=f"{t * n} sequences = {t} prompts x n={n}; {world_derivation(ctx)}",
        )


def _megatron_train_batch(ctx: Context, t: int, n: int) -> Iterable[Finding]:
    """FC201 for a Megatron actor: ``train x n`` must divide by its data-parallel size times the per-GPU micro
    batch (verl's ``minimal_bsz``), or by the data-parallel size alone with dynamic batch size."""
    got = data_parallel(ctx, f"{A}.actor")
    if got is None:
        return
    dp, how = got.size, got.derivation
    micro_key = f"{A}.actor.ppo_micro_batch_size_per_gpu"
    micro = 1 if flag(val(ctx, f"{A}.actor.use_dynamic_bsz")) else num(val(ctx, micro_key))
    if not micro or micro < 1:
        return  # FC203 reports a missing micro batch
    unit = dp * micro
    if (t * n) % unit:
        good = smallest_multiple(n, unit)
        per = f" x {micro_key} = {micro}" if micro > 1 else ""
        yield ctx.finding(
            "FC201",
            [TBS, N, micro_key, *got.keys],
            f"{TBS} x {N} = {t} x {n} = {t * n} sequences cannot be split evenly over {dp} data-parallel "
            f"ranks{per} ({unit} sequences)",
            f"make {TBS} a multiple of {good} (then {good} x {n} sequences divide by {unit}), or change {N}, "
            f"{micro_key} or the model-parallel sizes",
            derivation=f"{t * n} sequences = {t} prompts x n={n}; {how}; {world_derivation(ctx)}",
        )


def _update_roles(ctx: Context) -> list[Role]:
    return [r for r in roles(ctx) if r.mini is not None]


@rule(
    "FC202",
    "mini batch must not exceed, and must divide, the train batch",
    keys=[TBS, f"{A}.actor.ppo_mini_batch_size", "critic.ppo_mini_batch_size"],
    example=["data.train_batch_size=64", "actor_rollout_ref.actor.ppo_mini_batch_size=512"],
)
def mini_vs_train(ctx: Context) -> Iterable[Finding]:
    """``ppo_mini_batch_size`` counts prompts like ``train_batch_size``; it must be <= and divide it.

    Source: verl/workers/config/actor.py ``ActorConfig.validate`` and critic.py ``CriticConfig.validate``
    (``train_batch_size >= ppo_mini_batch_size``); verl/utils/tensordict_utils.py ``make_iterator``
    (``batch % mini_batch == 0``). Case c02. With dynamic batch size verl skips its own check, but a mini batch
    larger than the train batch then gives zero optimizer steps, so it is checked for every role.
    """
    tn = _train_n(ctx)
    if tn is None:
        return
    t, n = tn
    for r in _update_roles(ctx):
        assert r.mini is not None  # _update_roles keeps the roles that have a mini batch
        m = num(val(ctx, r.mini))
        if m is None or m < 1:
            if m is not None:
                yield ctx.finding(
                    "FC202",
                    [r.mini],
                    f"{r.mini} = {m} must be a positive number of prompts",
                    f"set {r.mini} to a divisor of {TBS} = {t}",
                )
            continue
        if m > t:
            hint = f" ({m} / {n} = {m // n} if you multiplied by n)" if n > 1 and m % n == 0 else ""
            yield ctx.finding(
                "FC202",
                [r.mini, TBS],
                f"{r.name}: {r.mini} = {m} is larger than {TBS} = {t}; "
                f"both count prompts, verl multiplies each by {N} = {n} itself",
                f"set {r.mini} <= {t}{hint}, a divisor of {t}",
                derivation=f"mini batch = {m} prompts x n={n} = {m * n} sequences > train batch = {t * n} sequences",
            )
        elif t % m:
            yield ctx.finding(
                "FC202",
                [r.mini, TBS],
                f"{r.name}: {TBS} = {t} is not a multiple of {r.mini} = {m}; the per-rank batch cannot be cut "
                f"into whole mini batches",
                f"set {r.mini} to a divisor of {t} (e.g. {largest_divisor_at_most(t, m)})",
                derivation=f"{t} prompts / {m} prompts per mini batch = {t / m:.2f} mini batches",
            )


@rule(
    "FC203",
    "exactly one micro-batch form per role (the *_per_gpu one)",
    keys=[f"{A}.actor.ppo_micro_batch_size", f"{A}.actor.ppo_micro_batch_size_per_gpu"],
    example=[
        "actor_rollout_ref.actor.ppo_micro_batch_size=16",
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2",
    ],
)
def micro_batch_forms(ctx: Context) -> Iterable[Finding]:
    """Each role takes its micro batch either in the deprecated global form or per GPU, never both; without
    dynamic batch size one of them is required, and verl 0.9.1's engine workers read only the per-GPU key.

    Source: verl/workers/config/actor.py ``ActorConfig.__post_init__``, critic.py
    ``CriticConfig._check_mutually_exclusive``, verl/utils/config.py ``validate_config``
    ``check_mutually_exclusive`` (rollout and ref), verl/workers/engine_workers.py ``init_model`` (asserts the
    ``*_per_gpu`` keys are not None). Case c05.
    """
    w = world(ctx)
    for r in roles(ctx):
        if r.name == "critic values":
            continue  # its keys default to the critic update's (verl checks only those)
        g, pg = val(ctx, r.micro), val(ctx, r.micro_gpu)
        dyn = flag(val(ctx, r.dyn))
        if g is not None and pg is not None:
            yield ctx.finding(
                "FC203",
                [r.micro, r.micro_gpu],
                f"{r.name}: both {r.micro} = {g} and {r.micro_gpu} = {pg} are set; they are mutually exclusive "
                f"(the global form is deprecated)",
                f"remove {r.micro} and keep {r.micro_gpu}",
            )
        elif g is None and pg is None and not dyn:
            yield ctx.finding(
                "FC203",
                [r.micro_gpu, r.dyn],
                f"{r.name}: neither {r.micro_gpu} nor {r.micro} is set and {r.dyn} is false",
                f"set {r.micro_gpu} (sequences per GPU per forward pass), or enable {r.dyn}",
            )
        elif g is not None and pg is None and not dyn:
            gi = num(g)
            per = f"{gi // w}" if gi and w and gi % w == 0 else "N"
            if ctx.launcher == "verl":
                yield ctx.finding(
                    "FC203",
                    [r.micro, r.micro_gpu],
                    f"{r.name}: only the deprecated global {r.micro} = {g} is set; verl 0.9.1's engine workers "
                    f"read only {r.micro_gpu} and fail when it is None",
                    f"replace it with {r.micro_gpu}={per}",
                    derivation=f"{g} / {w} ranks = {per}" if per != "N" else None,
                )
            else:
                yield ctx.finding(
                    "FC203",
                    [r.micro, r.micro_gpu],
                    f"{r.name}: {r.micro} = {g} is the deprecated global form",
                    f"use {r.micro_gpu}={per} instead",
                    severity="warning",
                )


def _sp_name(r: Role) -> str:
    """How a message names the role's sequence-parallel size: ``ulysses_sp`` (FSDP), else its key's leaf
    (``context_parallel_size``, ``ulysses_parallel_size``)."""
    leaf = r.sp_keys[0].rsplit(".", 1)[-1] if r.sp_keys else ""
    return "ulysses_sp" if leaf in ("", "ulysses_sequence_parallel_size") else leaf


def _dp(ctx: Context, r: Role) -> DataParallel | None:
    """The data-parallel group of the engine that runs ``r`` (:func:`fsdpcfg.rules._common.data_parallel`)."""
    return data_parallel(ctx, r.section)


@rule(
    "FC204",
    "normalised mini batch (mini x n / data-parallel ranks) must be a positive whole number",
    keys=[f"{A}.actor.ppo_mini_batch_size", N, "critic.ppo_mini_batch_size"],
    example=[
        "launcher=verl",
        "trainer.n_gpus_per_node=8",
        "data.train_batch_size=8",
        "actor_rollout_ref.actor.ppo_mini_batch_size=2",
        "actor_rollout_ref.rollout.n=1",
    ],
)
def normalised_mini(ctx: Context) -> Iterable[Finding]:
    """The mini batch in sequences, ``ppo_mini_batch_size x n``, is split over ``world // ulysses_sp``
    data-parallel ranks; it must divide evenly and give each rank at least one micro batch.

    Source: verl/trainer/ppo/ray_trainer.py ``_update_actor`` (``ppo_mini_batch_size * rollout.n``),
    verl/workers/engine_workers.py ``TrainingWorker.train_batch`` (``mini_batch_size % dp_size == 0``),
    verl/workers/engine/fsdp/transformer_impl.py ``get_data_parallel_size``. Case c04 (older verl looped
    forever on a per-rank mini batch of 0).
    """
    tn = _train_n(ctx)
    if tn is None:
        return
    t, n = tn
    for r in _update_roles(ctx):
        assert r.mini is not None  # _update_roles keeps the roles that have a mini batch
        m, group = num(val(ctx, r.mini)), _dp(ctx, r)
        if not m or m < 1 or group is None or m > t:
            continue
        dp = group.size
        seqs = m * n
        if seqs % dp == 0:
            continue
        micro = 1 if flag(val(ctx, r.dyn)) else (num(val(ctx, r.micro_gpu)) or 1)
        step = smallest_multiple(n, dp * micro)
        best = step  # the smallest mini batch with m x n divisible by dp x micro (step divides t or nothing does)
        yield ctx.finding(
            "FC204",
            [r.mini, N, *group.keys],
            f"{r.name}: mini batch {seqs} sequences ({r.mini} = {m} x n = {n}) over {dp} data-parallel ranks is "
            f"{seqs / dp:g} per rank, not a whole number" + (" (rounds down to 0)" if seqs < dp else ""),
            f"set {r.mini}={best}: the smallest mini batch that gives every rank whole micro batches of "
            f"{micro} ({best} x {n} / {dp} = {best * n // dp} per rank)",
            derivation=f"{seqs} = {m} x n={n}; {group.derivation}; {world_derivation(ctx)}",
        )


@rule(
    "FC205",
    "the per-rank batch of each role must be a whole number of micro batches",
    keys=[
        f"{A}.actor.ppo_micro_batch_size_per_gpu",
        f"{A}.rollout.log_prob_micro_batch_size_per_gpu",
        f"{A}.ref.log_prob_micro_batch_size_per_gpu",
        "critic.ppo_micro_batch_size_per_gpu",
    ],
    example=[
        "launcher=verl",
        "trainer.n_gpus_per_node=8",
        "data.train_batch_size=16",
        "actor_rollout_ref.rollout.n=1",
        "actor_rollout_ref.actor.ppo_mini_batch_size=16",
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
    ],
)
def per_rank_micro(ctx: Context) -> Iterable[Finding]:
    """Per rank, the update roles cut their mini batch (``mini x n / dp``) and the forward-only roles the whole
    batch (``train x n / dp``) into micro batches of ``*_micro_batch_size_per_gpu``: it must be at least one
    micro batch and divide evenly. For the global form, ``mini % micro`` and ``micro x sp >= n_gpus``.

    Source: verl/workers/engine/utils.py ``prepare_micro_batches`` (``total % micro_batch_size_per_gpu``),
    verl/workers/config/actor.py ``ActorConfig.validate`` (global form). Case c03: 16 x 1 / 8 = 2 per rank
    < micro 4, gradient accumulation 0.
    """
    tn, w = _train_n(ctx), world(ctx)
    if tn is None or w is None:
        return
    t, n = tn
    for r in roles(ctx):
        group = _dp(ctx, r)
        if group is None or flag(val(ctx, r.dyn)):
            continue
        dp = group.size
        g, micro = num(val(ctx, r.micro)), num(val(ctx, r.micro_gpu))
        if r.mini is not None:
            m = num(val(ctx, r.mini))
            if not m or m < 1 or m > t or (m * n) % dp:
                continue  # FC202/FC204
            per, what, bkey = m * n // dp, f"mini batch ({r.mini} = {m} x n = {n} / {dp} ranks)", r.mini
            if micro is None and g is not None and g > 0:
                if m % g or (r.sp > 0 and g * r.sp < w):
                    yield ctx.finding(
                        "FC205",
                        [r.micro, r.mini, *group.keys],
                        f"{r.name}: global {r.micro} = {g} must divide {r.mini} = {m} and x ulysses_sp {r.sp} "
                        f"be >= {w} ranks",
                        f"use {r.micro_gpu} instead (e.g. {r.micro_gpu}=1)",
                    )
                continue
        else:
            if (t * n) % dp:
                continue  # FC201
            per, what, bkey = t * n // dp, f"batch ({TBS} = {t} x n = {n} / {dp} ranks)", TBS
        if micro is None or micro < 1:
            if micro is not None:
                yield ctx.finding(
                    "FC205", [r.micro_gpu], f"{r.micro_gpu} = {micro} must be >= 1", f"set {r.micro_gpu}=1 or more"
                )
            continue
        if per % micro:
            acc = per / micro
            yield ctx.finding(
                "FC205",
                [r.micro_gpu, bkey, *group.keys],
                f"{r.name}: per-rank {what} = {per} sequences is "
                + (
                    f"smaller than {r.micro_gpu} = {micro}"
                    if per < micro
                    else f"not a multiple of {r.micro_gpu} = {micro}"
                )
                + f" ({acc:g} micro batches)",
                f"set {r.micro_gpu}={largest_divisor_at_most(per, micro)} (divides {per}), or raise {bkey}",
                derivation=f"{per} = {what}; {group.derivation}; {world_derivation(ctx)}",
            )


@rule(
    "FC206",
    "actor and rollout log-prob must agree on dynamic batch size",
    keys=[f"{A}.actor.use_dynamic_bsz", f"{A}.rollout.log_prob_use_dynamic_bsz"],
    example=[
        "actor_rollout_ref.actor.use_dynamic_bsz=true",
        "actor_rollout_ref.rollout.log_prob_use_dynamic_bsz=false",
    ],
)
def dynamic_bsz_agreement(ctx: Context) -> Iterable[Finding]:
    """The actor engine runs both the update and the old log-prob pass; verl asserts the two flags are equal.

    Source: verl/workers/engine_workers.py ``ActorRolloutRefWorker.init_model``
    (``assert actor.use_dynamic_bsz == rollout.log_prob_use_dynamic_bsz``), minutes after launch. Case c21.
    """
    a, r = f"{A}.actor.use_dynamic_bsz", f"{A}.rollout.log_prob_use_dynamic_bsz"
    av, rv = flag(val(ctx, a)), flag(val(ctx, r))
    if av != rv:
        yield ctx.finding(
            "FC206",
            [a, r],
            f"{a} = {av} {src(ctx, a)} but {r} = {rv} {src(ctx, r)}; verl asserts they are equal",
            f"set {r}={str(av).lower()} (or leave it unset: it follows {a})",
        )


@rule(
    "FC207",
    "dynamic-batch token budgets must hold one full sequence",
    keys=[
        f"{A}.actor.ppo_max_token_len_per_gpu",
        f"{A}.rollout.log_prob_max_token_len_per_gpu",
        f"{A}.ref.log_prob_max_token_len_per_gpu",
        "critic.ppo_max_token_len_per_gpu",
        "data.max_prompt_length",
        "data.max_response_length",
    ],
    example=[
        "actor_rollout_ref.actor.use_dynamic_bsz=true",
        "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=1024",
        "data.max_prompt_length=1024",
        "data.max_response_length=2048",
    ],
)
def token_budget(ctx: Context) -> Iterable[Finding]:
    """With dynamic batch size each micro batch packs up to ``max_token_len_per_gpu x ulysses_sp`` tokens;
    the longest sequence, ``max_prompt_length + max_response_length``, must fit.

    Source: verl/workers/engine/utils.py ``prepare_micro_batches`` (``max_token_len = per_gpu * sp_size``),
    verl/utils/seqlen_balancing.py ``rearrange_micro_batches`` (``assert max_token_len >= max_seq_len``).
    Case c22.
    """
    p, q = num(ctx.get("data.max_prompt_length")), num(ctx.get("data.max_response_length"))
    if p is None or q is None:
        return
    seq = p + q
    for r in roles(ctx):
        if not flag(val(ctx, r.dyn)):
            continue
        b = num(val(ctx, r.tokens))
        if b is None or r.sp < 1:
            continue  # r.sp 0: an engine whose sequence parallelism fsdpcfg does not model
        if b * r.sp < seq:
            need = -(-seq // r.sp)
            yield ctx.finding(
                "FC207",
                [r.tokens, "data.max_prompt_length", "data.max_response_length", *r.sp_keys],
                f"{r.name}: token budget {r.tokens} = {b} x {_sp_name(r)} {r.sp} = {b * r.sp} tokens "
                f"{src(ctx, r.tokens)} is smaller than one full sequence of {seq} tokens",
                f"set {r.tokens}={need} or more (a few sequences' worth, e.g. {need * 2}, packs better)",
                derivation=f"{seq} = data.max_prompt_length {p} + data.max_response_length {q}",
            )

"""FC7xx: silent traps — settings that verl accepts and then ignores or rewrites, so the run is not what the
config says.

The legacy keys (FC701) are :mod:`fsdpcfg.rules.legacy_keys`'s.

Sources: verl/utils/device.py (``get_device_name``: no CPU backend), verl/workers/engine/fsdp/transformer_impl.py
(FSDP1 ``CPUOffload`` vs FSDP2 ``CPUOffloadPolicy``), verl/utils/fsdp_utils.py (``get_fsdp_wrap_policy``,
``apply_fsdp2``: the FSDP units), and the reported cases c16, c19, c24, c25
(docs/design.md#reported-misconfigurations).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fsdpcfg.rules._common import A, flag, fsdp_sections, num, src, val
from fsdpcfg.rules.context import Context
from fsdpcfg.rules.finding import Finding
from fsdpcfg.rules.registry import rule

#: the FSDP1 size-based wrapping threshold, under an engine section
MIN_PARAMS = "wrap_policy.min_num_params"


def _value(ctx: Context, key: str) -> Any:
    """The effective value of ``key``: RL, verl's interpolated defaults resolved (:func:`val`); SFT, the config's
    or the SFT schema's default."""
    if ctx.composed.kind == "sft":
        from fsdpcfg.rules.sft_rules import _get

        return _get(ctx, key)
    return val(ctx, key)


def _fsdp_roles(ctx: Context) -> list[tuple[str, str, bool]]:
    """``(FSDP section, strategy key, trains an LM head)`` of every FSDP role: RL, :func:`fsdp_sections` (the
    actor trains one; the reference is frozen; the critic's value head has no tied embedding); SFT, ``engine``
    under verl's FSDP SFT engine."""
    if ctx.composed.kind == "sft":
        from fsdpcfg.rules.sft_rules import fsdp_engine

        return [("engine", "engine.strategy", True)] if fsdp_engine(ctx) else []
    return [(sec, skey, sec == f"{A}.actor.fsdp_config") for sec, skey in fsdp_sections(ctx)]


@rule(
    "FC702",
    "verl has no CPU device",
    keys=["trainer.device", "fsdpcfg.launcher"],
    example=["launcher=verl", "trainer.device=cpu"],
)
def verl_on_cpu(ctx: Context) -> Iterable[Finding]:
    """verl's device helpers know cuda and npu only; ``trainer.device=cpu`` is rewritten to cuda and the run
    fails looking for GPUs. The native launcher is the one that trains on CPU.

    Source: verl/utils/device.py ``get_device_name``/``is_cuda_available``; case c25.
    """
    if ctx.launcher == "verl" and str(ctx.get("trainer.device")) == "cpu":
        yield ctx.finding(
            "FC702",
            ["trainer.device", "fsdpcfg.launcher"],
            f"trainer.device = cpu {src(ctx, 'trainer.device')} with launcher=verl: verl has no CPU "
            "backend and will look for CUDA GPUs",
            "use launcher=native for CPU runs, or trainer=gpu_1x/gpu_8x (trainer.device=cuda) for verl",
        )


@rule(
    "FC703",
    "FSDP1 offload flags under FSDP2",
    severity="warning",
    keys=[
        f"{A}.actor.fsdp_config.param_offload",
        f"{A}.actor.fsdp_config.optimizer_offload",
        f"{A}.actor.fsdp_config.offload_policy",
    ],
    example=["launcher=verl", "rollout=vllm", "engine=fsdp2", "actor_rollout_ref.actor.fsdp_config.param_offload=true"],
)
def fsdp1_offload_under_fsdp2(ctx: Context) -> Iterable[Finding]:
    """Under FSDP2, ``param_offload``/``optimizer_offload`` only park the shards in CPU memory *between*
    phases; peak memory during the update is unchanged. FSDP2's CPU offload during compute is
    ``offload_policy=true`` (``CPUOffloadPolicy``), which then turns the manual flags off. Both launchers: under
    the native one FC802 also refuses the two flags (fsdpcfg/native/support.py: not implemented at all); this
    warning says what they would not have done under verl either (case c16).

    Source: verl/workers/engine/fsdp/transformer_impl.py ``_build_fsdp_module`` (fsdp2 branch:
    ``offload_policy`` -> ``CPUOffloadPolicy``, manual offload otherwise); case c16.
    """
    for sec, strat in fsdp_sections(ctx):
        if str(val(ctx, strat)) != "fsdp2" or flag(val(ctx, f"{sec}.offload_policy")):
            continue
        on = [f"{sec}.{k}" for k in ("param_offload", "optimizer_offload") if flag(val(ctx, f"{sec}.{k}"))]
        if on:
            yield ctx.finding(
                "FC703",
                [*on, f"{sec}.offload_policy"],
                f"{', '.join(on)} = true under {strat} = fsdp2: these FSDP1-style flags only move the shards to CPU "
                f"between phases; they do not lower peak memory during the update",
                f"for FSDP2 CPU offload set {sec}.offload_policy=true (and drop the FSDP1 flags)",
                severity="warning",
            )


@rule(
    "FC704",
    "the native engine runs offload_policy under FSDP2 on an accelerator only",
    keys=[
        f"{A}.actor.fsdp_config.offload_policy",
        f"{A}.ref.fsdp_config.offload_policy",
        "engine.offload_policy",
        "trainer.device",
        f"{A}.actor.strategy",
        "engine.strategy",
    ],
    example=["trainer=cpu", "actor_rollout_ref.actor.fsdp_config.offload_policy=true"],
    kinds=("ppo", "sft"),
)
def offload_on_cpu(ctx: Context) -> Iterable[Finding]:
    """Under ``launcher=native``, ``offload_policy`` is FSDP2's ``CPUOffloadPolicy``: the shards live in host
    memory and are copied to the accelerator for compute. On a CPU run the parameters already live in host
    memory and there is no accelerator to copy to; under strategy fsdp (FSDP1) there is no such policy (verl
    reads ``offload_policy`` in its fsdp2 branch only). The native engine refuses both at launch, so check
    does. The manual flags ``param_offload``/``optimizer_offload`` are not implemented by the native loop on
    any device: FC802 refuses them (both trees: fsdpcfg/native/support.py), one finding per key.

    Source: torch.distributed.fsdp ``CPUOffloadPolicy`` semantics; verl/workers/engine/fsdp/transformer_impl.py
    ``_build_fsdp_module`` (``offload_policy`` in the fsdp2 branch only); fsdpcfg/train/engine/fsdp.py
    ``shard_model``; case c16 ("if the native launcher cannot honour a flag at all, that is an error").
    """
    if ctx.launcher != "native":
        return
    cpu = str(_value(ctx, "trainer.device")) == "cpu"
    for sec, skey, _ in _fsdp_roles(ctx):
        key = f"{sec}.offload_policy"
        if not flag(_value(ctx, key)):
            continue
        if cpu:
            yield ctx.finding(
                "FC704",
                [key, "trainer.device"],
                f"{key} = true on a CPU run (trainer.device = cpu, launcher=native): FSDP2's CPUOffloadPolicy "
                "copies host-memory shards to an accelerator for compute, and there is no device memory to "
                "offload from",
                f"set {key}=false (on the CPU the parameters already live in host memory)",
            )
        elif str(_value(ctx, skey)) != "fsdp2":
            yield ctx.finding(
                "FC704",
                [key, skey],
                f"{key} = true under {skey} = {_value(ctx, skey)}: offload_policy is FSDP2's CPUOffloadPolicy; "
                "FSDP1 has none (verl ignores the key under fsdp) and the native engine refuses it",
                f"set {skey}=fsdp2 to offload during compute, or {key}=false",
            )


@rule(
    "FC705",
    "on-policy micro-batch mismatch between old log-prob and update",
    severity="warning",
    keys=[f"{A}.rollout.log_prob_micro_batch_size_per_gpu", f"{A}.actor.ppo_micro_batch_size_per_gpu"],
    example=[
        "launcher=verl",
        "rollout=vllm",
        "trainer.n_gpus_per_node=8",
        "data.train_batch_size=64",
        "actor_rollout_ref.actor.ppo_mini_batch_size=64",
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=32",
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
    ],
)
def on_policy_micro_mismatch(ctx: Context) -> Iterable[Finding]:
    """Fully on-policy (one mini batch = the train batch, one epoch) the ratio new/old should start at 1, but
    the old log-probs come from micro batches of ``rollout.log_prob_micro_batch_size_per_gpu`` and the new from
    ``actor.ppo_micro_batch_size_per_gpu``; bf16 kernels are not batch-shape invariant, so the two differ and
    the first update already clips.

    Source: reported problem, case c19 (verl/workers/engine_workers.py feeds the two keys to the same engine).
    """
    if ctx.launcher == "native" and str(ctx.get("trainer.device")) == "cpu":
        return  # fp32 on CPU: differences stay far below the clip range
    ak, rk = f"{A}.actor.ppo_micro_batch_size_per_gpu", f"{A}.rollout.log_prob_micro_batch_size_per_gpu"
    if flag(val(ctx, f"{A}.actor.use_dynamic_bsz")):
        return
    t, m = num(ctx.get("data.train_batch_size")), num(val(ctx, f"{A}.actor.ppo_mini_batch_size"))
    ep = num(ctx.get(f"{A}.actor.ppo_epochs")) or 1
    a, r = num(val(ctx, ak)), num(val(ctx, rk))
    if t and m and t == m and ep == 1 and a and r and a != r:
        yield ctx.finding(
            "FC705",
            [rk, ak],
            f"on-policy run (ppo_mini_batch_size = train_batch_size = {t}, ppo_epochs = 1) but old "
            f"log-probs use micro batches of {r} ({rk}) and the update {a} ({ak}): the log-probs differ "
            "numerically and the first update already clips",
            f"set {rk}={a} (the same as {ak})",
            severity="warning",
        )


@rule(
    "FC706",
    "wrap_policy.min_num_params does nothing under FSDP2",
    severity="warning",
    keys=[
        f"{A}.actor.fsdp_config.{MIN_PARAMS}",
        f"{A}.ref.fsdp_config.{MIN_PARAMS}",
        f"critic.fsdp.{MIN_PARAMS}",
        f"engine.{MIN_PARAMS}",
        f"{A}.actor.strategy",
        "engine.strategy",
    ],
    example=["engine=fsdp2", f"{A}.actor.fsdp_config.{MIN_PARAMS}=1000"],
    kinds=("ppo", "sft"),
)
def min_num_params_under_fsdp2(ctx: Context) -> Iterable[Finding]:
    """FSDP2 (``fully_shard``) shards each decoder layer (``wrap_policy.transformer_layer_cls_to_wrap``, by
    default the model's ``_no_split_modules``) and then the root; ``wrap_policy.min_num_params``, FSDP1's
    size-based wrapping, is never read, so a threshold under strategy fsdp2 changes nothing. Both launchers:
    the native engine does as verl does (fsdpcfg/train/engine/fsdp.py ``shard_model``).

    Source: verl/utils/fsdp_utils.py ``apply_fsdp2`` (by layer class only) vs ``get_fsdp_wrap_policy`` (FSDP1:
    ``size_based_auto_wrap_policy``); verl/workers/engine/fsdp/transformer_impl.py ``_build_fsdp_module``.
    """
    for sec, skey, _ in _fsdp_roles(ctx):
        key = f"{sec}.{MIN_PARAMS}"
        n = num(_value(ctx, key)) or 0
        if n > 0 and str(_value(ctx, skey)) == "fsdp2":
            yield ctx.finding(
                "FC706",
                [key, skey],
                f"{key} = {n} {src(ctx, key)} under {skey} = fsdp2: FSDP2 shards by decoder-layer class and never "
                "reads it (verl/utils/fsdp_utils.py apply_fsdp2), so the units stay the decoder layers",
                f"for size-based units set {skey}=fsdp (FSDP1); under fsdp2 choose the units with "
                f"{sec}.wrap_policy.transformer_layer_cls_to_wrap and set {key}=0",
                severity="warning",
            )


def _lm_config(ctx: Context) -> tuple[str, dict | None]:
    """``(model path key, config.json with override_config applied)`` of the model the LM-head role trains, or a
    ``None`` config when it cannot be read here."""
    if ctx.composed.kind == "sft":
        from fsdpcfg.model_files import inspect_model

        info = inspect_model(_value(ctx, "model.path"), _value(ctx, "model.tokenizer_path"))
        config = info.config if info is not None else None
        override = _value(ctx, "model.override_config") or {}
        return "model.path", {**config, **override} if isinstance(config, dict) else None
    from fsdpcfg.estimate.memory import read_model_config

    return f"{A}.model.path", read_model_config(ctx.cfg)


def tied_embedding_split(n: int, counts: Any) -> bool | None:
    """Whether torch's ``size_based_auto_wrap_policy`` at ``n`` parameters makes a unit below the root that
    holds the tied embedding but not the LM head (``counts``: :class:`fsdpcfg.estimate.param_count.ParamCounts`).

    True when the embedding (``vocab x hidden``) reaches ``n`` (it and the LM head become units of their own),
    or when ``n`` is above every decoder layer and at most the model (no part of a layer is a unit, so the
    model body, embedding included, is one apart from the root's LM head); False above the whole model (one
    unit). ``None`` between the embedding and the largest layer, where the layers' own structure decides.
    """
    if n <= counts.embedding:
        return True
    if n > counts.total:
        return False
    return True if n > counts.largest_layer else None


@rule(
    "FC707",
    "FSDP1 size-based wrapping unties tied embeddings",
    keys=[
        f"{A}.actor.fsdp_config.{MIN_PARAMS}",
        f"{A}.actor.strategy",
        f"{A}.model.path",
        f"engine.{MIN_PARAMS}",
        "engine.strategy",
        "model.path",
    ],
    example=["engine=fsdp", f"{A}.actor.fsdp_config.{MIN_PARAMS}=1000000"],
    kinds=("ppo", "sft"),
)
def min_num_params_unties_embeddings(ctx: Context) -> Iterable[Finding]:
    """With ``tie_word_embeddings`` the LM head *is* the input embedding (one tensor). Under strategy fsdp
    with ``wrap_policy.min_num_params > 0``, torch's ``size_based_auto_wrap_policy`` makes the embedding (and
    the LM head), or the model body holding the embedding, a unit apart from the LM head; FSDP1 then flattens
    the tied tensor into two flat parameters, so the two copies get different gradients and train apart, and
    the saved checkpoint holds two different tensors for one weight. Both launchers (the native engine wraps
    as verl); the layer-class policy keeps the embedding and the head in the root unit, tied. Only the roles
    that train an LM head: the actor (the frozen reference stays equal to its copy), SFT's engine.

    Source: verl/utils/fsdp_utils.py ``get_fsdp_wrap_policy`` (``min_num_params > 0``: the size policy alone);
    torch.distributed.fsdp.wrap ``size_based_auto_wrap_policy``; tests/train/engine/test_fsdp_parity.py
    ``test_fsdp1_size_wrapping_unties_tied_embeddings`` (the two copies after one step).
    """
    from fsdpcfg.estimate.param_count import UnsupportedArchitecture, count_parameters

    for sec, skey, lm in _fsdp_roles(ctx):
        key = f"{sec}.{MIN_PARAMS}"
        n = num(_value(ctx, key)) or 0
        if not lm or n <= 0 or str(_value(ctx, skey)) != "fsdp":
            continue
        path_key, config = _lm_config(ctx)
        if config is None:
            continue
        try:
            counts = count_parameters(config)
        except (UnsupportedArchitecture, KeyError, TypeError, ValueError):
            continue  # the model rules report a config.json they cannot read
        if counts.lm_head or not tied_embedding_split(n, counts):
            continue
        what = (
            "the embedding and the LM head each a unit of their own"
            if n <= counts.embedding
            else "the model body (embedding included) a unit apart from the LM head"
        )
        yield ctx.finding(
            "FC707",
            [key, skey, path_key],
            f"{key} = {n} {src(ctx, key)} under {skey} = fsdp on a model with tied embeddings "
            f"({_value(ctx, path_key)}: tie_word_embeddings): torch's size_based_auto_wrap_policy makes {what}, "
            "so FSDP1 keeps two copies of the one tied weight, which train apart",
            f"set {key}=0 (the decoder layers are the units and the root keeps the tie)",
            derivation=f"embedding {counts.vocab_size} x {counts.hidden_size} = {counts.embedding:,} parameters, "
            f"largest layer {counts.largest_layer:,}, model {counts.total:,}; min_num_params {n:,}",
        )

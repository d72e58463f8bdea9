"""FC7xx: silent traps — settings that verl accepts and then ignores or rewrites, so the run is not what the
config says.

Sources: verl/trainer/config/ppo_trainer.yaml (0.9 moved the reward keys under ``reward``),
verl/utils/device.py (``get_device_name``: no CPU backend), verl/workers/engine/fsdp/transformer_impl.py
(FSDP1 ``CPUOffload`` vs FSDP2 ``CPUOffloadPolicy``), and the reported problems in ../shared/cases (c16, c19,
c24, c25).
"""

from __future__ import annotations

from collections.abc import Iterable

from fsdpcfg.rules._common import A, flag, fsdp_sections, num, src, val
from fsdpcfg.rules.context import Context
from fsdpcfg.rules.finding import Finding
from fsdpcfg.rules.registry import rule
from fsdpcfg.verlref import flatten

#: Top-level sections verl < 0.9 read, and where verl 0.9.1 reads them (the keys of
#: ``fsdpcfg.schema.keys.LEGACY_PREFIXES``).
LEGACY_SECTIONS = {
    "custom_reward_function": "reward.custom_reward_function",
    "reward_model": "reward.reward_model",
    "sandbox_fusion": "reward.sandbox_fusion",
}


@rule(
    "FC701",
    "legacy top-level reward keys are ignored by verl 0.9",
    keys=["custom_reward_function.path", "reward.custom_reward_function.path", "reward_model.enable"],
    example=["+custom_reward_function.path=my_reward.py"],
)
def legacy_reward_keys(ctx: Context) -> Iterable[Finding]:
    """verl 0.9 reads only ``reward.custom_reward_function.*``, ``reward.reward_model.*`` and
    ``reward.sandbox_fusion.*``; the old top-level ``custom_reward_function.*`` / ``reward_model.*`` /
    ``sandbox_fusion.*`` stay in verl's tree as null placeholders and are silently ignored by ``main_ppo``
    (only the experimental fully-async trainer migrates them), so the default scorer runs instead.

    Source: verl/trainer/config/ppo_trainer.yaml (0.9.1 layout, ``reward:`` section) and
    legacy_reward_impl.yaml; verl/experimental/reward_loop/reward_loop.py ``migrate_legacy_reward_impl`` (called
    only from verl/experimental/fully_async_policy/fully_async_main.py); case c24.
    """
    for old, new in LEGACY_SECTIONS.items():
        sec = ctx.cfg.get(old)
        if sec is None:
            continue
        leaves = flatten(sec, old) if isinstance(sec, dict) else {old: sec}
        for key, v in leaves.items():
            if v is None or v == {}:
                continue  # a null legacy key (verl 0.9.1's own dumps list them) changes nothing
            nk = new + key[len(old) :]
            yield ctx.finding(
                "FC701",
                [key, nk],
                f"{key} = {v} {src(ctx, key)} is a pre-0.9 verl key; verl 0.9.1 ignores it and runs "
                f"its default instead",
                f"move it to {nk}={v}",
            )


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
    example=["engine=fsdp2", "actor_rollout_ref.actor.fsdp_config.param_offload=true"],
)
def fsdp1_offload_under_fsdp2(ctx: Context) -> Iterable[Finding]:
    """Under FSDP2, ``param_offload``/``optimizer_offload`` only park the shards in CPU memory *between*
    phases; peak memory during the update is unchanged. FSDP2's CPU offload during compute is
    ``offload_policy=true`` (``CPUOffloadPolicy``), which then turns the manual flags off.

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
    "CPU offload cannot work on a CPU run",
    keys=[f"{A}.actor.fsdp_config.param_offload", f"{A}.actor.fsdp_config.offload_policy"],
    example=["trainer=cpu", "actor_rollout_ref.actor.fsdp_config.param_offload=true"],
)
def offload_on_cpu(ctx: Context) -> Iterable[Finding]:
    """On the native launcher's CPU runs the parameters already live in host memory: offloading them to the
    CPU cannot work (FSDP2's ``CPUOffloadPolicy`` needs an accelerator to copy to for compute).

    Source: torch.distributed.fsdp ``CPUOffloadPolicy``/``CPUOffload`` semantics; case c16 ("if the native
    launcher cannot honour a flag at all, that is an error").
    """
    if ctx.launcher != "native" or str(ctx.get("trainer.device")) != "cpu":
        return
    for sec, _ in fsdp_sections(ctx):
        on = [
            f"{sec}.{k}"
            for k in ("param_offload", "optimizer_offload", "offload_policy")
            if flag(val(ctx, f"{sec}.{k}"))
        ]
        if on:
            yield ctx.finding(
                "FC704",
                on,
                f"{', '.join(on)} = true on a CPU run (trainer.device = cpu, launcher=native): there is "
                "no device memory to offload from",
                f"set {', '.join(k + '=false' for k in on)}",
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

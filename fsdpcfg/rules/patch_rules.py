"""FC36x/FC86x: patch sets (the ``patches=`` group) and the FSDP engine settings the native engine shards with.

Which patch a config selects, what it supports and what it needs are the declarations of
:mod:`fsdpcfg.patches` (declarations importable without torch); these rules report them before launch, and
the engine refuses the same selections at launch (``apply_patches``). The model's ``model_type`` is read from
its config.json as JSON (``ctx.model``), never by importing the model.

Requirements between patches are reported by the rule of the patch that needs them (ulysses -> remove_padding
is FC303's); keys the native launcher does not run at all are FC802's (:mod:`fsdpcfg.native.support`). Two selected
patches claiming one target cannot happen with the built-in registry (it rejects that at registration); the
engine still checks every selection (``PatchRegistry.problems``).
"""

from __future__ import annotations

from collections.abc import Iterable

from fsdpcfg.patches import REGISTRY, Problem
from fsdpcfg.rules._common import A, fsdp_sections, num, src, val, world
from fsdpcfg.rules.context import Context
from fsdpcfg.rules.finding import Finding
from fsdpcfg.rules.registry import rule


def _selected(ctx: Context) -> list[str]:
    return REGISTRY.selected(lambda key: val(ctx, key))


def _model_type(ctx: Context) -> str | None:
    m = ctx.model
    if m is None or m.status != "ok" or not isinstance(m.config, dict):
        return None
    mt = m.config.get("model_type")
    return mt if isinstance(mt, str) else None


def _problems(ctx: Context, kind: str, **where) -> list[Problem]:
    args = {"model_type": None, "device": None, "launcher": None, **where}
    return [p for p in REGISTRY.problems(_selected(ctx), **args) if p.kind == kind]


def _keys(problem: Problem, *more: str) -> list[str]:
    return [REGISTRY[problem.patch].config_key, *more] if problem.patch in REGISTRY else list(more)


@rule(
    "FC361",
    "each selected patch supports the model's model_type",
    keys=[f"{A}.model.use_remove_padding", f"{A}.model.use_liger", f"{A}.model.path"],
    example=["patches=remove_padding", "actor_rollout_ref.model.path=<Qwen/Qwen-7B folder>"],
)
def patch_model_type(ctx: Context) -> Iterable[Finding]:
    """A patch is dispatched from config.json's ``model_type``; a type it does not declare would fail at launch
    (remove_padding: the packed forward is verified per architecture) or be skipped silently (verl's liger
    call logs and does nothing for a type liger-kernel does not know).

    Source: fsdpcfg/patches (each patch's ``model_types``); liger_kernel/transformers/monkey_patch.py
    ``MODEL_TYPE_TO_APPLY_LIGER_FN``; tests/train/patches/test_remove_padding.py for the verified types.
    """
    mt = _model_type(ctx)
    if mt is None:
        return
    for p in _problems(ctx, "model_type", model_type=mt):
        yield ctx.finding("FC361", _keys(p, f"{A}.model.path"), f"{p.message} ({ctx.get(f'{A}.model.path')})", p.fix)


@rule(
    "FC364",
    "FSDP1 hybrid sharding with fsdp_size=1 never syncs gradients",
    keys=[f"{A}.actor.fsdp_config.fsdp_size", f"{A}.actor.strategy"],
    example=["engine=fsdp", "actor_rollout_ref.actor.fsdp_config.fsdp_size=1"],
)
def fsdp1_hybrid_size_one(ctx: Context) -> Iterable[Finding]:
    """``fsdp_size=1`` below the world size builds a ``(world, 1)`` mesh; FSDP1's ``HYBRID_SHARD`` then sees a
    shard group of one rank, switches to ``NO_SHARD`` over that group, and gradients are never all-reduced
    across the replicas: every rank trains on its own data (measured: tests/train/engine/test_fsdp_parity.py, the
    grad norm differs from the unsharded step). FSDP2's 2-D mesh replicates correctly.

    Source: torch/distributed/fsdp/fully_sharded_data_parallel.py (``_init_core_state``: "switching to use
    NO_SHARD ... since the world size is 1"); verl/workers/engine/fsdp/utils.py ``get_sharding_strategy``.
    """
    w = world(ctx)
    for sec, skey in fsdp_sections(ctx):
        key = f"{sec}.fsdp_size"
        if num(val(ctx, key)) == 1 and w and w > 1 and str(val(ctx, skey)) == "fsdp":
            yield ctx.finding(
                "FC364",
                [key, skey],
                f"{key} = 1 {src(ctx, key)} with {skey} = fsdp on {w} ranks: FSDP1's HYBRID_SHARD "
                "over one-rank shard groups falls back to NO_SHARD and never all-reduces gradients",
                f"use engine=fsdp2, or set {key}=-1 (or a divisor of {w} above 1)",
            )


@rule(
    "FC861", "GPU-only patches on a CPU run", keys=[f"{A}.model.use_liger", "trainer.device"], example=["patches=liger"]
)
def patch_device(ctx: Context) -> Iterable[Finding]:
    """Liger's kernels are Triton kernels: they need a CUDA device, on any launcher. The other patches run on the
    CPU or a GPU in the native loop and on a GPU or an Ascend NPU under verl (``trainer.device=npu``: verl's
    ``examples/ascend_extras`` scripts use remove_padding and gradient checkpointing there).

    Source: fsdpcfg/patches/liger.py (``devices``, ``verl_devices``); liger-kernel README (CUDA/ROCm GPUs
    only); verl 0.9.1 ``verl/utils/device.py`` (npu is a device verl runs on).
    """
    device = str(ctx.get("trainer.device"))
    for p in _problems(ctx, "device", device=device, launcher=ctx.launcher):
        yield ctx.finding("FC861", _keys(p, "trainer.device"), f"{p.message} {src(ctx, 'trainer.device')}", p.fix)

"""FC507: a LoRA adapter that cannot train (the PEFT settings of ``model.lora_*``, both trees).

verl builds the adapter with PEFT from the model section (verl/workers/engine/fsdp/transformer_impl.py
``_build_lora_module``: ``LoraConfig(r=lora_rank, lora_alpha=lora_alpha, target_modules=target_modules,
exclude_modules=exclude_modules)``, then ``get_peft_model``); the native trainers do the same
(fsdpcfg/train/lora/setup.py ``apply_lora``). Both read the keys only while ``lora_rank > 0``.
"""

from __future__ import annotations

from collections.abc import Iterable

from fsdpcfg import runkind
from fsdpcfg.rules._common import A, num
from fsdpcfg.rules.context import Context
from fsdpcfg.rules.finding import Finding
from fsdpcfg.rules.registry import rule


def _model_section(ctx: Context) -> str:
    """``actor_rollout_ref.model`` (RL) or ``model`` (SFT): the run kind's :attr:`fsdpcfg.runkind.RunKind.model_key`."""
    return runkind.get(ctx.composed.kind).model_key


@rule(
    "FC507",
    "a LoRA adapter must adapt some module with a non-zero scale",
    keys=[f"{A}.model.lora_alpha", f"{A}.model.target_modules", "model.lora_alpha", "model.target_modules"],
    example=["actor_rollout_ref.model.lora_rank=8", "actor_rollout_ref.model.lora_alpha=0"],
    kinds=("ppo", "sft"),
)
def lora_cannot_train(ctx: Context) -> Iterable[Finding]:
    """With ``lora_rank > 0``:

    - ``target_modules`` empty (``[]`` or ``""``): PEFT's ``get_peft_model`` raises
      ``NoMatchingPeftModuleError`` ("No `target_modules` passed") when the model is built, after the cluster
      and the model started;
    - ``lora_alpha = 0``: PEFT scales the adapter's update by ``lora_alpha / r``; at 0 every LoRA layer adds
      nothing, ``lora_B`` (initialised to 0) gets a zero gradient, and the run trains nothing, silently (a
      negative alpha is the schema's: ``ge=0``).

    Source: peft ``LoraModel`` / ``LoraLayer.update_layer`` (``scaling = lora_alpha / r``); verl
    ``_build_lora_module``. Keys are read only with LoRA on: with ``lora_rank = 0`` verl builds no adapter.
    """
    sec = _model_section(ctx)
    rank = num(ctx.get(f"{sec}.lora_rank")) or 0
    if rank <= 0:
        return
    targets = ctx.get(f"{sec}.target_modules")
    if isinstance(targets, (str, list, tuple)) and len(targets) == 0:
        key = f"{sec}.target_modules"
        yield ctx.finding(
            "FC507",
            [key, f"{sec}.lora_rank"],
            f"{key} = {targets!r} names no module to adapt with {sec}.lora_rank = {rank}: PEFT's get_peft_model "
            "raises NoMatchingPeftModuleError when the model is built",
            f"set {key}=all-linear or a list such as [q_proj,v_proj] (or {sec}.lora_rank=0 to train all weights)",
        )
    alpha = ctx.get(f"{sec}.lora_alpha")
    if isinstance(alpha, (int, float)) and not isinstance(alpha, bool) and alpha == 0:
        key = f"{sec}.lora_alpha"
        yield ctx.finding(
            "FC507",
            [key, f"{sec}.lora_rank"],
            f"{key} = {alpha!r} with {sec}.lora_rank = {rank}: PEFT scales the adapter's update by "
            "lora_alpha / lora_rank = 0, so the run trains nothing",
            f"set {key} to a positive number (verl's default 16; commonly 2 x lora_rank)",
        )

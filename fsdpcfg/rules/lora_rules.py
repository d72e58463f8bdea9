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

P = f"{A}.model.path"


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


@rule(
    "FC419",
    "LoRA target modules must be modules of the model's architecture",
    keys=[f"{A}.model.target_modules", f"{A}.model.lora_rank", f"{A}.model.path"],
    example=[
        "actor_rollout_ref.model.path=<microsoft/Phi-3-mini-128k-instruct folder>",
        "actor_rollout_ref.model.lora_rank=8",
        "actor_rollout_ref.model.target_modules=[q_proj,v_proj]",
    ],
)
def lora_targets_exist(ctx: Context) -> Iterable[Finding]:
    """PEFT matches each ``target_modules`` name against the model's module names (the full name, or its last
    dotted parts). With ``lora_rank > 0`` and a list of names (``all-linear`` and a regex string are not
    judged):

    - no name matches a module of the architecture: ``get_peft_model`` raises ("Target modules ... not found in
      the base model") when the workers build the model, after start-up (error);
    - some names match and others do not: the others are skipped silently and the adapter is smaller than
      configured (warning).

    The architecture's names are the submodules and parameters transformers' ``modeling_<model_type>.py`` of the
    installed version builds (read as text, :func:`fsdpcfg.model_files.module_names`); Phi-3 fuses
    ``qkv_proj`` and ``gate_up_proj``, DeepSeek-V2/V3 use ``q_a_proj``/``kv_a_proj_with_mqa``, so the Llama
    names ``q_proj``/``v_proj`` copied from another script adapt nothing there.

    Source: peft ``BaseTuner.inject_adapter`` / ``check_target_module_exists`` (the suffix match and the
    ValueError); verl/workers/engine/fsdp/transformer_impl.py ``_build_lora_module``. Public reports:
    hiyouga/LlamaFactory#43, #1785, #2401 ("Target modules ['q_proj', 'v_proj'] not found in the base model" on
    Baichuan ``W_pack``, ChatGLM ``query_key_value``, Qwen-7B ``c_attn``), #4020 and vllm-project/vllm#4915 (Phi-3's
    fused ``qkv_proj`` / ``gate_up_proj``).
    """
    from fsdpcfg.model_files import module_names, transformers_version

    key, rk = f"{A}.model.target_modules", f"{A}.model.lora_rank"
    rank = num(ctx.get(rk)) or 0
    targets = ctx.get(key)
    if rank <= 0 or not isinstance(targets, (list, tuple)) or not targets:
        return
    m = ctx.model
    if m is None or m.status != "ok" or not m.model_type:
        return
    names = module_names(str(m.model_type))
    if names is None:
        return
    asked = [str(t) for t in targets]
    missing = [t for t in asked if t.rsplit(".", 1)[-1] not in names]
    if not missing:
        return
    arch = m.architectures[0] if m.architectures else m.model_type
    here = f"{arch} (transformers {transformers_version()} models/{m.model_type}/modeling_{m.model_type}.py)"
    linear = sorted(n for n in names if n.endswith("_proj") or n in ("fc1", "fc2", "dense", "gate", "w1", "w2", "w3"))
    if len(missing) == len(asked):
        yield ctx.finding(
            "FC419",
            [key, P],
            f"{key} = {asked}: none of them is a module of {here}; PEFT's get_peft_model raises 'Target modules "
            "not found in the base model' when the workers build the model",
            f"set {key}=all-linear, or a list of {arch}'s projections: {linear}",
        )
    else:
        yield ctx.finding(
            "FC419",
            [key, P],
            f"{key} = {asked}: {', '.join(missing)} is not a module of {here}; PEFT adapts the others and skips "
            "it silently",
            f"drop {', '.join(missing)} or use {arch}'s names: {linear} (or all-linear)",
            severity="warning",
        )

"""FC5xx: rollout engine settings — context length, chunked prefill, LoRA rank, load_format,
layered_summon, sampling.

verl 0.9.1 sources: ``verl/workers/rollout/vllm_rollout/vllm_async_server.py`` (engine arguments and
``_validate_configs``), ``verl/workers/rollout/utils.py`` ``get_max_position_embeddings``,
``verl/utils/config.py`` ``validate_config`` (LoRA rank, val_kwargs), ``verl/utils/fsdp_utils.py``
``collect_lora_params`` (layered_summon), ``verl/workers/config/rollout.py`` ``RolloutConfig.__post_init__``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fsdpcfg.rules._common import A, engine_rollout, flag, num, rollout_name, src, val
from fsdpcfg.rules.context import Context
from fsdpcfg.rules.finding import Finding, Severity
from fsdpcfg.rules.model_rules import _model, arch_table
from fsdpcfg.rules.registry import rule

R = f"{A}.rollout"
PL, RL = "data.max_prompt_length", "data.max_response_length"


def _max_positions(ctx: Context) -> tuple[int, str] | None:
    """``(limit, how)``: the model's context limit from config.json with ``override_config`` applied; a
    rope-scaling block whose ``original_max_position_embeddings`` equals ``max_position_embeddings``
    extends it by ``factor``."""
    m = _model(ctx)
    if m is None:
        return None
    tc = dict(m.text_config)
    oc = ctx.get(f"{A}.model.override_config")
    if isinstance(oc, dict):
        tc.update({k: v for k, v in oc.items() if k in ("max_position_embeddings", "rope_scaling", "rope_parameters")})
    mp = num(tc.get("max_position_embeddings"))
    if not mp:
        return None
    how = f"max_position_embeddings = {mp}"
    rs = tc.get("rope_scaling") or tc.get("rope_parameters")
    if isinstance(rs, dict):
        factor, orig = rs.get("factor"), num(rs.get("original_max_position_embeddings"))
        kind = rs.get("rope_type") or rs.get("type")
        if isinstance(factor, (int, float)) and factor > 1 and orig == mp:
            how += f" x rope_scaling {kind} factor {factor:g}"
            mp = int(mp * factor)
        elif kind:
            how += f" (rope_scaling {kind} included)"
    return mp, how


def _seq(ctx: Context) -> tuple[int, int] | None:
    p, q = num(ctx.get(PL)), num(ctx.get(RL))
    return (p, q) if p is not None and q is not None else None


@rule(
    "FC501",
    "prompt + response must fit the model's context (and rollout.max_model_len)",
    keys=[PL, RL, f"{R}.max_model_len"],
    example=[
        "actor_rollout_ref.model.path=<Llama-2-7b-hf folder>",
        "data.max_prompt_length=2048",
        "data.max_response_length=8192",
    ],
)
def context_length(ctx: Context) -> Iterable[Finding]:
    """A sequence of ``max_prompt_length + max_response_length`` tokens must fit ``max_position_embeddings``
    (extended by rope scaling) and, when set, ``rollout.max_model_len``, which itself may not exceed the
    model's limit.

    A ``rollout.max_model_len`` below prompt + response is a warning with the answer length verl will allow:
    verl clamps each request's ``max_tokens`` to ``max_model_len - len(prompt)``; an error only when a prompt
    of ``max_prompt_length`` tokens leaves no room at all (verl raises ``ValueError``).

    Source: verl/workers/rollout/vllm_rollout/vllm_async_server.py ``_validate_configs`` (max_model_len
    <= max_position_embeddings) and ``generate`` (``max_possible_tokens = max_model_len - len(prompt_ids)``,
    ``ValueError`` below 1, ``max_tokens`` clamped to it); sglang_rollout/async_sglang_server.py the same; case c10.
    """
    s = _seq(ctx)
    if s is None:
        return
    p, q = s
    lim = _max_positions(ctx)
    mk = f"{R}.max_model_len"
    mml = num(ctx.get(mk))
    if lim is not None:
        limit, how = lim
        if p + q > limit:
            yield ctx.finding(
                "FC501",
                [PL, RL],
                f"{PL} + {RL} = {p} + {q} = {p + q} tokens exceed the model's context of {limit} "
                f"({how}, {ctx.get(f'{A}.model.path')})",
                f"lower them to a total <= {limit}, or extend the context with rope scaling via "
                f"{A}.model.override_config (e.g. +{A}.model.override_config.rope_scaling={{rope_type: yarn, "
                f"factor: {-(-(p + q) // limit)}, original_max_position_embeddings: {limit}}}) "
                "if the model supports it",
                derivation=f"{p + q} = {p} + {q}; limit = {how}",
            )
        if mml and mml > limit and engine_rollout(ctx):
            yield ctx.finding(
                "FC501", [mk], f"{mk} = {mml} exceeds the model's {how}", f"set {mk} <= {limit} (or leave it unset)"
            )
    if mml and engine_rollout(ctx) and p + q > mml:
        if p >= mml:  # a prompt of max_prompt_length tokens leaves no room: verl raises ValueError per request
            yield ctx.finding(
                "FC501",
                [mk, PL, RL],
                f"{mk} = {mml} is not larger than {PL} = {p}: a prompt of {p} tokens leaves no room to generate, "
                "and verl's rollout server raises ValueError for it",
                f"set {mk}={p + q} ({PL} + {RL}) or more",
            )
        else:  # verl clamps each request's max_tokens to max_model_len - prompt length
            yield ctx.finding(
                "FC501",
                [mk, PL, RL],
                f"{mk} = {mml} is smaller than {PL} + {RL} = {p + q}: verl 0.9.1 clamps each answer to "
                f"{mml} - the prompt's length tokens, so an answer to a {p}-token prompt gets at most {mml - p} "
                f"of the {q} tokens of {RL}",
                f"set {mk}={p + q} or more to get answers of {q} tokens, or lower {RL} to {mml - p}",
                severity="warning",
                derivation=f"{mml} - {p} = {mml - p} tokens left for the answer",
            )


@rule(
    "FC502",
    "without chunked prefill, max_num_batched_tokens must hold max_model_len (verl raises it itself)",
    severity="warning",
    keys=[f"{R}.max_num_batched_tokens", f"{R}.enable_chunked_prefill"],
    example=[
        "launcher=verl",
        "rollout=vllm",
        "actor_rollout_ref.rollout.enable_chunked_prefill=false",
        "actor_rollout_ref.rollout.max_num_batched_tokens=8192",
    ],
)
def chunked_prefill(ctx: Context) -> Iterable[Finding]:
    """With ``enable_chunked_prefill=false`` every prefill must fit one scheduler step, so vLLM needs
    ``max_num_batched_tokens >= max_model_len``. verl 0.9.1 raises the budget to max_model_len itself (with a
    warning in its log): ``rollout.max_model_len``, or the model's ``max_position_embeddings`` when unset. So
    this is a warning that states the value verl will use (each scheduler step then holds that many tokens:
    more activation memory than the configured budget), not an error.

    Source: verl/workers/rollout/vllm_rollout/vllm_async_server.py ``_validate_configs`` ("raising
    max_num_batched_tokens from ... to ..."), verl/workers/rollout/utils.py ``get_max_position_embeddings``;
    vLLM ``SchedulerConfig`` verification. Case c11.
    """
    if rollout_name(ctx) != "vllm" or flag(ctx.get(f"{R}.enable_chunked_prefill")):
        return
    bk = f"{R}.max_num_batched_tokens"
    b = num(ctx.get(bk))
    s = _seq(ctx)
    if b is None or s is None:
        return
    used = _verl_max_model_len(ctx)
    if used is None:  # no max_model_len and the model's config.json is not readable here
        if b < s[0] + s[1]:
            yield ctx.finding(
                "FC502",
                [bk, f"{R}.enable_chunked_prefill", f"{R}.max_model_len"],
                f"{R}.enable_chunked_prefill = false needs {bk} >= max_model_len, but {bk} = {b} is below "
                f"{PL} + {RL} = {s[0] + s[1]}; verl 0.9.1 raises it to the model's max_position_embeddings itself "
                "(not readable here)",
                f"set {R}.max_model_len={s[0] + s[1]} and {bk}={s[0] + s[1]} so that the config says what runs, "
                f"or {R}.enable_chunked_prefill=true",
                severity="warning",
            )
        return
    need, how = used
    if b < need:
        yield ctx.finding(
            "FC502",
            [bk, f"{R}.enable_chunked_prefill", f"{R}.max_model_len"],
            f"{R}.enable_chunked_prefill = false needs {bk} >= max_model_len = {need} ({how}), but {bk} = {b}; "
            f"verl 0.9.1 raises {bk} to {need} itself, so each scheduler step holds up to {need} tokens, not {b}",
            f"set {bk}={need} so that the config says what runs, or {R}.enable_chunked_prefill=true",
            severity="warning",
            derivation=f"max_model_len = {need} ({how})",
        )


def _verl_max_model_len(ctx: Context) -> tuple[int, str] | None:
    """``(max_model_len, how)`` as verl's rollout server sets it: ``rollout.max_model_len``, else the model's
    ``max_position_embeddings`` (config.json, ``override_config`` applied, no rope factor: verl/workers/rollout/
    utils.py ``get_max_position_embeddings``); ``None`` when neither is known here."""
    mml = num(ctx.get(f"{R}.max_model_len"))
    if mml:
        return int(mml), f"{R}.max_model_len"
    m = _model(ctx)
    if m is None:
        return None
    tc = dict(m.text_config)
    oc = ctx.get(f"{A}.model.override_config")
    if isinstance(oc, dict) and "max_position_embeddings" in oc:
        tc["max_position_embeddings"] = oc["max_position_embeddings"]
    mp = num(tc.get("max_position_embeddings"))
    how = "the model's max_position_embeddings, as verl reads it when max_model_len is unset"
    return (int(mp), how) if mp else None


def _lora_rank(ctx: Context) -> int:
    r = num(ctx.get(f"{A}.model.lora.rank")) or 0
    if r <= 0:
        r = num(ctx.get(f"{A}.model.lora_rank")) or 0
    if flag(ctx.get(f"{A}.model.lora.merge")):
        return 0
    return r


@rule(
    "FC503",
    "LoRA rank must be one vLLM can serve",
    keys=[f"{A}.model.lora_rank"],
    example=["launcher=verl", "rollout=vllm", "actor_rollout_ref.model.lora_rank=1024"],
)
def lora_rank_vllm(ctx: Context) -> Iterable[Finding]:
    """vLLM serves adapters up to its largest ``max_lora_rank`` (512 for the versions verl 0.9 pins).

    Source: verl/utils/config.py ``validate_config`` -> verl/workers/rollout/vllm_rollout/utils.py
    ``get_vllm_max_lora_rank``. Case c12.
    """
    if rollout_name(ctx) != "vllm":
        return
    r = _lora_rank(ctx)
    mx = arch_table()["backends"]["vllm"]["max_lora_rank"]
    if r > mx:
        key = f"{A}.model.lora_rank" if not num(ctx.get(f"{A}.model.lora.rank")) else f"{A}.model.lora.rank"
        yield ctx.finding(
            "FC503",
            [key],
            f"{key} = {r} exceeds vLLM's largest max_lora_rank {mx}",
            f"set {key} <= {mx}, or set {A}.model.lora.merge=true to sync merged weights",
        )


@rule(
    "FC504",
    "layered_summon needs the base weights preloaded in the engine",
    keys=[f"{R}.layered_summon", f"{R}.load_format"],
    example=[
        "launcher=verl",
        "rollout=vllm",
        "actor_rollout_ref.model.lora_rank=16",
        "actor_rollout_ref.rollout.layered_summon=true",
    ],
)
def layered_summon(ctx: Context) -> Iterable[Finding]:
    """With LoRA, ``layered_summon`` syncs only adapter weights layer by layer, so the rollout must already
    hold the base model: a ``dummy`` load_format leaves it random and verl raises at the first sync. The native
    loop's hf replica follows the same contract (it reads the base from ``model.path`` unless load_format is
    dummy) and raises at its first sync too, so the rule holds for every rollout.

    Source: verl/utils/fsdp_utils.py ``collect_lora_params`` ("To use layered_summon, you must make sure
    base-model is preloaded in vllm, e.g. let rollout.load_format=safetensors"); verl/workers/engine_workers.py
    (``base_sync_done = "dummy" not in load_format``); fsdpcfg/train/lora/rollout.py ``LoraWeightSync.base_stream``.
    """
    if not flag(ctx.get(f"{R}.layered_summon")) or _lora_rank(ctx) <= 0:
        return
    lf = str(ctx.get(f"{R}.load_format"))
    if "dummy" in lf:
        yield ctx.finding(
            "FC504",
            [f"{R}.layered_summon", f"{R}.load_format"],
            f"{R}.layered_summon = true with LoRA needs the base model preloaded, but {R}.load_format "
            f"= {lf} {src(ctx, f'{R}.load_format')}",
            f"set {R}.load_format=safetensors (or auto)",
        )


@rule(
    "FC505",
    "load_format must be one the rollout engine accepts",
    keys=[f"{R}.load_format"],
    example=["launcher=verl", "rollout=sglang", "actor_rollout_ref.rollout.load_format=dummy_dtensor"],
)
def load_format(ctx: Context) -> Iterable[Finding]:
    """verl 0.9.1 hands ``rollout.load_format`` to the engine verbatim; each engine accepts its own set
    (fsdpcfg/data/rollout_arch_support.json). verl's old names (``dummy_dtensor`` ...) no longer exist.

    Source: verl/workers/rollout/vllm_rollout/vllm_async_server.py and sglang_rollout/async_sglang_server.py
    (``"load_format": self.config.load_format``); SGLang ``LoadFormat`` enum, vLLM ``LoadFormats``. Case c17.
    """
    name = rollout_name(ctx)
    table = arch_table()
    be = table["backends"].get(name)
    if not be or not be.get("load_formats"):
        return
    key = f"{R}.load_format"
    lf = ctx.get(key)
    if not isinstance(lf, str) or lf.lower() in be["load_formats"]:
        return
    legacy = table["legacy_load_formats"].get(lf)
    msg = (
        f"{key} = {lf} {src(ctx, key)} is not a load format of {name} {be['version']} (accepted: "
        f"{', '.join(be['load_formats'])})"
    )
    if legacy:
        msg += f"; '{lf}' is a pre-0.5 verl name"
    sev: Severity = "warning" if be.get("load_formats_extensible") and not legacy else "error"
    yield ctx.finding(
        "FC505",
        [key],
        msg + (" unless a vLLM plugin registers it" if sev == "warning" else ""),
        f"set {key}={legacy or 'dummy'} (dummy: random init, verl syncs the real weights before the first rollout)",
        severity=sev,
    )


@rule(
    "FC506",
    "rollout sampling settings verl rejects",
    keys=[f"{R}.val_kwargs.do_sample", f"{R}.temperature", f"{R}.mode"],
    example=["actor_rollout_ref.rollout.temperature=0", "actor_rollout_ref.rollout.val_kwargs.do_sample=true"],
)
def sampling(ctx: Context) -> Iterable[Finding]:
    """Validation sampling needs ``rollout.temperature > 0`` (verl checks the training temperature); rollout
    ``mode=sync`` was removed. Under ``launcher=native`` the training rollout samples too: its hf replica
    calls ``generate(do_sample=True, temperature=...)``, which refuses a temperature <= 0 (greedy decoding is
    ``rollout.do_sample=false``).

    Source: verl/utils/config.py ``validate_config`` (val_kwargs); verl/workers/config/rollout.py
    ``RolloutConfig.__post_init__`` (mode); transformers ``TemperatureLogitsWarper`` ("temperature has to be a
    strictly positive float"), fsdpcfg/train/rollout/hf.py ``HFRollout.generate``.
    """
    t: Any = ctx.get(f"{R}.temperature")
    if (
        ctx.launcher == "native"
        and flag(ctx.get(f"{R}.do_sample"))
        and isinstance(t, (int, float))
        and not isinstance(t, bool)
        and t <= 0
    ):
        yield ctx.finding(
            "FC506",
            [f"{R}.temperature", f"{R}.do_sample", "fsdpcfg.launcher"],
            f"{R}.temperature = {t} with {R}.do_sample = true: the native launcher's hf rollout samples with "
            "transformers' generate, which needs a temperature > 0",
            f"set {R}.temperature > 0 (verl's default 1.0), or {R}.do_sample=false for greedy decoding",
        )
    if flag(ctx.get(f"{R}.val_kwargs.do_sample")) and isinstance(t, (int, float)) and t <= 0:
        yield ctx.finding(
            "FC506",
            [f"{R}.val_kwargs.do_sample", f"{R}.temperature"],
            f"{R}.val_kwargs.do_sample = true needs {R}.temperature > 0 (it is {t})",
            f"set {R}.temperature > 0 or {R}.val_kwargs.do_sample=false",
        )
    if str(val(ctx, f"{R}.mode")) == "sync":
        yield ctx.finding(
            "FC506", [f"{R}.mode"], f"{R}.mode = sync was removed in verl 0.9", f"set {R}.mode=async or remove it"
        )

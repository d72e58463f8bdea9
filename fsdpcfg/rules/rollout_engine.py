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


#: ``override_config`` entries that change the model's context length or position encoding.
CONTEXT_FIELDS = ("max_position_embeddings", "rope_scaling", "rope_parameters", "rope_theta")


def _max_positions(ctx: Context, override: bool = True) -> tuple[int, str] | None:
    """``(limit, how)``: the model's context limit from config.json, with ``override_config`` applied unless
    ``override`` is false (what the rollout engine reads); a rope-scaling block whose
    ``original_max_position_embeddings`` equals ``max_position_embeddings`` extends it by ``factor``."""
    m = _model(ctx)
    if m is None:
        return None
    tc = dict(m.text_config)
    oc = ctx.get(f"{A}.model.override_config")
    if override and isinstance(oc, dict):
        tc.update({k: v for k, v in oc.items() if k in CONTEXT_FIELDS})
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


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


@rule(
    "FC508",
    "top_p / top_k in the training rollout: samples from a truncated policy the trainer does not score",
    severity="warning",
    keys=[f"{R}.top_p", f"{R}.top_k", "algorithm.rollout_correction.rollout_is"],
    example=["actor_rollout_ref.rollout.top_p=0.9"],
)
def truncated_sampling(ctx: Context) -> Iterable[Finding]:
    """With ``rollout.top_p < 1`` or ``rollout.top_k > 0`` the engine samples the training responses from the
    truncated, renormalised distribution, but verl's actor recomputes ``old_log_prob`` and ``log_prob`` on the
    full vocabulary (it divides the logits by ``temperature`` only, never applies top-p/top-k): the PPO ratio
    and the KL are computed against a policy that did not generate the data, and tokens outside the nucleus have
    probability 0 under the behaviour policy. With rollout importance sampling
    (``algorithm.rollout_correction.rollout_is``) the weights compare vLLM's ``processed_logprobs`` (after the
    truncation, verl's default ``rollout.logprobs_mode``) with the full-vocabulary ones: biased on every token.
    verl runs it (warning); validation's own ``val_kwargs.top_p/top_k`` are not concerned.

    Source: verl/experimental/agent_loop/agent_loop.py (training sampling params ``top_p=config.top_p,
    top_k=config.top_k``), verl/workers/engine/fsdp/transformer_impl.py (``logits.div_(temperature)``, no
    top-p/top-k), verl/trainer/config/rollout/rollout.yaml (``logprobs_mode: processed_logprobs``). Public
    reports: verl-project/verl#6240 (processed vs raw log-probs, "the trainer ones don't apply temperature nor
    top-k/p"; DeepSeek-V3.2's "keep sampling mask"), modelscope/ms-swift#8442 (top-k/top-p made rollout and
    training log-probs disagree; defaults changed), vllm-project/vime#73 and PrimeIntellect-ai/prime-rl#2601
    (the same mismatch).
    """
    tp, tk = ctx.get(f"{R}.top_p"), ctx.get(f"{R}.top_k")
    parts, keys = [], []
    if _number(tp) and tp < 1:
        parts.append(f"{R}.top_p = {tp} {src(ctx, f'{R}.top_p')}")
        keys.append(f"{R}.top_p")
    if _number(tk) and tk > 0:
        parts.append(f"{R}.top_k = {tk} {src(ctx, f'{R}.top_k')}")
        keys.append(f"{R}.top_k")
    if not parts:
        return
    ris = ctx.get("algorithm.rollout_correction.rollout_is")
    extra = (
        f"; algorithm.rollout_correction.rollout_is = {ris} then weights every token by a ratio of the truncated "
        "(rollout) to the full (trainer) probability, biased by construction"
        if ris
        else ""
    )
    yield ctx.finding(
        "FC508",
        keys + (["algorithm.rollout_correction.rollout_is"] if ris else []),
        " and ".join(parts) + ": the training responses are sampled from the truncated distribution, but verl's "
        "actor computes old_log_prob and log_prob on the full vocabulary (temperature only), so the PPO ratio and "
        "KL refer to a policy that did not generate them" + extra,
        f"keep {R}.top_p=1.0 and {R}.top_k=-1 for training (control exploration with {R}.temperature); put "
        f"top_p/top_k under {R}.val_kwargs for validation only",
        severity="warning",
    )


@rule(
    "FC509",
    "several validation samples per prompt (val_kwargs.n > 1) with greedy validation",
    severity="warning",
    keys=[f"{R}.val_kwargs.n", f"{R}.val_kwargs.temperature", f"{R}.val_kwargs.do_sample"],
    example=["actor_rollout_ref.rollout.val_kwargs.n=8"],
)
def greedy_val_samples(ctx: Context) -> Iterable[Finding]:
    """``val_kwargs.n`` repeats every validation prompt ``n`` times (``RayPPOTrainer._validate``:
    ``test_batch.repeat(repeat_times=val_kwargs.n)``), which only measures something when validation samples:

    - ``val_kwargs.temperature <= 0`` (verl's default 0): the engine decodes greedily, the ``n`` answers are
      one answer ``n`` times, ``mean@n`` equals ``mean@1`` and ``best@n``/``maj@n`` are not what they say, for
      ``n`` times the validation cost;
    - ``val_kwargs.do_sample = false`` with a temperature > 0, under the native launcher: it decodes greedily, as
      ``do_sample`` says, and repeats one answer. verl 0.9.1 itself samples there: its agent loop sends
      ``val_kwargs.temperature/top_p/top_k`` to the engine and ignores ``do_sample`` in validation (it only
      reaches ``meta_info``, read by the HF rollout alone), so a verl run is not warned (verl's own
      examples/grpo_trainer/run_deepseek_v4_veomni.sh: ``val_kwargs.n=16``, temperature 1.0, do_sample unset).

    Source: verl/trainer/ppo/ray_trainer.py ``_validate`` (repeat ``val_kwargs.n``, ``meta_info["do_sample"]``),
    verl/experimental/agent_loop/agent_loop.py ``generate_sequences`` (``if validate:`` takes the val_kwargs
    temperature/top_p/top_k only), fsdpcfg/train/validate.py ``validation_settings``. Public reports:
    verl-project/verl#553 (sampling in validation: greedy forced ``n = 1``), #1352 (do_sample in validation),
    #6202 (best practices: ``temperature > 0`` with a larger ``n``).
    """
    n = num(ctx.get(f"{R}.val_kwargs.n"))
    if n is None or n <= 1:
        return
    nk, tk, dk = f"{R}.val_kwargs.n", f"{R}.val_kwargs.temperature", f"{R}.val_kwargs.do_sample"
    t, do_sample = ctx.get(tk), ctx.get(dk)
    if _number(t) and t <= 0:
        yield ctx.finding(
            "FC509",
            [nk, tk],
            f"{nk} = {n} but {tk} = {t} {src(ctx, tk)}: validation decodes greedily, so the {n} answers per prompt "
            f"are one answer repeated; mean@{n} equals mean@1 at {n}x the validation cost",
            f"set {tk} > 0 (e.g. 0.6-1.0) and {dk}=true to sample {n} answers, or {nk}=1 for greedy validation",
            severity="warning",
        )
    elif ctx.launcher == "native" and do_sample is not None and not flag(do_sample) and _number(t) and t > 0:
        yield ctx.finding(
            "FC509",
            [nk, dk, tk],
            f"{nk} = {n} with {dk} = false {src(ctx, dk)}: the native launcher decodes validation greedily as "
            f"{dk} says ({tk} = {t} is not used), so the {n} answers per prompt are one answer repeated",
            f"set {dk}=true to sample {n} answers at {tk} = {t} (as verl 0.9.1 does), or {nk}=1",
            severity="warning",
        )


def _engine_overrides(ctx: Context, name: str) -> dict:
    """The model-config overrides the rollout engine itself receives: vLLM ``engine_kwargs.vllm.hf_overrides``,
    SGLang ``engine_kwargs.sglang.json_model_override_args`` (a JSON string or a mapping); ``{}`` when none."""
    import json

    key = "hf_overrides" if name == "vllm" else "json_model_override_args"
    v = ctx.get(f"{R}.engine_kwargs.{name}.{key}")
    if isinstance(v, str):
        try:
            v = json.loads(v)
        except ValueError:
            return {}
    return v if isinstance(v, dict) else {}


@rule(
    "FC510",
    "override_config changes the context length / RoPE the rollout engine never sees",
    keys=[f"{A}.model.override_config", f"{R}.max_model_len", f"{R}.engine_kwargs"],
    example=[
        "launcher=verl",
        "rollout=vllm",
        "actor_rollout_ref.model.path=<Qwen2.5-0.5B-Instruct folder>",
        "+actor_rollout_ref.model.override_config.max_position_embeddings=65536",
    ],
)
def override_context_unseen(ctx: Context) -> Iterable[Finding]:
    """``actor_rollout_ref.model.override_config`` is applied to the trainer's model config (``HFModelConfig``:
    ``update_model_config(hf_config, override_config)``), which is also what verl sizes ``rollout.max_model_len``
    from (``_validate_configs``: ``max_model_len = max_position_embeddings`` when unset); but vLLM and SGLang
    load ``config.json`` from the model folder themselves (``vllm serve <local_path>``, ``model_path``), with
    only verl's quantization overrides. So:

    - a larger context (``max_position_embeddings``, or a ``rope_scaling`` factor) makes verl ask the engine for
      a ``max_model_len`` beyond what it derives from ``config.json``: vLLM refuses to start ("User-specified
      max_model_len ... is greater than the derived max_model_len"), SGLang rejects the longer requests (error);
    - a changed ``rope_scaling`` / ``rope_theta`` / ``rope_parameters`` within the file's length: the engine
      generates with the checkpoint's position encoding while the trainer scores with the overridden one, a
      rollout/training mismatch on every token (warning).

    Not when the same values reach the engine (``rollout.engine_kwargs.vllm.hf_overrides`` /
    ``rollout.engine_kwargs.sglang.json_model_override_args``, which verl passes through).

    Source: verl/workers/config/model.py ``HFModelConfig.__post_init__`` (override_config),
    verl/workers/rollout/vllm_rollout/vllm_async_server.py ``_validate_configs`` and ``launch_server``
    (``hf_overrides`` from ``_apply_quantization`` only, then ``**engine_kwargs``),
    verl/workers/rollout/sglang_rollout/async_sglang_server.py (``model_path``, ``json_model_override_args``
    for FP8 only); vLLM ``ModelConfig`` ``_get_and_verify_max_len``. Public reports: verl-project/verl#1522
    (overriding RoPE scaling for vLLM rollouts of a model whose config.json lacks it), modelscope/ms-swift#5146
    ("vLLM updates model length based only on the rope setting in config.json"; ``max_model_len`` then
    refused), vllm-project/recipes#856 (YaRN is given to vLLM through ``--hf-overrides``).
    """
    name = rollout_name(ctx)
    m = _model(ctx)
    ok = f"{A}.model.override_config"
    oc = ctx.get(ok)
    if name not in ("vllm", "sglang") or m is None or not isinstance(oc, dict):
        return
    tc = m.text_config
    engine = _engine_overrides(ctx, name)
    changed = {k: oc[k] for k in CONTEXT_FIELDS if k in oc and oc[k] != tc.get(k) and engine.get(k) != oc[k]}
    if not changed:
        return
    trainer, file_lim = _max_positions(ctx), _max_positions(ctx, override=False)
    mk = f"{R}.max_model_len"
    mml = num(val(ctx, mk))
    # verl's default max_model_len: the overridden max_position_embeddings (get_max_position_embeddings)
    asked = mml if mml else num(oc.get("max_position_embeddings")) or num(tc.get("max_position_embeddings"))
    ek = f"{R}.engine_kwargs.{name}." + ("hf_overrides" if name == "vllm" else "json_model_override_args")
    shown = ", ".join(f"{k}={v}" for k, v in changed.items())
    fix = f"give the engine the same overrides ({ek}: {{{shown}}}), or drop them from {ok}"
    if file_lim is not None and asked and asked > file_lim[0]:
        how = f"{mk} = {mml}" if mml else f"{mk} unset: verl sets it to the overridden max_position_embeddings {asked}"
        refusal = "vLLM refuses to start" if name == "vllm" else "SGLang rejects the longer requests"
        yield ctx.finding(
            "FC510",
            [ok, mk],
            f"{ok} sets {shown}, which {name} never receives (it reads {m.folder}/config.json: {file_lim[1]}); "
            f"{how} > the engine's limit {file_lim[0]}: {refusal}",
            fix,
            derivation=f"trainer: {trainer[1] if trainer else '?'}; engine: {file_lim[1]}",
        )
        return
    rope = {k: v for k, v in changed.items() if k != "max_position_embeddings"}
    if rope:
        yield ctx.finding(
            "FC510",
            [ok],
            f"{ok} sets {', '.join(f'{k}={v}' for k, v in rope.items())} for the trainer, but {name} reads "
            f"{m.folder}/config.json without it: responses are generated with the checkpoint's position encoding "
            "and scored with another (rollout/training log-prob mismatch on every token)",
            fix,
            severity="warning",
        )

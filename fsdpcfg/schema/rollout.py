"""``actor_rollout_ref.rollout``: the generation engine (verl's ``RolloutConfig``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import field_validator

from fsdpcfg.native import backends
from fsdpcfg.schema._base import (
    MAX_RANKS_PER_NODE,
    MAX_SAMPLES,
    MAX_SEED,
    MAX_SIZE,
    MAX_TOKENS,
    F,
    Precision,
    Section,
    Sub,
)

#: rollout backends and the launchers that run them (see :mod:`fsdpcfg.rules.launcher_rules`): the registrations of
#: :data:`fsdpcfg.native.backends.ROLLOUTS`.
if TYPE_CHECKING:
    RolloutName = str
else:
    RolloutName = Literal[backends.ROLLOUTS.names()]
BACKEND_LAUNCHERS: dict[str, tuple[str, ...]] = {b.name: b.launchers for b in backends.ROLLOUTS}


def _top_k(v: int) -> int:
    if v == 0 or v < -1:
        raise ValueError("must be -1 (no top-k) or a positive number of tokens")
    return v


class ValKwargs(Section):
    """Sampling used for validation generations."""

    top_k: int = F(-1, ge=-1, le=MAX_SIZE, description="top-k (-1: off)")
    top_p: float = F(1.0, gt=0, le=1, description="nucleus probability mass")
    temperature: float = F(0, ge=0, description="temperature (0: greedy)")
    n: int = F(1, le=MAX_SAMPLES, ge=1, description="samples per validation prompt")
    do_sample: bool = F(False, description="sample instead of greedy decoding")

    _check_top_k = field_validator("top_k")(classmethod(lambda cls, v: _top_k(v)))


class RolloutSection(Section):
    """How responses are generated from the current policy."""

    name: RolloutName = F(description="backend: hf (native launcher), vllm, sglang or trtllm (launcher=verl)")
    mode: Literal["async"] = F("async", description="server mode; verl 0.9.1 supports async only")
    temperature: float = F(1.0, ge=0, description="sampling temperature")
    top_k: int = F(-1, ge=-1, le=MAX_SIZE, description="top-k (-1: off)")
    top_p: float = F(1, gt=0, le=1, description="nucleus probability mass")
    do_sample: bool = F(True, description="sample (false: greedy)")
    n: int = F(1, le=MAX_SAMPLES, ge=1, description="responses per prompt (group size of GRPO)")
    seed: int = F(42, ge=0, le=MAX_SEED, description="sampling seed")
    prompt_length: int = F(
        512, le=MAX_TOKENS, gt=0, description="prompt token budget (default: data.max_prompt_length)"
    )
    response_length: int = F(
        512, le=MAX_TOKENS, gt=0, description="response token budget (default: data.max_response_length)"
    )
    dtype: Precision = F("bfloat16", description="dtype of the rollout weights")
    gpu_memory_utilization: float = F(0.5, gt=0, le=1, description="fraction of GPU memory the engine may take")
    ignore_eos: bool = F(False, description="keep generating after EOS")
    enforce_eager: bool = F(False, description="disable CUDA graphs")
    free_cache_engine: bool = F(True, description="release the KV cache between rollouts")
    tensor_model_parallel_size: int = F(
        2, le=MAX_RANKS_PER_NODE, ge=1, description="tensor-parallel ranks of one engine (verl's default is 2)"
    )
    data_parallel_size: int = F(1, le=MAX_SIZE, ge=1, description="data-parallel ranks inside one engine")
    expert_parallel_size: int = F(1, le=MAX_SIZE, ge=1, description="expert-parallel ranks (MoE)")
    pipeline_model_parallel_size: int = F(1, le=MAX_SIZE, ge=1, description="pipeline-parallel ranks of one engine")
    max_num_batched_tokens: int = F(8192, le=MAX_SIZE, gt=0, description="tokens per scheduler step")
    max_model_len: int | None = F(
        None, le=MAX_TOKENS, gt=0, description="engine context length (null: prompt + response)"
    )
    max_num_seqs: int = F(256, le=MAX_SIZE, gt=0, description="sequences per scheduler step")
    enable_chunked_prefill: bool = F(True, description="split long prefills over scheduler steps")
    enable_prefix_caching: bool = F(True, description="reuse KV cache of shared prefixes")
    load_format: str = F("dummy", description="how the engine loads initial weights (per-backend values)")
    layered_summon: bool = F(False, description="gather FSDP weights layer by layer for the sync")
    log_prob_micro_batch_size: int | None = F(
        None, le=MAX_SIZE, gt=0, description="deprecated global micro batch of the old log-prob recomputation"
    )
    log_prob_micro_batch_size_per_gpu: int | None = F(
        None, le=MAX_SIZE, gt=0, description="sequences per old-log-prob forward on one rank"
    )
    log_prob_use_dynamic_bsz: bool = F(False, description="pack by tokens (default: the actor's use_dynamic_bsz)")
    log_prob_max_token_len_per_gpu: int = F(
        16384, le=MAX_TOKENS, gt=0, description="token budget per rank when dynamic"
    )
    calculate_log_probs: bool = F(True, description="return the engine's own log-probs (for diagnostics)")
    val_kwargs: ValKwargs = Sub(ValKwargs, "sampling of validation generations")

    _check_top_k = field_validator("top_k")(classmethod(lambda cls, v: _top_k(v)))

"""``actor_rollout_ref.ref``: the frozen reference policy for the KL term (verl's ``FSDPActorConfig`` as ref)."""

from __future__ import annotations

from fsdpcfg.schema._base import MAX_RANKS_PER_NODE, MAX_SIZE, MAX_TOKENS, F, Section, Strategy, Sub
from fsdpcfg.schema.actor import FSDPConfig


class RefSection(Section):
    """The reference model: forward-only log-probs of the initial policy."""

    strategy: Strategy = F("fsdp", description="training engine of the reference (default: the actor's)")
    log_prob_micro_batch_size: int | None = F(
        None,
        le=MAX_SIZE,
        gt=0,
        description="deprecated global micro batch of reference log-probs; use log_prob_micro_batch_size_per_gpu",
    )
    log_prob_micro_batch_size_per_gpu: int | None = F(
        None, le=MAX_SIZE, gt=0, description="sequences per reference forward on one rank"
    )
    log_prob_use_dynamic_bsz: bool = F(False, description="pack by tokens (default: the actor's use_dynamic_bsz)")
    log_prob_max_token_len_per_gpu: int = F(
        16384, le=MAX_TOKENS, gt=0, description="token budget per rank when dynamic (default: the actor's)"
    )
    ulysses_sequence_parallel_size: int = F(
        1, le=MAX_RANKS_PER_NODE, ge=1, description="Ulysses ranks (default: the actor's)"
    )
    fsdp_config: FSDPConfig = Sub(FSDPConfig, "FSDP engine settings of the reference")

"""GRPO: group-relative outcome advantages and the clipped (dual-clip) PPO policy loss, as verl 0.9.1 computes
them (``compute_grpo_outcome_advantage``, ``compute_policy_loss_vanilla``, ``ppo_loss`` in
``verl/workers/utils/losses.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from fsdpcfg.train.algorithm.losses import agg_loss, kl_penalty, masked_mean

if TYPE_CHECKING:
    from fsdpcfg.schema.actor import ActorSection, KLType, LossAggMode


def token_level_rewards(scores: torch.Tensor, response_mask: torch.Tensor) -> torch.Tensor:
    """Place each sequence's scalar score on its last valid response token.

    Args:
        scores: ``(batch,)`` outcome rewards.
        response_mask: ``(batch, response_len)`` 1 for generated tokens up to and including the end token.

    Returns:
        ``(batch, response_len)`` float tensor, zero except at the last valid token (an empty response gets
        it on position 0, where the mask hides it from the loss).
    """
    out = torch.zeros(response_mask.shape, dtype=torch.float32)
    last = (response_mask.sum(dim=-1).long() - 1).clamp_min(0)
    out[torch.arange(out.shape[0]), last] = scores.float()
    return out


def grpo_advantages(
    token_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    index: Sequence,
    *,
    norm_adv_by_std: bool = True,
    epsilon: float = 1e-6,
) -> torch.Tensor:
    """Group-normalised outcome advantages, broadcast over each response's tokens.

    A sequence's score is the sum of its token rewards; sequences with the same ``index`` (one prompt's
    ``rollout.n`` samples) form a group; the advantage is ``(score - mean) / (std + epsilon)`` with the
    unbiased std (``torch.std``), or ``score - mean`` when ``norm_adv_by_std`` is false (Dr.GRPO). A group of
    one has mean 0 and std 1.

    Args:
        token_rewards: ``(batch, response_len)``.
        response_mask: ``(batch, response_len)``.
        index: ``batch`` hashable group ids.

    Returns:
        ``(batch, response_len)`` advantages, zero outside the response mask.
    """
    scores = token_rewards.sum(dim=-1).float()
    groups: dict = {}
    for i, g in enumerate(index):
        groups.setdefault(g, []).append(i)
    adv = torch.empty_like(scores)
    for members in groups.values():
        s = scores[members]
        if len(members) == 1:
            mean, std = torch.tensor(0.0), torch.tensor(1.0)
        else:
            mean, std = s.mean(), s.std()
        adv[members] = (s - mean) / (std + epsilon) if norm_adv_by_std else s - mean
    return adv.unsqueeze(-1) * response_mask.float()


def policy_loss_vanilla(
    old_log_prob: torch.Tensor,
    log_prob: torch.Tensor,
    advantages: torch.Tensor,
    response_mask: torch.Tensor,
    *,
    clip_ratio_low: float,
    clip_ratio_high: float,
    clip_ratio_c: float = 3.0,
    loss_agg_mode: str = "token-mean",
    **global_batch,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Clipped PPO policy loss with dual clip (Ye et al. 2019), all inputs ``(batch, response_len)``.

    ``ratio = exp(clamp(lp - old, -20, 20))``; per token ``l1 = -A ratio``, ``l2 = -A clip(ratio, 1-low, 1+high)``,
    ``l = max(l1, l2)``; for ``A < 0`` the loss is further capped at ``-A clip_ratio_c``. Aggregated with
    :func:`agg_loss` (``global_batch``: ``dp_size``, ``batch_num_tokens``, ``global_batch_size``).

    Returns:
        ``(loss, metrics)`` with metrics ``actor/pg_clipfrac`` (share of tokens where the clip is active),
        ``actor/ppo_kl`` (mean ``old - lp``) and ``actor/pg_clipfrac_lower`` (tokens where the dual clip acts).

    Raises:
        ValueError: ``clip_ratio_c <= 1``.
    """
    if clip_ratio_c <= 1.0:
        raise ValueError(f"clip_ratio_c must be > 1 for dual-clip PPO, got {clip_ratio_c}")
    neg_kl = torch.clamp(log_prob - old_log_prob, min=-20.0, max=20.0)
    ratio = torch.exp(neg_kl)
    mask = response_mask.float()
    l1 = -advantages * ratio
    l2 = -advantages * torch.clamp(ratio, 1 - clip_ratio_low, 1 + clip_ratio_high)
    clipped = torch.maximum(l1, l2)
    l3 = -advantages * clip_ratio_c
    dual = torch.minimum(l3, clipped)
    per_token = torch.where(advantages < 0, dual, clipped)
    loss = agg_loss(per_token, mask, loss_agg_mode, **global_batch)
    metrics = {
        "actor/pg_clipfrac": masked_mean(torch.gt(l2, l1).float(), mask).item(),
        "actor/ppo_kl": masked_mean(-neg_kl, mask).item(),
        "actor/pg_clipfrac_lower": masked_mean(torch.gt(clipped, l3).float() * (advantages < 0).float(), mask).item(),
    }
    return loss, metrics


@dataclass
class ActorLossConfig:
    """The actor-loss settings, from ``actor_rollout_ref.actor`` (verl names)."""

    clip_ratio_low: float
    clip_ratio_high: float
    clip_ratio_c: float
    loss_agg_mode: LossAggMode
    entropy_coeff: float
    use_kl_loss: bool
    kl_loss_coef: float
    kl_loss_type: KLType

    @classmethod
    def from_actor_cfg(cls, actor: ActorSection) -> ActorLossConfig:
        """Read the settings from the ``actor_rollout_ref.actor`` section; ``clip_ratio_low/high`` fall back to
        ``clip_ratio`` when null, as in verl. The values are the schema's (``loss_agg_mode``, ``kl_loss_type``:
        literals; ``clip_ratio_c > 1``); the policy loss is vanilla under the native launcher by rule FC803
        (declared in :mod:`fsdpcfg.native.support`), which ran before the run started.
        """
        low = actor.clip_ratio_low if actor.clip_ratio_low is not None else actor.clip_ratio
        high = actor.clip_ratio_high if actor.clip_ratio_high is not None else actor.clip_ratio
        return cls(
            clip_ratio_low=float(low),
            clip_ratio_high=float(high),
            clip_ratio_c=float(actor.clip_ratio_c),
            loss_agg_mode=actor.loss_agg_mode,
            entropy_coeff=float(actor.entropy_coeff),
            use_kl_loss=bool(actor.use_kl_loss),
            kl_loss_coef=float(actor.kl_loss_coef),
            kl_loss_type=actor.kl_loss_type,
        )


def ppo_actor_loss(
    cfg: ActorLossConfig,
    log_prob: torch.Tensor,
    entropy: torch.Tensor | None,
    old_log_prob: torch.Tensor,
    advantages: torch.Tensor,
    response_mask: torch.Tensor,
    ref_log_prob: torch.Tensor | None = None,
    **global_batch,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The actor's loss on one micro-batch: policy loss, minus ``entropy_coeff`` x entropy, plus
    ``kl_loss_coef`` x KL to the reference when ``use_kl_loss`` (all aggregated with ``loss_agg_mode``).

    Args:
        log_prob, old_log_prob, advantages, response_mask, ref_log_prob: ``(batch, response_len)``.
        entropy: ``(batch, response_len)`` or ``None`` (then the entropy term is skipped).

    Returns:
        ``(loss, metrics)``; metrics hold ``actor/pg_loss``, ``actor/kl_loss``, ``actor/entropy`` as this
        micro-batch's contribution to the mini-batch value (they sum over micro-batches and average over ranks).
    """
    pg_loss, metrics = policy_loss_vanilla(
        old_log_prob,
        log_prob,
        advantages,
        response_mask,
        clip_ratio_low=cfg.clip_ratio_low,
        clip_ratio_high=cfg.clip_ratio_high,
        clip_ratio_c=cfg.clip_ratio_c,
        loss_agg_mode=cfg.loss_agg_mode,
        **global_batch,
    )
    metrics["actor/pg_loss"] = pg_loss.item()
    loss = pg_loss
    mask = response_mask.float()
    if entropy is not None:
        ent = agg_loss(entropy, mask, cfg.loss_agg_mode, **global_batch)
        metrics["actor/entropy"] = ent.item()
        if cfg.entropy_coeff:
            loss = loss - cfg.entropy_coeff * ent
    if cfg.use_kl_loss:
        if ref_log_prob is None:
            raise ValueError("use_kl_loss needs ref_log_prob")
        kl = agg_loss(kl_penalty(log_prob, ref_log_prob, cfg.kl_loss_type), mask, cfg.loss_agg_mode, **global_batch)
        metrics["actor/kl_loss"] = kl.item()
        loss = loss + cfg.kl_loss_coef * kl
    return loss, metrics

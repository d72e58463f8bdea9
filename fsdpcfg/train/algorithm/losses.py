"""Loss building blocks shared by the policy-gradient algorithms: masked means, loss aggregation, KL estimators
and entropy. Shapes: ``(batch, response_len)`` for per-token matrices; masks are 0/1 of the same shape."""

from __future__ import annotations

from typing import get_args

import torch

from fsdpcfg.schema.actor import KLType, LossAggMode

#: loss_agg_mode values the native loop implements: all of verl's ``agg_loss`` (one home: the schema's literal).
LOSS_AGG_MODES: tuple[str, ...] = get_args(LossAggMode)
#: kl estimator names (verl's ``kl_penalty``, the schema's literal without the ``+`` forms); a trailing ``+``
#: uses the k2 gradient with the named value.
KL_TYPES: tuple[str, ...] = tuple(k for k in get_args(KLType) if not k.endswith("+"))


def masked_sum(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Sum of ``values`` where ``mask`` is 1 (any shape, same for both)."""
    return (values * mask).sum()


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``values`` where ``mask`` is 1; 0 when the mask is empty."""
    return (values * mask).sum() / mask.sum().clamp_min(1)


def agg_loss(
    loss_mat: torch.Tensor,
    loss_mask: torch.Tensor,
    loss_agg_mode: str,
    *,
    dp_size: int = 1,
    batch_num_tokens: float | torch.Tensor | None = None,
    global_batch_size: float | torch.Tensor | None = None,
    loss_scale_factor: float | None = None,
) -> torch.Tensor:
    """Aggregate a ``(batch, response_len)`` loss matrix of one micro-batch into the scalar to backpropagate.

    The normaliser is the whole mini-batch over all data-parallel ranks (``batch_num_tokens`` valid tokens,
    ``global_batch_size`` sequences), times ``dp_size`` because FSDP averages gradients over ranks; summing the
    micro-batch losses of a mini-batch then gives the gradient of the global mean, whatever the micro-batch
    split. With ``dp_size=1`` and no totals given, the micro-batch is the whole batch.

    Modes: ``token-mean`` (sum over valid tokens / tokens), ``token-sum``, ``seq-mean-token-sum`` (per-sequence
    token sum, mean over sequences), ``seq-mean-token-mean`` (per-sequence token mean, mean over sequences),
    ``seq-mean-token-sum-norm`` (seq-mean-token-sum / ``loss_scale_factor``, default ``response_len``).

    Raises:
        ValueError: an unknown mode, or ``dp_size > 1`` without the global totals.
    """
    mask = loss_mask.to(loss_mat.dtype)
    if loss_agg_mode == "token-mean":
        if batch_num_tokens is None:
            if dp_size > 1:
                raise ValueError("batch_num_tokens (global) is required when dp_size > 1")
            batch_num_tokens = mask.sum()
        return masked_sum(loss_mat, mask) / batch_num_tokens * dp_size
    if loss_agg_mode == "token-sum":
        return masked_sum(loss_mat, mask) * dp_size
    if loss_agg_mode in ("seq-mean-token-sum", "seq-mean-token-sum-norm", "seq-mean-token-mean"):
        tokens = mask.sum(dim=-1)
        if loss_agg_mode == "seq-mean-token-mean":
            seq_losses = (loss_mat * mask).sum(dim=-1) / (tokens + 1e-8)
        else:
            seq_losses = (loss_mat * mask).sum(dim=-1)
        seq_mask = (tokens > 0).to(loss_mat.dtype)
        if global_batch_size is None:
            if dp_size > 1:
                raise ValueError("global_batch_size is required when dp_size > 1")
            global_batch_size = seq_mask.sum()
        loss = masked_sum(seq_losses, seq_mask) / global_batch_size * dp_size
        if loss_agg_mode == "seq-mean-token-sum-norm":
            loss = loss / (loss_scale_factor if loss_scale_factor is not None else loss_mask.shape[-1])
        return loss
    raise ValueError(f"unknown loss_agg_mode {loss_agg_mode!r}; allowed: {', '.join(LOSS_AGG_MODES)}")


def kl_penalty(logprob: torch.Tensor, ref_logprob: torch.Tensor, kind: str) -> torch.Tensor:
    """Per-token KL estimate between the policy and the reference, ``(batch, response_len)``.

    ``kl``/``k1``: ``lp - ref``; ``abs``: ``|lp - ref|``; ``mse``/``k2``: ``0.5 (lp - ref)^2``;
    ``low_var_kl``/``k3``: ``exp(ref - lp) - (ref - lp) - 1`` with ``ref - lp`` clamped to [-20, 20] and the
    result to [-10, 10] (Schulman's k3). A trailing ``+`` (``k3+``) keeps the value and takes k2's gradient.

    Raises:
        ValueError: an unknown estimator.
    """
    straight_through = kind.endswith("+") and kind not in ("mse+", "k2+")
    base = kind[:-1] if kind.endswith("+") else kind
    if base in ("kl", "k1"):
        value = logprob - ref_logprob
    elif base == "abs":
        value = (logprob - ref_logprob).abs()
    elif base in ("mse", "k2"):
        value = 0.5 * (logprob - ref_logprob).square()
    elif base in ("low_var_kl", "k3"):
        kl = torch.clamp(ref_logprob - logprob, min=-20, max=20)
        value = torch.clamp(torch.exp(kl) - kl - 1, min=-10, max=10)
    else:
        raise ValueError(f"unknown kl estimator {kind!r}; allowed: {', '.join(KL_TYPES)} (optionally with '+')")
    if straight_through:
        k2 = 0.5 * (logprob - ref_logprob).square()
        return k2 - k2.detach() + value.detach()
    return value


def entropy_from_logits(logits: torch.Tensor) -> torch.Tensor:
    """Entropy of the categorical distribution at each position: ``(..., vocab) -> (...)``, in nats."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    return -(logp.exp() * logp).sum(dim=-1)


def token_log_probs(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Log-probability of ``labels`` under ``logits``: ``(batch, T, vocab), (batch, T) -> (batch, T)``, fp32."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    return logp.gather(-1, labels.unsqueeze(-1)).squeeze(-1)

"""The forward pass that scores responses: per-token log-probabilities (and entropy) of the response part of
left-padded prompt + right-padded response sequences. Shared by the sharded actor, the reference model and the
unsharded rollout replica, so that they compute the same numbers the same way."""

from __future__ import annotations

import torch
from torch import nn

from fsdpcfg.train.algorithm.losses import entropy_from_logits, token_log_probs
from fsdpcfg.train.patches.remove_padding import is_packed, packed_response_log_probs


def position_ids_from_mask(attention_mask: torch.Tensor) -> torch.Tensor:
    """Positions counted over real tokens only: ``(batch, seq) -> (batch, seq)``, 0 on left padding."""
    return (attention_mask.long().cumsum(dim=-1) - 1).clamp_min(0)


def response_log_probs(
    module: nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    response_len: int,
    *,
    with_entropy: bool = False,
    temperature: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Log-probs of the last ``response_len`` tokens of each sequence.

    Args:
        module: a causal LM (plain, FSDP1-wrapped or FSDP2-sharded) accepting ``logits_to_keep``.
        input_ids: ``(batch, prompt_len + response_len)``: left-padded prompt, right-padded response.
        attention_mask: same shape, 1 on real tokens.
        response_len: number of response positions at the end.
        with_entropy: also return the per-token entropy of the predictive distribution.
        temperature: logits are divided by it before the softmax (verl scores with the rollout temperature).

    Returns:
        ``(log_probs, entropy)``, each ``(batch, response_len)`` in fp32 (entropy ``None`` unless asked).
        Only the ``response_len + 1`` last positions go through the LM head, so the vocabulary-sized logits
        stay small. A model marked by the ``remove_padding`` patch runs packed instead
        (:func:`fsdpcfg.train.patches.remove_padding.packed_response_log_probs`).
    """
    if is_packed(module):  # remove_padding patch: the same numbers from the real tokens only
        return packed_response_log_probs(
            module, input_ids, attention_mask, response_len, with_entropy=with_entropy, temperature=temperature
        )
    out = module(
        input_ids=input_ids,
        attention_mask=attention_mask,
        position_ids=position_ids_from_mask(attention_mask),
        use_cache=False,
        logits_to_keep=response_len + 1,
    )
    logits = out.logits[:, :-1, :].float()
    if temperature != 1.0:
        logits = logits / temperature
    labels = input_ids[:, -response_len:]
    logp = token_log_probs(logits, labels)
    ent = entropy_from_logits(logits) if with_entropy else None
    return logp, ent


@torch.no_grad()
def batched_log_probs(
    module: nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    response_len: int,
    micro_batch: int,
    *,
    temperature: float = 1.0,
) -> torch.Tensor:
    """:func:`response_log_probs` over ``micro_batch`` sequences at a time, without gradients:
    ``(batch, seq) -> (batch, response_len)``."""
    return _batched(module, input_ids, attention_mask, response_len, micro_batch, temperature, False)[0]


@torch.no_grad()
def batched_log_probs_and_entropy(
    module: nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    response_len: int,
    micro_batch: int,
    *,
    temperature: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`batched_log_probs` and the per-token entropy of the same pass (verl's old-log-prob pass reports
    ``actor/entropy`` from it): two ``(batch, response_len)`` tensors."""
    lp, ent = _batched(module, input_ids, attention_mask, response_len, micro_batch, temperature, True)
    assert ent is not None
    return lp, ent


def _batched(
    module: nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    response_len: int,
    micro_batch: int,
    temperature: float,
    with_entropy: bool,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    lps, ents = [], []
    for i in range(0, input_ids.shape[0], micro_batch):
        lp, ent = response_log_probs(
            module,
            input_ids[i : i + micro_batch],
            attention_mask[i : i + micro_batch],
            response_len,
            temperature=temperature,
            with_entropy=with_entropy,
        )
        lps.append(lp)
        if ent is not None:
            ents.append(ent)
    return torch.cat(lps, dim=0), (torch.cat(ents, dim=0) if with_entropy else None)

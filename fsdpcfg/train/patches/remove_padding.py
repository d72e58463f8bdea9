"""``remove_padding``: packed sequences without pad tokens (verl's ``actor_rollout_ref.model.use_remove_padding``).

How (transformers 5.10, CPU and GPU alike): the real tokens of a micro-batch are concatenated into one row
``(1, total_tokens)`` with ``position_ids`` that restart at 0 for every sequence, and no ``attention_mask``.
transformers' ``masking_utils.create_causal_mask`` then detects the packed layout
(``find_packed_sequence_indices``: a new sequence wherever the position does not grow by exactly 1) and builds a
block-diagonal causal mask for ``sdpa`` and ``eager`` attention, so no token attends across sequences. The LM
head runs only on the positions that predict response tokens (``logits_to_keep`` given as indices). Positions
equal the padded path's (``cumsum(attention_mask) - 1``), so rotary embeddings see the same numbers.

verl does the same with flash-attention varlen kernels (``cu_seqlens``); those need CUDA, the mask route runs
everywhere. The model types of its declaration (:mod:`fsdpcfg.patches.remove_padding`) are the ones whose packed
forward is verified against the padded one by tests/train/patches/test_remove_padding.py; others are refused (rule
FC361, and :func:`apply` at launch).

Nothing is monkey-patched: :func:`apply` marks the model instance, and the engine's forward
(``fsdpcfg.train.engine.forward.response_log_probs``) routes marked models through :func:`packed_response_log_probs`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fsdpcfg.errors import ConfigError

if TYPE_CHECKING:
    import torch
    from torch import nn
    from transformers import PreTrainedModel

#: Attribute set on a model whose engine forward is packed (read by :func:`is_packed`).
LAYOUT_ATTR = "fsdpcfg_forward_layout"
#: Attention implementations that honour the packed-sequence mask of ``masking_utils``.
MASK_ATTENTION = ("sdpa", "eager")


def apply(model: PreTrainedModel) -> None:
    """Mark ``model`` (an unsharded HF causal LM) for the packed forward.

    Raises:
        ConfigError: its attention implementation cannot mask packed sequences (names the model_type and the
            implementation; ``flash_attention_2`` packs through ``cu_seq_lens`` and is left to launcher=verl).
    """
    impl = getattr(model.config, "_attn_implementation", None) or "eager"
    if impl not in MASK_ATTENTION:
        raise ConfigError(
            f"remove_padding: model_type {model.config.model_type!r} uses attention {impl!r}, which "
            f"the native packed forward does not drive (it needs one of {', '.join(MASK_ATTENTION)})",
            key="actor_rollout_ref.model.use_remove_padding",
            fix="set +actor_rollout_ref.model.override_config.attn_implementation=sdpa, or patches=none",
        )
    setattr(model, LAYOUT_ATTR, "packed")


def is_packed(module: nn.Module) -> bool:
    """True when ``module`` (plain, FSDP1-wrapped or FSDP2-sharded) was marked by :func:`apply`."""
    return getattr(module, LAYOUT_ATTR, "padded") == "packed"


def pack(input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Concatenate the real tokens of every row.

    Args:
        input_ids, attention_mask: ``(batch, seq)``; 1 in the mask marks a real token.

    Returns:
        ``(ids, position_ids, index)``: ``ids`` and ``position_ids`` ``(1, total)``, positions restarting at 0
        in each row (``cumsum(mask) - 1``, the padded path's positions); ``index`` ``(batch, seq)`` the column of
        each real token in the packed row, -1 on padding.
    """
    import torch

    keep = attention_mask.bool()
    pos = (attention_mask.long().cumsum(-1) - 1).clamp_min(0)
    index = torch.full_like(input_ids, -1)
    index[keep] = torch.arange(int(keep.sum()), device=input_ids.device)
    return input_ids[keep].unsqueeze(0), pos[keep].unsqueeze(0), index


def packed_response_log_probs(
    module: nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    response_len: int,
    *,
    with_entropy: bool = False,
    temperature: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The packed twin of ``fsdpcfg.train.engine.forward.response_log_probs`` (same arguments and shapes).

    Returns:
        ``(log_probs, entropy)`` ``(batch, response_len)`` fp32: the log-prob of each real response token (its
        label and the token before it both real); 0 on response padding, where the padded path computes a
        value nobody reads (every loss masks it with ``response_mask``).
    """
    import torch

    from fsdpcfg.train.algorithm.losses import entropy_from_logits, token_log_probs

    if not 0 < response_len < input_ids.shape[1]:
        raise ValueError(f"response_len {response_len} must be between 1 and seq - 1 = {input_ids.shape[1] - 1}")
    ids, pos, index = pack(input_ids, attention_mask)
    cols = torch.arange(input_ids.shape[1] - response_len, input_ids.shape[1], device=input_ids.device)
    src = index[:, cols - 1]  # packed column predicting each response token
    valid = attention_mask[:, cols].bool() & (src >= 0)
    out = module(input_ids=ids, position_ids=pos, use_cache=False, logits_to_keep=src[valid])
    logits = out.logits[0].float()  # (n_valid, vocab)
    if temperature != 1.0:
        logits = logits / temperature
    logp = torch.zeros(valid.shape, dtype=torch.float32, device=input_ids.device)
    logp = logp.masked_scatter(valid, token_log_probs(logits.unsqueeze(0), input_ids[:, cols][valid].unsqueeze(0))[0])
    ent = None
    if with_entropy:
        ent = torch.zeros(valid.shape, dtype=torch.float32, device=input_ids.device)
        ent = ent.masked_scatter(valid, entropy_from_logits(logits))
    return logp, ent

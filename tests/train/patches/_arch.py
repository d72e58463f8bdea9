"""Helpers of the patch tests: tiny scaled-down real architectures (``fsdpcfg.assets``) and a padded batch.

ARCHS maps a readable id to the asset name; every one is a real config.json (../shared/data/model_configs)
scaled down to 2 layers, hidden 64, with its real architecture class.
"""

from __future__ import annotations

import torch

ARCHS = {
    "qwen2": "tiny-qwen2",
    "qwen3": "tiny-qwen3",
    "llama": "tiny-llama3",
    "mistral": "tiny-mistral",
    "gemma": "tiny-gemma",
    "phi3": "tiny-phi3",
    "mixtral": "tiny-mixtral",
    "deepseek_v2": "tiny-deepseek-v2",
    "gemma2": "tiny-gemma2",
    "qwen3_moe": "tiny-qwen3-moe",
}
PROMPT, RESPONSE = 7, 6


def load(path, attn: str | None = None):
    """The model at ``path`` in fp32, eval mode; ``attn`` picks the attention implementation."""
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    kw = {"attn_implementation": attn} if attn else {}
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, **kw)
    model.config.use_cache = False
    return model.eval()


def padded_batch(vocab: int, rows: int = 4, seed: int = 0):
    """``(input_ids, attention_mask)`` ``(rows, PROMPT + RESPONSE)``: left-padded prompts of different lengths,
    right-padded responses of different lengths (one row unpadded)."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, min(vocab, 5000), (rows, PROMPT + RESPONSE), generator=g)
    mask = torch.ones_like(ids)
    for i in range(rows):
        mask[i, : (2 * i) % 5] = 0
        if i % 3:
            mask[i, -(i % 3) * 2 :] = 0
    return ids, mask


def grads(model) -> dict[str, torch.Tensor]:
    return {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}


def max_rel_grad_diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    """max |a - b| over all parameters, divided by max |a| (one global scale)."""
    assert a.keys() == b.keys() and a
    scale = max(float(v.abs().max()) for v in a.values())
    return max(float((a[k] - b[k]).abs().max()) for k in a) / scale

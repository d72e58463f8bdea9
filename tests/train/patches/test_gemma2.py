"""Gemma 2 on transformers 5.10 (tiny-gemma2: Gemma2Config() defaults scaled down): what the attention
implementations do with attention logit soft-capping, and remove_padding with a sliding window that bites.

Soft-capping (``tanh(s / cap) * cap`` on the attention scores) is applied by the eager path and skipped by sdpa:
with a cap small enough to change the scores (0.05), sdpa's logits equal its uncapped logits (<= 1e-6) while
eager's move by more than 1e-5 (the ablation that shows the comparison can fail). That is rule FC471's fact, and
why the matrix runs Gemma 2 with ``override_config.attn_implementation=eager``; the native loader honours it.
"""

from __future__ import annotations

import pytest
import torch
from _arch import RESPONSE, padded_batch

from fsdpcfg.train.engine.forward import response_log_probs
from fsdpcfg.train.model import load_model
from fsdpcfg.train.patches import remove_padding


def _load(path, **kw):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, **kw).eval()
    model.config.use_cache = False
    return model


def test_sdpa_skips_attention_softcapping_eager_applies_it(tiny_model):
    path = tiny_model("tiny-gemma2")
    ids = torch.randint(3, 5000, (2, 12), generator=torch.Generator().manual_seed(0))
    logits = {}
    with torch.no_grad():
        for impl in ("sdpa", "eager"):
            for cap in (None, 0.05):
                logits[impl, cap] = _load(path, attn_implementation=impl, attn_logit_softcapping=cap)(ids).logits
    assert float((logits["sdpa", 0.05] - logits["sdpa", None]).abs().max()) <= 1e-6
    assert float((logits["eager", 0.05] - logits["eager", None]).abs().max()) > 1e-5
    assert float((logits["sdpa", None] - logits["eager", None]).abs().max()) <= 1e-5  # same model without a cap


def test_native_loader_honours_override_attn_implementation(tiny_model):
    from fsdpcfg.schema.model import ModelSection

    path = str(tiny_model("tiny-gemma2"))
    for weights in (True, False):  # the actor (from_pretrained) and the rollout replica (from_config)
        assert load_model(ModelSection(path=path), torch.float32, weights=weights).config._attn_implementation == "sdpa"
        eager = ModelSection(path=path, override_config={"attn_implementation": "eager"})
        got = load_model(eager, torch.float32, weights=weights)
        assert got.config._attn_implementation == "eager"


@pytest.mark.parametrize("impl", ["sdpa", "eager"])
def test_packed_equals_padded_with_a_sliding_window_that_bites(tiny_model, impl):
    path = tiny_model("tiny-gemma2")
    out = {}
    for window in (4096, 3):
        model = _load(path, attn_implementation=impl, sliding_window=window)
        ids, mask = padded_batch(model.config.vocab_size)
        with torch.no_grad():
            padded, _ = response_log_probs(model, ids, mask, RESPONSE)
            packed, _ = remove_padding.packed_response_log_probs(model, ids, mask, RESPONSE)
        real = mask[:, -RESPONSE:].bool()
        assert float((padded - packed)[real].abs().max()) <= 2e-5
        out[window] = padded
    assert float((out[3] - out[4096])[mask[:, -RESPONSE:].bool()].abs().max()) > 1e-2  # the window changed them

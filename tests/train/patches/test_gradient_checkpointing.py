"""gradient_checkpointing against the plain model, single process, fp32, on tiny real architectures: the patch
is really active (each decoder layer's forward runs twice per training step: once in forward, once recomputed
in backward) and the log-probs and gradients equal the plain model's (log-probs bit-identical; gradients max
abs diff <= 1e-5 of the largest gradient: recomputation repeats the same fp32 ops)."""

from __future__ import annotations

import pytest
from _arch import ARCHS, RESPONSE, grads, load, max_rel_grad_diff, padded_batch

from fsdpcfg.train import patches
from fsdpcfg.train.engine.forward import response_log_probs

GRAD_TOL = 1e-5


def _step(model, ids, mask):
    model.train()
    model.zero_grad(set_to_none=True)
    layer = model.model.layers[0]
    calls = []
    handle = layer.register_forward_pre_hook(lambda *_: calls.append(1))  # recomputation stops early: no post-hook
    lp, _ = response_log_probs(model, ids, mask, RESPONSE)
    rmask = mask[:, -RESPONSE:].float()
    (-(lp * rmask).sum() / rmask.sum()).backward()
    handle.remove()
    return lp.detach(), grads(model), len(calls)


@pytest.mark.parametrize("arch", ["qwen2", "qwen3", "llama", "mistral", "gemma", "phi3"])
def test_checkpointed_equals_plain(arch, tiny_model):
    model = load(tiny_model(ARCHS[arch]))
    ids, mask = padded_batch(model.config.vocab_size, seed=1)
    lp0, g0, calls0 = _step(model, ids, mask)
    assert patches.apply_patches(model, ["gradient_checkpointing"], device="cpu") == ["gradient_checkpointing"]
    assert model.is_gradient_checkpointing
    lp1, g1, calls1 = _step(model, ids, mask)
    assert (calls0, calls1) == (1, 2)  # recomputed in backward
    real = mask[:, -RESPONSE:].bool()
    assert float((lp0 - lp1)[real].abs().max()) == 0.0
    assert max_rel_grad_diff(g0, g1) <= GRAD_TOL


def test_both_patches_together(tiny_model):
    """remove_padding + gradient_checkpointing on one model: same gradients as the plain padded model."""
    model = load(tiny_model("tiny-qwen3"))
    ids, mask = padded_batch(model.config.vocab_size, seed=2)
    _, g0, _ = _step(model, ids, mask)
    applied = patches.apply_patches(model, ["gradient_checkpointing", "remove_padding"], device="cpu")
    assert applied == ["remove_padding", "gradient_checkpointing"]  # registry order
    _, g1, calls = _step(model, ids, mask)
    assert calls == 2
    assert max_rel_grad_diff(g0, g1) <= 1e-4

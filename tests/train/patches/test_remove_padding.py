"""remove_padding against the plain padded forward, single process, fp32, on tiny real architectures.

For each architecture: response log-probs and entropies of the packed forward equal the padded forward's on
every real response token (max abs diff <= 2e-5 for log-probs, 5e-5 for entropies of ~12 nats: a few fp32
ulps), and the gradients of the same masked loss agree (max abs
diff <= 1e-4 of the largest gradient). An ablation shows the comparison can fail: packing without restarting
the positions (one long sequence) gives log-probs off by far more than the tolerance.
"""

from __future__ import annotations

import pytest
import torch
from _arch import ARCHS, RESPONSE, grads, load, max_rel_grad_diff, padded_batch

from fsdpcfg.errors import ConfigError
from fsdpcfg.patches import REGISTRY
from fsdpcfg.train import patches
from fsdpcfg.train.engine.forward import response_log_probs
from fsdpcfg.train.patches import remove_padding

LOGP_TOL = 2e-5
ENT_TOL = 5e-5
GRAD_TOL = 1e-4


def _loss_and_grads(model, ids, mask):
    model.zero_grad(set_to_none=True)
    lp, ent = response_log_probs(model, ids, mask, RESPONSE, with_entropy=True)
    rmask = mask[:, -RESPONSE:].float()
    ((-(lp * rmask).sum() - 0.1 * (ent * rmask).sum()) / rmask.sum()).backward()
    return lp.detach(), ent.detach(), grads(model)


@pytest.mark.parametrize("arch", list(ARCHS))
def test_packed_equals_padded(arch, tiny_model):
    model = load(tiny_model(ARCHS[arch]))
    assert model.config.model_type in REGISTRY["remove_padding"].model_types
    ids, mask = padded_batch(model.config.vocab_size)
    lp_pad, ent_pad, g_pad = _loss_and_grads(model, ids, mask)
    assert patches.apply_patches(model, ["remove_padding"], device="cpu") == ["remove_padding"]
    assert patches.is_packed(model)
    lp_pack, ent_pack, g_pack = _loss_and_grads(model, ids, mask)
    real = mask[:, -RESPONSE:].bool()
    assert real.sum() < real.numel()  # the batch really has response padding
    assert float((lp_pad - lp_pack)[real].abs().max()) <= LOGP_TOL
    assert float((ent_pad - ent_pack)[real].abs().max()) <= ENT_TOL
    assert float(lp_pack[~real].abs().max()) == 0.0  # padding is not computed
    assert max_rel_grad_diff(g_pad, g_pack) <= GRAD_TOL


def test_packed_with_eager_attention_and_temperature(tiny_model):
    model = load(tiny_model("tiny-qwen2"), attn="eager")
    ids, mask = padded_batch(model.config.vocab_size, seed=3)
    with torch.no_grad():
        ref, _ = response_log_probs(model, ids, mask, RESPONSE, temperature=0.7)
        got, _ = remove_padding.packed_response_log_probs(model, ids, mask, RESPONSE, temperature=0.7)
    real = mask[:, -RESPONSE:].bool()
    assert float((ref - got)[real].abs().max()) <= LOGP_TOL


def test_ablation_positions_that_do_not_restart_break_it(tiny_model):
    """Without restarting positions, transformers sees one sequence: tokens attend across rows."""
    model = load(tiny_model("tiny-qwen2"))
    ids, mask = padded_batch(model.config.vocab_size)
    keep = mask.bool()
    with torch.no_grad():
        ref, _ = response_log_probs(model, ids, mask, RESPONSE)
        flat = ids[keep][None]
        logits = model(input_ids=flat, position_ids=torch.arange(flat.shape[1])[None], use_cache=False).logits[0]
    assert bool(keep[-1, -1])  # the last row's last token is real: predicted by packed column total - 2
    wrong = torch.log_softmax(logits[int(keep.sum()) - 2], -1)[ids[-1, -1]]
    assert abs(float(wrong) - float(ref[-1, -1])) > 1e-3


def test_attention_without_packed_mask_is_refused(tiny_model):
    model = load(tiny_model("tiny-qwen2"))
    model.config._attn_implementation = "flash_attention_2"
    with pytest.raises(ConfigError) as e:
        remove_padding.apply(model)
    assert "qwen2" in str(e.value) and "flash_attention_2" in str(e.value)
    assert not patches.is_packed(model)


def test_unsupported_model_type_is_refused():
    from transformers import GPT2Config, GPT2LMHeadModel

    model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_head=2, n_embd=8, vocab_size=32, n_positions=16))
    with pytest.raises(ConfigError) as e:
        patches.apply_patches(model, ["remove_padding"], device="cpu")
    assert "'gpt2'" in str(e.value) and "qwen2" in str(e.value)
    assert not patches.is_packed(model)

"""With every patch off the model is the plain padded Hugging Face model: the forward of a model loaded by
fsdpcfg and passed through ``apply_patches`` with no patch is byte-identical (``torch.equal``) to plain
transformers', and applying a patch to one instance changes neither another instance nor any class."""

from __future__ import annotations

import torch
from _arch import RESPONSE, load, padded_batch

from fsdpcfg.train import patches
from fsdpcfg.train.algorithm.losses import token_log_probs
from fsdpcfg.train.engine.forward import position_ids_from_mask, response_log_probs
from fsdpcfg.train.model import load_model


def _mcfg(path):
    from fsdpcfg.schema.model import ModelSection

    return ModelSection(path=str(path))


def test_unpatched_forward_is_plain_transformers(tiny_model):
    path = tiny_model("tiny-qwen2")
    ours = load_model(_mcfg(path), torch.float32).eval()
    assert patches.apply_patches(ours, [], device="cpu") == []
    assert not patches.is_packed(ours)
    plain = load(path)
    ids, mask = padded_batch(plain.config.vocab_size)
    pos = position_ids_from_mask(mask)
    with torch.no_grad():
        a = ours(input_ids=ids, attention_mask=mask, position_ids=pos).logits
        b = plain(input_ids=ids, attention_mask=mask, position_ids=pos).logits
        assert torch.equal(a, b)
        lp, _ = response_log_probs(ours, ids, mask, RESPONSE)
        by_hand = token_log_probs(b[:, -RESPONSE - 1 : -1], ids[:, -RESPONSE:])
    assert torch.equal(lp, by_hand)


def test_patching_one_instance_leaves_others_and_classes_alone(tiny_model):
    path = tiny_model("tiny-qwen3")
    patched, plain = load(path), load(path)
    layer_cls = type(plain.model.layers[0])
    before = {c: c.forward for c in (type(plain), type(plain.model), layer_cls, type(plain.model.layers[0].self_attn))}
    ids, mask = padded_batch(plain.config.vocab_size)
    with torch.no_grad():
        ref = plain(input_ids=ids, attention_mask=mask).logits
    patches.apply_patches(patched, ["remove_padding", "gradient_checkpointing"], device="cpu")
    assert patches.is_packed(patched) and not patches.is_packed(plain)
    assert not plain.is_gradient_checkpointing
    assert {c: c.forward for c in before} == before
    with torch.no_grad():
        assert torch.equal(plain(input_ids=ids, attention_mask=mask).logits, ref)

"""verl's SFT trainer on its other engines (``engine=megatron optim=megatron``, ``engine=automodel
optim=automodel``): the tree fsdpcfg composes for them is one verl 0.9.1 accepts as it is (every key verl's own,
none ignored), and fsdpcfg accepts it too, with FC111 saying what it checked."""

from __future__ import annotations

import importlib.util

import pytest

from fsdpcfg.check import check_config
from fsdpcfg.check.verl_opinion import compare
from fsdpcfg.compose import compose

pytestmark = [
    pytest.mark.verl,
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("verl") is None, reason="verl 0.9.1 is not installed"),
]

BASE = ["+recipe=qwen_sft", "launcher=verl", "trainer=gpu_8x", "data.train_batch_size=32"]
CASES = {
    "megatron": [
        "engine=megatron",
        "optim=megatron",
        "engine.tensor_model_parallel_size=2",
        "engine.pipeline_model_parallel_size=2",
    ],
    "automodel": ["engine=automodel", "optim=automodel", "engine.tp_size=1", "optim.init_lr_ratio=0.1"],
}


def test_sft_engines_are_accepted_by_verl_and_fsdpcfg():
    from fsdpcfg.check.verl_opinion import verl_opinions

    composed = {name: compose(BASE + ov) for name, ov in CASES.items()}
    ops = verl_opinions(composed.values())
    for (name, c), op in zip(composed.items(), ops, strict=True):
        findings = check_config(c)
        assert op.accepted and op.ignored_keys == [], (name, op.stage, op.error, op.ignored_keys)
        assert not [f for f in findings if f.severity == "error"], (name, [f.message for f in findings])
        assert [f for f in findings if f.rule == "FC111"], name
        assert compare(findings, op).outcome == "agree", name

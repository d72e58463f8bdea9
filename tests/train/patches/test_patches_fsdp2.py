"""The patches under FSDP2 on 2 CPU ranks: remove_padding + gradient_checkpointing on a sharded tiny Qwen3 give
the loss, grad norm and updated weights of the plain unsharded padded model (loss and grad norm relative 1e-5,
weights max abs 1e-5 after one AdamW step with lr 1e-3), with FSDP1 alongside."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "_fsdp_parity", Path(__file__).resolve().parents[1] / "engine" / "test_fsdp_parity.py"
)
_parity = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_parity)


@pytest.mark.distributed
@pytest.mark.slow
def test_patched_fsdp2_step_equals_plain_step(tiny_model, tmp_path):
    both = ["remove_padding", "gradient_checkpointing"]
    rep = _parity.run_worker(
        tiny_model("tiny-qwen3"),
        [
            {"name": "fsdp2_patched", "strategy": "fsdp2", "patches": both},
            {"name": "fsdp_patched", "strategy": "fsdp", "patches": ["remove_padding"]},
        ],
        tmp_path,
    )
    ref = rep["reference"]
    for name, c in rep["cases"].items():
        assert c["patches"] == (both if name == "fsdp2_patched" else ["remove_padding"])
        assert c["loss"] == pytest.approx(ref["loss"], rel=1e-5), name
        assert c["grad_norm"] == pytest.approx(ref["grad_norm"], rel=1e-5), name
        assert c["max_weight_diff_vs_reference"] <= 1e-5, (name, c)

"""LoRA weight synchronisation end to end: a LoRA actor and its PEFT rollout replica give the same token
log-probs (max abs diff <= 1e-6, fp32) after the first sync (full base under Hugging Face names, then the adapter),
after the second (adapter only, after an optimizer step) and after a third in layered mode; FSDP2 and FSDP1 on 2
ranks (torchrun) and a plain PeftModel in one process. The adapter is named ``policy`` (not ``default``), and its
B matrices start non-zero, so a replica without the adapter would differ. The merged weights (the checkpoint
form) score like the actor within 1e-5."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fsdpcfg.launch.torchrun import torchrun_argv

# one worker builds the module's shared fixture (tests/conftest.py)
pytestmark = pytest.mark.xdist_group("lora_sync_run")

WORKER = Path(__file__).with_name("_lora_worker.py")


def _check(report: dict) -> None:
    first, second, third = report["syncs"]
    for s in report["syncs"]:
        assert s["max_abs_diff"] <= 1e-6, s
        assert s["adapter_tensors"] == 28, s  # 7 linear layers x 2 blocks x (A, B)
        assert all(
            ".lora_" in n and ".base_layer" not in n and f".{report['adapter']}." not in n for n in s["adapter_names"]
        ), s["adapter_names"][:4]
    # first sync: the whole base under plain Hugging Face names, several buckets
    assert first["base_tensors"] == len(first["base_names"]) > 20 and first["buckets"] > 1, first
    assert not [n for n in first["base_names"] if "lora_" in n or "base_layer" in n or n.startswith("base_model.")]
    assert "model.layers.0.self_attn.q_proj.weight" in first["base_names"]
    # later syncs: adapter only; the optimizer step reached the replica
    for s in (second, third):
        assert s["base_tensors"] == 0 and s["base_names"] == [], s
        assert s["replica_moved"] > 1e-3, s
    assert sorted(third["adapter_names"]) == sorted(second["adapter_names"])  # layered gathers the same keys
    assert report["merged"]["max_abs_diff"] <= 1e-5 and not report["merged"]["missing"], report["merged"]
    assert not report["merged"]["unexpected"], report["merged"]


STRATEGIES = ["fsdp2", "fsdp"]


@pytest.fixture(scope="module")
def reports_2_ranks(tiny_model_path, tmp_path_factory) -> dict:
    """Both strategies' reports from one 2-rank worker run (each strategy with its own seed, actor and replica, one
    after the other in one process group): one torchrun start for the module instead of one per strategy."""
    out = tmp_path_factory.mktemp("lora_sync") / "report.json"
    cmd = torchrun_argv([WORKER, tiny_model_path, ",".join(STRATEGIES), "policy", out], nproc_per_node=2)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(out.read_text())


@pytest.mark.distributed
@pytest.mark.slow
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_lora_rollout_log_probs_match_after_each_sync_2_ranks(strategy, reports_2_ranks):
    report = reports_2_ranks[strategy]
    assert report["strategy"] == strategy
    _check(report)


@pytest.mark.slow
def test_lora_rollout_log_probs_match_after_each_sync_without_fsdp(tiny_model_path, tmp_path):
    out = tmp_path / "report.json"
    proc = subprocess.run(
        [sys.executable, str(WORKER), str(tiny_model_path), "none", "policy", str(out)],
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    _check(json.loads(out.read_text())["none"])

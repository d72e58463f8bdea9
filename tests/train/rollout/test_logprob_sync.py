"""Actor and rollout replica give the same token log-probs (max abs diff <= 1e-5, fp32) after the first and the
second weight synchronisation, with FSDP2 and FSDP1 on 2 ranks (torchrun started from the test)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from fsdpcfg.launch.torchrun import torchrun_argv

WORKER = Path(__file__).with_name("_logprob_worker.py")


@pytest.mark.distributed
@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["fsdp2", "fsdp"])
def test_actor_and_replica_log_probs_match_after_each_sync(strategy, tiny_model_path, tmp_path):
    out = tmp_path / "report.json"
    cmd = torchrun_argv([WORKER, tiny_model_path, strategy, out], nproc_per_node=2)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    report = json.loads(out.read_text())
    first, second = report["syncs"]
    for s in (first, second):
        assert s["max_abs_diff"] <= 1e-5, s
        assert s["buckets"] > 1, s  # the stream really came in several buckets
        assert s["dtype"] == "torch.float32"
    # the optimizer step changed the policy and the second sync carried the change to the replica
    assert second["replica_moved"] > 1e-3, second

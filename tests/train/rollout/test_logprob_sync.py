"""Actor and rollout replica give the same token log-probs (max abs diff <= 1e-5, fp32) after the first and the
second weight synchronisation, with FSDP2 and FSDP1 on 2 ranks (torchrun started from the test, once for both)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from fsdpcfg.launch.torchrun import torchrun_argv

# one worker builds the module's shared fixture (tests/conftest.py)
pytestmark = pytest.mark.xdist_group("logprob_sync_run")

WORKER = Path(__file__).with_name("_logprob_worker.py")


STRATEGIES = ["fsdp2", "fsdp"]


@pytest.fixture(scope="module")
def reports(tiny_model_path, tmp_path_factory) -> dict:
    """Both strategies' reports from one 2-rank worker run (each strategy with its own seed, actor and replica, one
    after the other in one process group): one torchrun start for the module instead of one per strategy."""
    out = tmp_path_factory.mktemp("logprob_sync") / "report.json"
    cmd = torchrun_argv([WORKER, tiny_model_path, ",".join(STRATEGIES), out], nproc_per_node=2)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(out.read_text())


@pytest.mark.distributed
@pytest.mark.slow
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_actor_and_replica_log_probs_match_after_each_sync(strategy, reports):
    report = reports[strategy]
    assert report["strategy"] == strategy
    first, second = report["syncs"]
    for s in (first, second):
        assert s["max_abs_diff"] <= 1e-5, s
        assert s["buckets"] > 1, s  # the stream really came in several buckets
        assert s["dtype"] == "torch.float32"
    # the optimizer step changed the policy and the second sync carried the change to the replica
    assert second["replica_moved"] > 1e-3, second

"""A rank that stops answering ends the run with a message within ``actor_rollout_ref.nccl_timeout`` seconds,
naming the rank and where it stood (issue 22 item 4): the native process group takes verl's key as its timeout
(it hung for torch's 30-minute default before), the rank whose collective timed out reports it, torchrun stops the
others, and each one it had to stop leaves its Python stack in the run folder."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TIMEOUT_S = 8


@pytest.mark.distributed
@pytest.mark.slow
def test_a_hung_rank_ends_the_run_naming_it(tiny_model_path, tmp_path):
    run_dir = tmp_path / "run"
    t = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "fsdpcfg",
            "+recipe=qwen_grpo",
            f"fsdpcfg.run_dir={run_dir}",
            f"trainer.default_local_dir={tmp_path / 'ckpt'}",
            "data.max_response_length=8",
            "trainer.total_training_steps=3",
            "trainer.val_before_train=false",
            "trainer.logger=[console]",
            f"actor_rollout_ref.nccl_timeout={TIMEOUT_S}",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "FSDPCFG_TEST_HANG": "1:2"},  # rank 1 stops answering at the start of step 2
    )
    wall = time.monotonic() - t
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-3000:]
    assert "rank 1 stops answering at step 2" in out  # the hook ran: the hang is real
    assert f"rank 0 waited {TIMEOUT_S} s for the other ranks in a collective " in proc.stderr
    assert f"(actor_rollout_ref.nccl_timeout={TIMEOUT_S})" in proc.stderr
    stack = run_dir / "stack-rank1.log"
    assert "ranks still running when the run was stopped: rank 1 at File " in proc.stderr
    assert "in _test_hang" in proc.stderr.split("ranks still running", 1)[1] and str(stack) in proc.stderr
    assert "_test_hang" in stack.read_text() and not (run_dir / "stack-rank0.log").exists()
    ours = proc.stderr.split("fsdpcfg: error:", 1)[1]
    assert "Traceback" not in ours and ours.index("ranks still running") < ours.index("  -> ")
    assert wall < 240, wall  # not torch's 30-minute default
    # step 1 finished before the hang: its metrics row is there
    assert '"step": 1' in (run_dir / "metrics.jsonl").read_text()

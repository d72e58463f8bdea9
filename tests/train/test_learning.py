"""GRPO learns the synthetic arithmetic task: FSDP2 on 2 ranks, ``recipes/arith_grpo.yaml``.

The starting model (asset ``tiny-qwen2-arith``) answers "<digit><|im_end|>" with a digit that does not depend
on the question, so the reward starts near chance (0.1). The test asserts that the mean reward of the last 10
steps exceeds that of the first 10 by at least MARGIN (absolute, on a 0-1 reward).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: the last 10 steps' mean reward must beat the first 10 steps' by this much (rewards are 0/1 per answer).
MARGIN = 0.10


@pytest.mark.distributed
@pytest.mark.slow
def test_grpo_learns_arith_fsdp2_two_ranks(tiny_model, tmp_path):
    tiny_model("tiny-qwen2-arith")  # build the warm-started asset outside the timed run
    run_dir = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "fsdpcfg", "+recipe=arith_grpo", f"fsdpcfg.run_dir={run_dir}",
                           f"trainer.default_local_dir={tmp_path / 'ckpt'}", "fsdpcfg.metrics.tensorboard=false",
                           "actor_rollout_ref.actor.strategy=fsdp2", "trainer.n_gpus_per_node=2"],
                          cwd=REPO, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    rewards = [r["critic/rewards/mean"] for r in rows]
    assert len(rewards) >= 20
    first, last = sum(rewards[:10]) / 10, sum(rewards[-10:]) / 10
    print(f"mean reward: first 10 steps {first:.3f}, last 10 steps {last:.3f}")
    assert first < 0.35, f"the task starts too easy: {first:.3f}"
    assert last >= first + MARGIN, f"no learning: first 10 {first:.3f}, last 10 {last:.3f}, rewards {rewards}"

"""GRPO learns on the synthetic arithmetic task (data=arith, reward=arith): FSDP2 on 2 ranks,
``recipes/arith_grpo.yaml``.

The starting model (asset ``tiny-qwen2-arith``) answers "<digit><|im_end|>" with a digit that does not depend
on the question. On the full task (55 sums) 50 steps on this machine did not separate learning from noise
(first 10 steps 0.11, last 10 0.17), so the test trains on the arith questions whose sum is 7 (rows of the
shipped train set, arith reward unchanged): the policy starts near its initial P("7") and must move its
answer distribution to "7". It asserts that the mean reward of the last 10 steps exceeds that of the first 10
by at least MARGIN (absolute, on a 0/1 reward); measured here: first 10 steps 0.48, last 10 0.99.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fsdpcfg import paths

REPO = Path(__file__).resolve().parents[2]
#: the last 10 steps' mean reward must beat the first 10 steps' by this much (rewards are 0/1 per answer).
MARGIN = 0.3
ANSWER = "7"
STEPS = 30
#: the recipe's lr (1e-2) reaches reward 1.0 on this sub-task within 5 steps; 2e-3 makes the rise visible.
LR = 2e-3


@pytest.mark.distributed
@pytest.mark.slow
def test_grpo_learns_arith_fsdp2_two_ranks(tiny_model, tmp_path):
    tiny_model("tiny-qwen2-arith")  # build the warm-started asset outside the run
    src = paths.data_dir() / "datasets" / "arith" / "train.jsonl"
    rows = [r for r in map(json.loads, src.read_text().splitlines()) if r["reward_model"]["ground_truth"] == ANSWER]
    assert len(rows) >= 16
    data = tmp_path / "arith_sum7.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run_dir = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "fsdpcfg", "+recipe=arith_grpo", f"data.train_files={data}",
                           f"fsdpcfg.run_dir={run_dir}", f"trainer.default_local_dir={tmp_path / 'ckpt'}",
                           f"trainer.total_training_steps={STEPS}", f"actor_rollout_ref.actor.optim.lr={LR}",
                           "trainer.logger=[console]",
                           "actor_rollout_ref.actor.strategy=fsdp2", "trainer.n_gpus_per_node=2"],
                          cwd=REPO, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rewards = [json.loads(line)["critic/rewards/mean"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert len(rewards) == STEPS
    first, last = sum(rewards[:10]) / 10, sum(rewards[-10:]) / 10
    print(f"mean reward: first 10 steps {first:.3f}, last 10 steps {last:.3f}")
    start = sum(rewards[:3]) / 3
    assert start < 0.35, f"the task starts too easy: first 3 steps {start:.3f}"
    assert last >= first + MARGIN, f"no learning: first 10 {first:.3f}, last 10 {last:.3f}, rewards {rewards}"

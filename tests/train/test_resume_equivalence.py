"""``trainer.resume_mode=auto`` continues an interrupted run exactly: the same step counter, the same data
position (sampler), the same learning-rate schedule (cosine with warm-up, so the lr differs every step) and the
same optimizer state. An uninterrupted 3-step run is compared with one SIGKILLed inside the save of step 2 and
resumed from ``global_step_1``: the metrics of steps 2 and 3 and the final weights agree within 1e-5 (relative)
/ 1e-6 (absolute); the runs are deterministic on CPU (gloo, fixed seeds), the tolerance only absorbs float noise.

The arithmetic recipe is used because its warm-started tiny model earns rewards (~0.1), so advantages, losses
and gradients are not zero and a wrong resume would show."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from _killtree import REPO, kill_tree, start, wait_for_line

COMPARED = (
    "critic/rewards/mean",
    "critic/score/mean",
    "critic/advantages/mean",
    "actor/pg_loss",
    "actor/lr",
    "actor/grad_norm",
    "actor/pg_clipfrac",
    "response_length/mean",
    "training/epoch",
)


def _rows(run_dir):
    by_step = {}
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        by_step[row["step"]] = row  # a step logged twice (before a kill and after the resume): the last one
    return by_step


@pytest.mark.distributed
@pytest.mark.slow
def test_interrupted_and_resumed_run_equals_the_uninterrupted_one(tiny_model, tmp_path):
    tiny_model("tiny-qwen2-arith")

    def args(name):
        return [
            "+recipe=arith_grpo",
            f"fsdpcfg.run_dir={tmp_path / name / 'run'}",
            f"trainer.default_local_dir={tmp_path / name / 'ckpt'}",
            "trainer.total_training_steps=3",
            "trainer.save_freq=1",
            "trainer.logger=[console]",
            "actor_rollout_ref.actor.optim.lr_scheduler_type=cosine",
            "actor_rollout_ref.actor.optim.lr_warmup_steps=1",
        ]

    # uninterrupted
    ref = subprocess.run(
        [sys.executable, "-m", "fsdpcfg", *args("a")], cwd=REPO, capture_output=True, text=True, timeout=400
    )
    assert ref.returncode == 0, (ref.stdout + ref.stderr)[-3000:]
    # interrupted inside the save of step 2, then resumed
    log = tmp_path / "b.log"
    proc = start(args("b"), log, env={"FSDPCFG_TEST_SAVE_PAUSE": "2:120"})
    try:
        wait_for_line(log, "pausing 120 s inside the save of step 2", proc, timeout=240)
    finally:
        kill_tree(proc)
    res = subprocess.run(
        [sys.executable, "-m", "fsdpcfg", *args("b")], cwd=REPO, capture_output=True, text=True, timeout=400
    )
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    assert "resumed from" in res.stdout + res.stderr and "global_step_1 (step 1 of 3)" in res.stdout + res.stderr

    a, b = _rows(tmp_path / "a" / "run"), _rows(tmp_path / "b" / "run")
    assert sorted(a) == sorted(b) == [1, 2, 3]
    lrs = [a[s]["actor/lr"] for s in (1, 2, 3)]
    assert len(set(lrs)) == 3, f"the schedule should change the lr every step: {lrs}"
    assert any(a[s]["actor/grad_norm"] > 0 for s in (2, 3))
    for step in (2, 3):
        for k in COMPARED:
            assert b[step][k] == pytest.approx(a[step][k], rel=1e-5, abs=1e-6), (step, k, a[step][k], b[step][k])
    from safetensors.torch import load_file

    wa = load_file(str(tmp_path / "a" / "ckpt" / "global_step_3" / "model.safetensors"))
    wb = load_file(str(tmp_path / "b" / "ckpt" / "global_step_3" / "model.safetensors"))
    w1 = load_file(str(tmp_path / "a" / "ckpt" / "global_step_1" / "model.safetensors"))
    assert wa.keys() == wb.keys()
    assert max(float((wa[k] - w1[k]).abs().max()) for k in wa) > 1e-4  # steps 2-3 changed the weights
    worst = max(float((wa[k] - wb[k]).abs().max()) for k in wa)
    assert worst <= 1e-6, f"final weights differ by up to {worst}"

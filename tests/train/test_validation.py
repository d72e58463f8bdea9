"""The native loop's validation pass (fsdpcfg/train/validate.py): verl's schedule and metric names, real runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fsdpcfg.schema.rollout import RolloutSection, ValKwargs
from fsdpcfg.train.validate import is_validation_step, validation_metrics, validation_settings

REPO = Path(__file__).resolve().parents[2]


def test_schedule_is_verls():
    # test_freq=2 over 5 steps: after 2, 4 and the last step; test_freq<=0: never
    assert [s for s in range(1, 6) if is_validation_step(s, 5, 2)] == [2, 4, 5]
    assert [s for s in range(1, 6) if is_validation_step(s, 5, -1)] == []
    assert [s for s in range(1, 4) if is_validation_step(s, 3, 10)] == [3]


def test_metrics_per_data_source_as_verl_names_them():
    # source a: prompt 0 scored [1, 0], prompt 1 scored [1, 1]; source b: one prompt, one sample scored 0.5
    m = validation_metrics(["a", "a", "a", "a", "b"], [0, 0, 1, 1, 2], [1.0, 0.0, 1.0, 1.0, 0.5])
    assert m["val-core/a/reward/mean@2"] == pytest.approx(0.75)  # (0.5 + 1.0) / 2 prompts
    assert m["val-aux/a/reward/std@2"] == pytest.approx(0.25)  # (0.5 + 0.0) / 2
    # best of 2 resampled from [1, 0] is 1 unless both draws are 0 (p = 1/4): expected 0.75; prompt 1 gives 1
    assert m["val-core/a/reward/best@2/mean"] == pytest.approx((0.75 + 1.0) / 2, abs=0.04)
    assert m["val-aux/a/reward/worst@2/mean"] == pytest.approx((0.25 + 1.0) / 2, abs=0.04)
    assert m["val-core/b/reward/mean@1"] == 0.5
    assert not [k for k in m if k.startswith("val-") and "/b/" in k and k != "val-core/b/reward/mean@1"]


def test_settings_come_from_val_kwargs():
    r = RolloutSection(
        name="hf",
        n=8,
        response_length=16,
        temperature=1.0,
        do_sample=True,
        val_kwargs=ValKwargs(n=1, temperature=0, top_p=1.0, top_k=-1, do_sample=False),
    )
    s = validation_settings(r)
    assert (s.n, s.do_sample, s.temperature, s.response_length) == (1, False, 0.0, 16)


@pytest.mark.distributed
@pytest.mark.slow
def test_validation_at_steps_0_2_4_on_two_ranks(tiny_model_path, tmp_path):
    run_dir = tmp_path / "run"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "fsdpcfg",
            "+recipe=qwen_grpo",
            f"fsdpcfg.run_dir={run_dir}",
            f"trainer.default_local_dir={tmp_path / 'ckpt'}",
            "trainer.total_training_steps=4",
            "trainer.save_freq=-1",
            "trainer.test_freq=2",
            "trainer.val_before_train=true",
            "data.val_max_samples=6",
            "data.max_response_length=8",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    key = "val-core/openai/gsm8k/reward/mean@1"
    assert [r["step"] for r in rows if key in r] == [0, 2, 4]
    assert [r["step"] for r in rows if "actor/pg_loss" in r] == [1, 2, 3, 4]
    for r in rows:
        if key in r:
            assert 0.0 <= r[key] <= 1.0 and r["timing_s/testing"] > 0
    assert f"{key}=" in proc.stderr + proc.stdout  # on the step's console line
    # the closing summary: validation first -> last, where the files are, how to continue
    assert "run finished: 4 step(s)" in proc.stdout
    assert f"validation   {key} " in proc.stdout and "(step 0) -> " in proc.stdout and "(step 4)" in proc.stdout
    assert f"tensorboard --logdir {run_dir / 'tensorboard'}" in proc.stdout
    assert "trainer.total_training_steps=8" in proc.stdout

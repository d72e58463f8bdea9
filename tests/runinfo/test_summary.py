"""The closing summary, from the files a run leaves (metrics.jsonl, the checkpoint folder)."""

from __future__ import annotations

import json

from fsdpcfg.runinfo.summary import closing_summary, read_metrics


def _cfg(tmp_path, steps=4):
    return {
        "fsdpcfg": {"run_dir": str(tmp_path / "run")},
        "trainer": {"default_local_dir": str(tmp_path / "ckpt"), "total_training_steps": steps},
    }


def _write(tmp_path, rows):
    (tmp_path / "run").mkdir(parents=True, exist_ok=True)
    (tmp_path / "run" / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_summary_names_files_rewards_validation_speed_and_resume(tmp_path):
    val = "val-core/openai/gsm8k/reward/mean@1"
    _write(
        tmp_path,
        [{"step": 0, val: 0.1, "timing_s/testing": 1.0}]
        + [
            {"step": s, "critic/rewards/mean": s / 10, "timing_s/step": float(s), "perf/throughput": 100.0 * s}
            for s in (1, 2, 3, 4)
        ]
        + [{"step": 4, "critic/rewards/mean": 0.4, "timing_s/step": 4.0, "perf/throughput": 400.0, val: 0.5}],
    )
    (tmp_path / "run" / "tensorboard").mkdir()
    (tmp_path / "ckpt" / "global_step_4").mkdir(parents=True)
    (tmp_path / "ckpt" / "latest_checkpointed_iteration.txt").write_text("4\n")
    text = closing_summary(
        _cfg(tmp_path), ["+recipe=qwen_grpo", "trainer.total_training_steps=4", "+fsdpcfg.env.WANDB_API_KEY=abc123"]
    )
    assert text.splitlines()[0].startswith("run finished: 4 step(s) in ")
    assert f"{tmp_path / 'ckpt' / 'global_step_4'}" in text
    assert f"tensorboard --logdir {tmp_path / 'run' / 'tensorboard'}" in text
    assert f"  curves       fsdpcfg plot {tmp_path / 'run'}   (a PNG of the metrics)" in text
    assert "critic/rewards/mean 0.1 -> 0.4 (step 1 -> 4)" in text
    assert f"{val} 0.1 (step 0) -> 0.5 (step 4)" in text
    assert "median 2.5 s/step, 250 tokens/s per rank" in text
    resume = [line for line in text.splitlines() if "resume" in line][0]
    assert "python -m fsdpcfg +recipe=qwen_grpo" in resume and "trainer.total_training_steps=8" in resume
    assert "abc123" not in text  # a secret given on the command line is not echoed


def test_summary_without_checkpoint_or_metrics(tmp_path):
    text = closing_summary(_cfg(tmp_path), ["+recipe=qwen_grpo"])
    assert "run finished: 0 step(s)" in text and "none written" in text and "tensorboard" not in text


def test_read_metrics_last_row_of_a_step_wins_and_bad_lines_are_skipped(tmp_path):
    _write(tmp_path, [{"step": 1, "x": 1}, {"step": 2, "x": 2}, {"step": 2, "x": 3}])
    with open(tmp_path / "run" / "metrics.jsonl", "a") as fh:
        fh.write("{not json\n")
    assert [(r["step"], r["x"]) for r in read_metrics(tmp_path / "run" / "metrics.jsonl")] == [(1, 1), (2, 3)]

"""The issue's sweep on the tiny model, for real: 4 points (lr x n) with Hydra's basic launcher (one after
another) and with the joblib launcher (two at a time); each point in its own run folder with its metadata and
start-up audit; a summary table, also as JSON and CSV. A point that fails in its workers does not stop the
others and makes the exit code 1. Cheap settings: one training step, 8 response tokens, no TensorBoard, no
validation pass (a point's ``final_reward`` is its last training step's reward)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SWEEP = ["-m", "+recipe=qwen_grpo", "actor_rollout_ref.actor.optim.lr=1e-6,3e-6", "actor_rollout_ref.rollout.n=4,8"]
CHEAP = [
    "trainer.total_training_steps=1",
    "data.max_response_length=8",
    "trainer.logger=[console]",
    "trainer.val_before_train=false",
    "trainer.test_freq=-1",
]


def _sweep(args: list[str], tmp_path: Path, timeout: int = 900) -> tuple[subprocess.CompletedProcess, dict]:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "fsdpcfg",
            *args,
            *CHEAP,
            f"hydra.sweep.dir={tmp_path / 'sw'}",
            f"trainer.default_local_dir={tmp_path / 'ck'}",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    summary = tmp_path / "sw" / "sweep_summary.json"
    assert summary.is_file(), (proc.stdout + proc.stderr)[-4000:]
    return proc, json.loads(summary.read_text())


def _check_points(tmp_path: Path, summary: dict) -> list[dict]:
    rows = summary["points"]
    assert [r["point"] for r in rows] == [0, 1, 2, 3]
    assert all(r["status"] == "ok" and r["steps"] == 1 and isinstance(r["final_reward"], float) for r in rows), rows
    assert sorted(r["run_dir"] for r in rows) == [str(tmp_path / "sw" / str(i)) for i in range(4)]
    for r in rows:
        run = Path(r["run_dir"])
        audit = json.loads((run / "startup_audit.json").read_text())
        assert audit["ok"] and audit["built"]["fsdp_version"] == 2 and audit["built"]["mesh"]["shape"] == [2]
        info = json.loads((run / "run_info.json").read_text())
        assert info["overrides"][:3] == r["overrides"][:3] and info["sweep"] == str(tmp_path / "sw")
        assert (run / ".hydra" / "overrides.yaml").is_file()  # the job folder Hydra's launcher made
        n = int(r["overrides"][2].split("=")[1])
        assert info["plan"]["n"] == n
        assert (tmp_path / "ck" / "sw" / str(r["job"]) / "global_step_1" / "MANIFEST.json").is_file()
    with open(tmp_path / "sw" / "sweep_summary.csv") as fh:
        table = list(csv.DictReader(fh))
    assert [t["status"] for t in table] == ["ok"] * 4 and all(float(t["wall_s"]) > 0 for t in table)
    return rows


@pytest.mark.distributed
@pytest.mark.slow
def test_basic_launcher_runs_the_four_points_one_after_another(tiny_model_path, tmp_path):
    proc, summary = _sweep(SWEEP, tmp_path)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert "BasicLauncher" in summary["launcher"] and "Launching 4 jobs locally" in proc.stdout + proc.stderr
    rows = _check_points(tmp_path, summary)
    ordered = sorted(rows, key=lambda r: r["started"])
    assert all(a["ended"] <= b["started"] for a, b in zip(ordered, ordered[1:], strict=False))  # sequential
    assert "point  status  final_reward" in proc.stdout


@pytest.mark.distributed
@pytest.mark.slow
def test_joblib_launcher_runs_two_points_at_a_time(tiny_model_path, tmp_path):
    proc, summary = _sweep([*SWEEP, "hydra/launcher=joblib", "hydra.launcher.n_jobs=2"], tmp_path)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert "JoblibLauncher" in summary["launcher"]
    rows = _check_points(tmp_path, summary)
    spans = [(r["started"], r["ended"]) for r in rows]
    overlapping = sum(1 for i, a in enumerate(spans) for b in spans[i + 1 :] if a[0] < b[1] and b[0] < a[1])
    assert overlapping >= 2, spans  # (0,1) and (2,3) at least ran together
    at_once = max(sum(1 for s in spans if s[0] <= t < s[1]) for t, _ in spans)
    assert at_once == 2, spans  # never more than n_jobs


@pytest.mark.distributed
@pytest.mark.slow
def test_a_failing_point_does_not_stop_the_others(tiny_model_path, tmp_path):
    # max_prompt_length=16 passes the static checks; the workers find the GSM8K prompts longer and stop
    proc, summary = _sweep(["-m", "+recipe=qwen_grpo", "data.max_prompt_length=16,256"], tmp_path)
    assert proc.returncode == 1
    bad, good = summary["points"]
    assert bad["status"] == "failed" and "data.max_prompt_length" in bad["error"] and bad["steps"] is None
    assert good["status"] == "ok" and good["steps"] == 1
    assert "point 0 failed" in proc.stdout and "Traceback" not in proc.stdout + proc.stderr

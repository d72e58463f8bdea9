"""Each benchmark script runs end to end with tiny settings (two CPU ranks; slow). Numbers are not asserted
beyond their shape: the scripts measure, they do not check thresholds here."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"
pytestmark = pytest.mark.slow
PHASES = ("update_weights", "gen", "reward", "old_log_prob", "ref", "adv", "update_actor", "step")  # the tables' rows


def _run(script: str, *args: str, timeout: int = 900) -> str:
    p = subprocess.run(
        [sys.executable, str(BENCH / script), *args], capture_output=True, text=True, cwd=ROOT, timeout=timeout
    )
    assert p.returncode in (0, 1), p.stdout[-2000:] + p.stderr[-3000:]  # 1: a goal missed, still a table
    return p.stdout


def test_weight_sync_table():
    out = _run("weight_sync.py", "--model", "tiny-qwen2", "--bucket-mb", "8", "--repeats", "1")
    assert "| bucketed per-tensor stream, 8 MiB buckets |" in out and "| full state dict gathered first |" in out
    assert "Bound for the stream" in out


def test_memory_validation_table():
    out = _run("memory_validation.py", "--models", "tiny-qwen2", "--steps", "1")
    row = next(line for line in out.splitlines() if line.startswith("| tiny-qwen2 |"))
    predicted, measured = (float(row.split("|")[i].split()[0]) for i in (3, 4))
    assert predicted > 0 and measured > 0


def _phases(out: str) -> dict[str, tuple[float, float]]:
    """The per-phase table's (wall s, CPU s) of the one engine run."""
    rows = [line.split("|") for line in out.splitlines() if line.startswith("| ")]
    return {r[1].strip(): (float(r[2]), float(r[3])) for r in rows if r[1].strip() in PHASES}


def test_grpo_step_native_side():
    out = _run("grpo_step.py", "--only", "native", "--steps", "2", "--warmup", "1", "--repeats", "1")
    assert "| fsdpcfg native" in out
    ph = _phases(out)
    assert set(ph) == set(PHASES)
    for name in ("update_weights", "gen", "old_log_prob", "ref", "update_actor"):  # the native loop runs each
        assert ph[name][0] > 0 and ph[name][1] > 0, (name, ph[name])
    assert sum(ph[k][0] for k in PHASES if k != "step") <= ph["step"][0] * 1.01  # the phases lie in the step


@pytest.mark.skipif(importlib.util.find_spec("trl") is None, reason="TRL is not installed (pip install .[bench])")
def test_grpo_step_trl_side():
    out = _run("grpo_step.py", "--only", "trl", "--steps", "1", "--warmup", "0", "--repeats", "1")
    assert "| TRL " in out
    ph = _phases(out)
    assert ph["update_weights"] == (0.0, 0.0) and ph["old_log_prob"] == (0.0, 0.0)  # no sync, on-policy
    for name in ("gen", "ref", "update_actor"):
        assert ph[name][0] > 0 and ph[name][1] > 0, (name, ph[name])
    assert "LM-head positions scored per step" in out

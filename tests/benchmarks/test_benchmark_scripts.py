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


def test_grpo_step_native_side():
    out = _run("grpo_step.py", "--only", "native", "--steps", "2", "--warmup", "1")
    assert "| fsdpcfg native" in out


@pytest.mark.skipif(importlib.util.find_spec("trl") is None, reason="TRL is not installed (pip install .[bench])")
def test_grpo_step_trl_side():
    out = _run("grpo_step.py", "--only", "trl", "--steps", "1", "--warmup", "0")
    assert "| TRL " in out

"""gather_full (the weight stream's per-parameter gather) equals DTensor.full_tensor() on 2 gloo ranks, also
when the rows come in many chunks and when an uneven layout falls back to full_tensor()."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from fsdpcfg.launch.torchrun import torchrun_argv

WORKER = Path(__file__).with_name("_gather_worker.py")


@pytest.mark.slow
@pytest.mark.distributed
def test_gather_full_matches_full_tensor(tmp_path):
    out = tmp_path / "report.json"
    cmd = torchrun_argv([WORKER, out], nproc_per_node=2)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    report = json.loads(out.read_text())
    for name in ("even_rows_many_chunks", "even_rows_one_chunk", "uneven_rows_fallback", "vector"):
        assert report[name]["equal"] and report[name]["same_as_full_tensor"], (name, report[name])
    assert report["even_rows_many_chunks"]["shape"] == [64, 48]
    assert report["uneven_rows_fallback"]["shape"] == [63, 5]
    assert report["plain_clone"] == {"equal": True, "copy": True}

"""A full disk during training ends the run with one fsdpcfg message (issue 14 item 8): the checkpoint folder on a
1 MiB file system passes the probe before torchrun (4 KiB) and fills up at the first save; the run exits 1 with
``cannot write ...: no space left on the device``, the fix, no traceback and no torchrun failure report, and no
process of the run is left."""

from __future__ import annotations

import subprocess
import sys

import pytest
from _killtree import REPO, descendants


@pytest.mark.distributed
@pytest.mark.slow
def test_disk_full_at_the_first_save_is_one_message(tiny_model, tmp_path):
    tiny_model("tiny-qwen2-arith")
    full = tmp_path / "full"
    full.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1M", "tmpfs", str(full)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "fsdpcfg",
                "+recipe=arith_grpo",
                f"fsdpcfg.run_dir={tmp_path}/run",
                f"trainer.default_local_dir={full}/ckpt",
                "trainer.total_training_steps=1",
                "trainer.save_freq=1",
                "trainer.logger=[console]",
            ],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        out, err = proc.communicate(timeout=400)
        left = descendants(proc.pid)
    finally:
        subprocess.run(["umount", "-l", str(full)])
    assert proc.returncode == 1, out[-2000:] + err[-3000:]
    assert "cannot write" in err and "no space left on the device" in err and f"df -h {full}/ckpt" in err
    assert "trainer.default_local_dir" in err and "global_step_N.tmp" in err
    assert "Traceback" not in out + err and "ChildFailedError" not in out + err
    assert err.count("cannot write") == 1  # one message, not one per rank
    assert not left
    assert (tmp_path / "run" / "metrics.jsonl").read_text().count('"step": 1') == 1  # step 1 ran, then the save failed
    logs = list((tmp_path / "run").glob("fault-rank*.log"))  # the detail, for a bug report
    assert logs and all("Traceback" in p.read_text() for p in logs)
    assert not (full / "ckpt" / "global_step_1").exists()  # nothing half-saved that resume could load

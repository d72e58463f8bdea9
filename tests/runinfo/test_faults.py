"""Machine faults as one message (fsdpcfg/runinfo/faults.py): a full disk, a read-only or unwritable folder become
WriteFault naming the file, the cause and the key; the run and checkpoint folders are probed before torchrun;
metrics.jsonl keeps one row per step when a run starts again."""

from __future__ import annotations

import errno
import json
import subprocess
from pathlib import Path

import pytest

from fsdpcfg.cli.main import main
from fsdpcfg.launch import signals  # the launcher starts torchrun through run_forwarding
from fsdpcfg.runinfo.faults import WriteFault, require_writable, writing
from fsdpcfg.train.metrics import DISCARDED_FILE, truncate_after


def _mount(folder: Path, options: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({proc.stderr.decode().strip()})")
    return folder


@pytest.fixture
def tiny_fs(tmp_path):
    """A 1 MiB file system (a full disk after the first MiB)."""
    folder = _mount(tmp_path / "full", "size=1M")
    yield folder
    subprocess.run(["umount", "-l", str(folder)])


@pytest.fixture
def read_only_fs(tmp_path):
    folder = _mount(tmp_path / "ro", "size=1M,ro")
    yield folder
    subprocess.run(["umount", "-l", str(folder)])


def test_full_disk_in_torch_safetensors_and_plain_writes_is_one_write_fault(tiny_fs):
    import torch
    from safetensors.torch import save_file

    big = torch.zeros(1_000_000)  # 4 MB on a 1 MiB file system
    writes = {
        "optim_rank0.pt": lambda p: torch.save({"a": big}, p),  # torch says "unexpected pos 704 vs 598"
        "model.safetensors": lambda p: save_file({"a": big}, str(p)),  # "... (os error 28)"
        "metrics.jsonl": lambda p: p.write_bytes(b"x" * 5_000_000),
    }
    for name, write in writes.items():
        target = tiny_fs / "global_step_1.tmp" / name
        target.parent.mkdir(exist_ok=True)
        with pytest.raises(WriteFault) as e:
            with writing(target, "trainer.default_local_dir"):
                write(target)
        text = str(e.value)
        assert text.startswith(f"trainer.default_local_dir: cannot write {target}: no space left on the device (")
        assert "MiB free of 1.0 MiB" in text and f"df -h {tiny_fs}" in text and "global_step_N.tmp" in text
        for p in target.parent.iterdir():
            p.unlink()


def test_read_only_checkpoint_folder_is_refused_before_torchrun(tmp_path, read_only_fs, capsys, monkeypatch):
    started = []
    monkeypatch.setattr(signals, "run_forwarding", lambda cmd, env, **kw: started.append(cmd) or 0)
    rc = main(["+recipe=qwen_grpo", f"fsdpcfg.run_dir={tmp_path}/run", f"trainer.default_local_dir={read_only_fs}/ck"])
    err = capsys.readouterr().err
    assert rc == 1 and not started
    assert f"trainer.default_local_dir: cannot write {read_only_fs}/ck: the file system is read-only" in err
    assert "point trainer.default_local_dir at a folder on a writable file system" in err
    assert "Traceback" not in err
    with pytest.raises(WriteFault, match="read-only"):
        require_writable(read_only_fs, "fsdpcfg.run_dir")


def test_probe_leaves_nothing_and_names_a_full_folder(tiny_fs, tmp_path):
    require_writable(tmp_path / "new" / "folder", "fsdpcfg.run_dir")
    assert (tmp_path / "new" / "folder").is_dir() and not list((tmp_path / "new" / "folder").iterdir())
    with pytest.raises(WriteFault, match="no space left"):
        with writing(tiny_fs / "filler", "fsdpcfg.run_dir"):
            (tiny_fs / "filler").write_bytes(b"x" * 2_000_000)
    (tiny_fs / "filler").unlink()


def test_errno_and_library_messages_are_read_and_bugs_pass_through(tmp_path):
    for exc in (
        OSError(errno.ENOSPC, "No space left on device"),
        OSError(errno.EACCES, "Permission denied"),
        RuntimeError("Error while serializing: I/O error: No space left on device (os error 28)"),
    ):
        with pytest.raises(WriteFault) as e:
            with writing(tmp_path / "x.bin", "fsdpcfg.run_dir"):
                raise exc
        assert f"cannot write {tmp_path / 'x.bin'}" in str(e.value) and e.value.key == "fsdpcfg.run_dir"
    with pytest.raises(ZeroDivisionError):  # a bug of the writer on a healthy disk: not a fault
        with writing(tmp_path / "x.bin", "fsdpcfg.run_dir"):
            raise ZeroDivisionError("a bug in the code under the writer")


def test_metrics_rows_past_the_resumed_step_are_moved_aside(tmp_path):
    rows = [{"step": 1, "r": 0.1}, {"step": 2, "r": 0.2}, {"step": 2, "r": 0.25}, {"step": 3, "r": 0.3}]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"step": 4, "r"')
    assert truncate_after(tmp_path, 2) == 3  # the first step-2 row, step 3, the half-written line
    kept = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert kept == [{"step": 1, "r": 0.1}, {"step": 2, "r": 0.25}]
    assert len((tmp_path / DISCARDED_FILE).read_text().splitlines()) == 3
    assert truncate_after(tmp_path, 2) == 0 and truncate_after(tmp_path / "none", 0) == 0
    assert truncate_after(tmp_path, 0) == 2 and (tmp_path / "metrics.jsonl").read_text() == ""

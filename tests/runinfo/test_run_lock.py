"""One run per folder (fsdpcfg/runinfo/lock.py, fsdpcfg/launch/folders.py): a second run into a held run folder
or checkpoint folder is refused before torchrun, naming the holder; a stale lock is taken over with a message;
a dry run writes nothing into a folder that holds a run; rank 0 started without the launcher takes the lock."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import fsdpcfg
from fsdpcfg.cli.main import main
from fsdpcfg.errors import ConfigError
from fsdpcfg.launch import signals  # the launcher starts torchrun through run_forwarding
from fsdpcfg.runinfo.lock import HOLDER_ENV, LOCK_FILE, FolderBusy, Holder, RunLock, hold_for_rank, probe

RUN = ["+recipe=qwen_grpo", "trainer.logger=[console]"]


def _args(tmp_path: Path, *more: str) -> list[str]:
    return [*RUN, f"fsdpcfg.run_dir={tmp_path}/run", f"trainer.default_local_dir={tmp_path}/ckpt", *more]


@pytest.fixture
def no_torchrun(monkeypatch):
    """Record torchrun starts instead of starting it (the launcher calls subprocess.call)."""
    started = []
    monkeypatch.setattr(
        signals, "run_forwarding", lambda cmd, env, **kw: started.append((cmd, {**kw, "env": env})) or 0
    )
    return started


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_second_lock_on_a_held_folder_is_refused_naming_the_holder(tmp_path):
    with RunLock([("fsdpcfg.run_dir", tmp_path)]) as first:
        record = json.loads((tmp_path / LOCK_FILE).read_text())
        assert record["pid"] == os.getpid() and record["host"] == socket.gethostname()
        assert probe(tmp_path) == ("held", first.holder)
        with pytest.raises(FolderBusy) as e:
            RunLock([("fsdpcfg.run_dir", tmp_path)]).acquire()
        text = str(e.value)
        assert f"pid {os.getpid()} on host {socket.gethostname()}, started {first.holder.started}" in text
        assert e.value.key == "fsdpcfg.run_dir" and "trainer.experiment_name" in text
    assert probe(tmp_path) == ("free", None)  # released and emptied: no stale holder left behind
    RunLock([("fsdpcfg.run_dir", tmp_path)]).acquire().release()


def test_a_lock_file_deleted_under_a_live_run_is_not_taken(tmp_path):
    """Another process holds the folder's lock; someone deletes the lock file. A new lock file's flock is free (a
    new inode), but the run holding the deleted one is still found (its open descriptor) and named."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from fsdpcfg.runinfo.lock import RunLock; "
            "RunLock([('fsdpcfg.run_dir', sys.argv[1])]).acquire(); print('held', flush=True); sys.stdin.read()",
            str(tmp_path),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(fsdpcfg.__file__).resolve().parents[1],
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        (tmp_path / LOCK_FILE).unlink()  # deleted mid-run
        with pytest.raises(FolderBusy) as e:
            RunLock([("fsdpcfg.run_dir", tmp_path)]).acquire()
        assert f"in use by another run: pid {holder.pid} on host" in str(e.value)
        assert "its lock file was deleted" in str(e.value) and e.value.key == "fsdpcfg.run_dir"
    finally:
        holder.kill()
        holder.wait()
    RunLock([("fsdpcfg.run_dir", tmp_path)]).acquire().release()  # the holder is gone: taken


def test_second_run_is_refused_before_torchrun_and_writes_nothing(tmp_path, capsys, no_torchrun):
    (tmp_path / "run").mkdir()
    with RunLock([("fsdpcfg.run_dir", tmp_path / "run")]) as held:
        before = _snapshot(tmp_path)
        rc = main(_args(tmp_path))
        err = capsys.readouterr().err
        assert rc == 1 and not no_torchrun
        assert (
            f"{tmp_path}/run is in use by another run: pid {os.getpid()} on host {socket.gethostname()}, "
            f"started {held.holder.started}" in err
        )
        assert "Traceback" not in err
        after = _snapshot(tmp_path)
        assert {k: v for k, v in after.items() if not k.startswith("ckpt")} == before  # no config.yaml, run_info
    # the checkpoint folder alone is locked the same way
    with RunLock([("trainer.default_local_dir", tmp_path / "ckpt")]):
        assert main(_args(tmp_path)) == 1 and not no_torchrun
        assert f"trainer.default_local_dir: {tmp_path}/ckpt is in use by another run" in capsys.readouterr().err
    # free: the run starts, holding both folders while torchrun runs, and tells the ranks who holds them
    seen = []
    no_torchrun_call = signals.run_forwarding
    signals.run_forwarding = lambda cmd, env, **kw: (
        seen.append((probe(tmp_path / "run"), probe(tmp_path / "ckpt"), env[HOLDER_ENV]))
        or no_torchrun_call(cmd, env, **kw)
    )
    try:
        assert main(_args(tmp_path)) == 0
    finally:
        signals.run_forwarding = no_torchrun_call
    (run_state, run_holder), (ck_state, ck_holder), env_pid = seen[0]
    assert run_state == ck_state == "held" and run_holder.pid == ck_holder.pid == os.getpid()
    assert env_pid == str(os.getpid())
    assert probe(tmp_path / "run") == ("free", None) and (tmp_path / "run" / "config.yaml").is_file()


def _dead_holder(folder: Path) -> int:
    """Take the lock in a child process and SIGKILL it: the lock file keeps its record, the flock is gone."""
    folder.mkdir(parents=True, exist_ok=True)
    code = (
        "import sys, time; from fsdpcfg.runinfo.lock import RunLock; "
        f"RunLock([('fsdpcfg.run_dir', {str(folder)!r})]).acquire(); print('locked', flush=True); time.sleep(60)"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(fsdpcfg.__file__).resolve().parents[1])},
    )
    assert child.stdout.readline().strip() == "locked"
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    return child.pid


def test_stale_lock_of_a_dead_process_is_taken_over_with_a_message(tmp_path, capsys, no_torchrun):
    pid = _dead_holder(tmp_path / "run")
    state, holder = probe(tmp_path / "run")
    assert state == "stale" and holder.pid == pid and holder.alive() is False
    assert main(_args(tmp_path)) == 0 and len(no_torchrun) == 1
    out = capsys.readouterr().out
    assert f"took over the stale lock of {tmp_path}/run: pid {pid} on host {socket.gethostname()}" in out
    assert "is not running" in out


def test_dry_run_writes_nothing_into_a_folder_that_holds_a_run(tmp_path, capsys):
    run = tmp_path / "run"
    assert main(_args(tmp_path, "--dry-run")) == 0  # a fresh folder: the dry run writes its files there
    assert json.loads((run / "run_info.json").read_text())["dry_run"] is True
    assert main(_args(tmp_path, "--dry-run")) == 0  # only a dry run's files: reused
    assert "is left as it is" not in capsys.readouterr().out
    (run / "metrics.jsonl").write_text('{"step": 1}\n')  # now it holds a run
    (run / "run_info.json").write_text('{"created": "earlier"}\n')
    before = _snapshot(run)
    assert main(_args(tmp_path, "--dry-run", "actor_rollout_ref.actor.optim.lr=3e-6")) == 0
    out = capsys.readouterr().out
    assert _snapshot(run) == before
    line = next(x for x in out.splitlines() if "is left as it is" in x)
    other = Path(line.rsplit(" ", 1)[1])
    assert (other / "config.yaml").is_file() and f"{other}/config.yaml" in out
    # a run holding the lock: the dry run neither takes it over nor writes
    with RunLock([("fsdpcfg.run_dir", run)]) as held:
        before = _snapshot(run)
        assert main(_args(tmp_path, "--dry-run")) == 0
        assert f"a run is using it (pid {held.holder.pid}" in capsys.readouterr().out
        assert _snapshot(run) == before


def test_rank0_started_without_the_launcher_holds_the_folders(tmp_path, monkeypatch):
    cfg = {"fsdpcfg": {"run_dir": str(tmp_path / "run")}, "trainer": {"default_local_dir": str(tmp_path / "ck")}}
    monkeypatch.delenv(HOLDER_ENV, raising=False)
    with RunLock([("trainer.default_local_dir", tmp_path / "ck")]):
        with pytest.raises(FolderBusy, match="is in use by another run"):
            hold_for_rank(cfg)
    # under its launcher (the env names the holder, the lock files agree): nothing to take
    with RunLock([("fsdpcfg.run_dir", tmp_path / "run"), ("trainer.default_local_dir", tmp_path / "ck")]) as lk:
        monkeypatch.setenv(HOLDER_ENV, str(lk.holder.pid))
        hold_for_rank(cfg)
        monkeypatch.setenv(HOLDER_ENV, "1")  # a stale variable: the real holder is someone else -> refused
        with pytest.raises(FolderBusy):
            hold_for_rank(cfg)


def test_holder_record_parsing_and_liveness():
    me = Holder.of_this_process()
    assert Holder.parse(json.dumps(me.__dict__)) == me and me.alive() is True
    assert Holder.parse("") is None and Holder.parse("{}") is None
    assert Holder(me.pid, "some-other-host", "t", "c").alive() is None
    with pytest.raises(ConfigError):
        raise FolderBusy("x")


def test_torchrun_started_with_the_lock_keeps_it_when_the_launcher_is_killed(tmp_path):
    """The launcher passes the lock's descriptor to torchrun (pass_fds): SIGKILL the launcher and the folder stays
    locked while its child lives; the refusal says the named holder is gone and who still holds it."""
    code = (
        "import subprocess, sys, time; from fsdpcfg.runinfo.lock import RunLock; "
        f"lk = RunLock([('fsdpcfg.run_dir', {str(tmp_path)!r})]).acquire(); "
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], pass_fds=lk.pass_fds()); "
        "print(child.pid, flush=True); time.sleep(60)"
    )
    launcher = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(fsdpcfg.__file__).resolve().parents[1])},
    )
    child = int(launcher.stdout.readline())
    try:
        os.kill(launcher.pid, signal.SIGKILL)
        launcher.wait(timeout=30)
        state, holder = probe(tmp_path)
        assert state == "held" and holder.pid == launcher.pid and holder.alive() is False
        with pytest.raises(FolderBusy) as e:
            RunLock([("fsdpcfg.run_dir", tmp_path)]).acquire()
        assert f"pid {launcher.pid}" in str(e.value) and "one it started still holds the lock" in str(e.value)
    finally:
        os.kill(child, signal.SIGKILL)
    deadline = time.time() + 30
    while probe(tmp_path)[0] == "held" and time.time() < deadline:
        time.sleep(0.1)
    assert probe(tmp_path)[0] == "stale"  # the last holder is gone: the next run takes it over

"""The stop mechanism of :mod:`fsdpcfg.launch.signals` on stand-in processes (fast; the real torchrun runs are
``tests/train/test_stop_run.py``): a launcher running a fake torchrun, which starts a fake rank in a session of
its own as torchrun does. Signals are forwarded and waited for, a torchrun that ignores them is killed after the
grace period, and the fake rank dies with its parent whatever kills the launcher."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux only")

REPO = Path(__file__).resolve().parents[2]

RANK = "from fsdpcfg.launch.signals import die_with_parent; die_with_parent(); import time; time.sleep(120)"
TORCHRUN = textwrap.dedent("""
    import signal, subprocess, sys, time
    if sys.argv[2] == "ignore":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    rank = subprocess.Popen([sys.executable, "-c", {rank!r}], start_new_session=True)
    open(sys.argv[1], "w").write(f"{{rank.pid}}\\n")
    time.sleep(120)
""").format(rank=RANK)
LAUNCHER = textwrap.dedent("""
    import os, sys
    from fsdpcfg.errors import Interrupted
    from fsdpcfg.launch.signals import run_forwarding
    try:
        rc = run_forwarding([sys.executable, "-c", {torchrun!r}, sys.argv[1], sys.argv[2]], dict(os.environ),
                            grace_s=1.0)
    except Interrupted as e:
        print(e, flush=True)
        sys.exit(e.exit_code)
    sys.exit(rc)
""").format(torchrun=TORCHRUN)


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(d.name))
            except OSError:
                continue
    return out


def _start(tmp_path: Path, mode: str = "plain"):
    pid_file = tmp_path / "rank.pid"
    proc = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, str(pid_file), mode],
        cwd=REPO,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    end = time.time() + 30
    while not (pid_file.exists() and pid_file.read_text().endswith("\n")) and time.time() < end:
        time.sleep(0.05)
    rank = int(pid_file.read_text())
    (torchrun,) = _children(proc.pid)
    time.sleep(0.3)  # the rank has set its death signal
    assert _alive(rank) and _alive(torchrun)  # the parent check let a rank with a live launcher run
    return proc, torchrun, rank


def _gone_within(pids: list[int], seconds: float) -> list[int]:
    end = time.time() + seconds
    while time.time() < end and any(_alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


def _cleanup(*pids: int) -> None:
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130), (signal.SIGHUP, 129)])
def test_a_signal_is_forwarded_and_the_launcher_exits_128_plus_it(sig, code, tmp_path):
    proc, torchrun, rank = _start(tmp_path)
    try:
        t0 = time.time()
        os.kill(proc.pid, sig)
        assert proc.wait(timeout=10) == code
        assert not _gone_within([torchrun, rank], 3)
        assert time.time() - t0 < 3  # torchrun stopped on the forwarded signal, no grace period spent
        out = proc.stdout.read()
        assert f"{signal.Signals(sig).name}: stopping torchrun and its ranks" in out
        assert f"stopped by {signal.Signals(sig).name}" in out
    finally:
        _cleanup(proc.pid, torchrun, rank)


@pytest.mark.slow  # end to end: a fresh Python process
def test_a_torchrun_that_ignores_the_signal_is_killed_after_the_grace_period(tmp_path):
    proc, torchrun, rank = _start(tmp_path, "ignore")
    try:
        t0 = time.time()
        os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=10) == 143
        assert 1.0 <= time.time() - t0 < 4
        assert not _gone_within([torchrun, rank], 3)
    finally:
        _cleanup(proc.pid, torchrun, rank)


@pytest.mark.slow  # end to end: a fresh Python process
def test_a_second_signal_kills_at_once(tmp_path):
    proc, torchrun, rank = _start(tmp_path, "ignore")
    try:
        os.kill(proc.pid, signal.SIGINT)
        time.sleep(0.2)
        t0 = time.time()
        os.kill(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=10) == 130
        assert time.time() - t0 < 0.9  # before the 1 s grace period ran out
        assert not _gone_within([torchrun, rank], 3)
    finally:
        _cleanup(proc.pid, torchrun, rank)


@pytest.mark.parametrize("victim", ["launcher", "group", "torchrun"])
def test_sigkill_anywhere_leaves_no_process(victim, tmp_path):
    proc, torchrun, rank = _start(tmp_path)
    try:
        if victim == "launcher":
            os.kill(proc.pid, signal.SIGKILL)  # torchrun: SIGTERM by its death signal, then the rank: SIGKILL
        elif victim == "group":
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            os.kill(torchrun, signal.SIGKILL)  # the rank (own session) dies by its death signal
        assert not _gone_within([torchrun, rank], 3)
        proc.wait(timeout=10)
    finally:
        _cleanup(proc.pid, torchrun, rank)


def test_a_rank_whose_launcher_is_already_gone_exits_at_start():
    env = {**os.environ, "PYTHONPATH": str(REPO), "FSDPCFG_LAUNCHER_PID": "1"}  # its parent's parent is not pid 1
    p = subprocess.run([sys.executable, "-c", RANK], env=env, timeout=30)
    assert p.returncode == 143


def test_torchrun_inherits_the_run_lock_descriptors(tmp_path):
    """filelock closes its own descriptors in a forked child when a ``preexec_fn`` runs (its at-fork hook):
    run_forwarding passes duplicates, so the child starts (it failed with EBADF) and holds the lock."""
    from fsdpcfg.launch.signals import run_forwarding
    from fsdpcfg.runinfo.lock import RunLock

    lock = RunLock(
        [("fsdpcfg.run_dir", tmp_path / "run"), ("trainer.default_local_dir", tmp_path / "ck")], echo=lambda _m: None
    ).acquire()
    try:
        out = tmp_path / "fds.txt"
        probe = (
            "import os,sys; fds=[f for f in os.listdir('/proc/self/fd') "
            "if os.path.realpath('/proc/self/fd/'+f).endswith('.fsdpcfg.lock')]; "
            f"open({str(out)!r},'w').write(str(len(fds)))"
        )
        before = set(os.listdir("/proc/self/fd"))
        assert run_forwarding([sys.executable, "-c", probe], dict(os.environ), pass_fds=lock.pass_fds()) == 0
        assert out.read_text() == "2"  # both lock files open in the child
        assert set(os.listdir("/proc/self/fd")) <= before  # the duplicates are closed here
    finally:
        lock.release()

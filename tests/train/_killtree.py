"""Test helpers: start ``python -m fsdpcfg`` with its output in a file, wait for a line, SIGKILL the whole tree.

torchrun starts each rank in a session of its own, so killing torchrun's process group leaves the ranks
running (rank 0 would finish the save): every descendant is found through ``/proc`` (parent ids) and killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def start(args: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    """Start ``python -m fsdpcfg ARGS`` in its own session, stdout and stderr to ``log``."""
    fh = open(log, "wb")
    return subprocess.Popen(
        [sys.executable, "-m", "fsdpcfg", *args],
        cwd=REPO,
        stdout=fh,
        stderr=subprocess.STDOUT,
        env={**os.environ, **(env or {})},
        start_new_session=True,
    )


def descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid`` (children, grandchildren, ...), read from /proc."""
    parent: dict[int, int] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            parent[int(d.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        out += kids
        todo += kids
    return out


def wait_for_line(log: Path, text: str, proc: subprocess.Popen, timeout: float) -> None:
    """Wait until ``text`` appears in ``log``; fail if ``proc`` exits first or ``timeout`` seconds pass."""
    end = time.time() + timeout
    while time.time() < end:
        if text in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            raise AssertionError(f"the run exited ({proc.returncode}) before {text!r}:\n{log.read_text()[-3000:]}")
        time.sleep(0.2)
    raise AssertionError(f"{text!r} not seen in {timeout} s:\n{log.read_text()[-3000:]}")


def kill_tree(proc: subprocess.Popen) -> list[int]:
    """SIGKILL ``proc`` and all its descendants at once; return the pids killed."""
    pids = descendants(proc.pid) + [proc.pid]
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait(timeout=30)
    for p in pids:  # the ranks are not our children: wait until they are gone
        end = time.time() + 30
        while Path(f"/proc/{p}").exists() and time.time() < end:
            try:
                if (Path(f"/proc/{p}") / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                    break
            except OSError:
                break
            time.sleep(0.1)
    return pids

"""Stopping the launcher stops training: torchrun and its ranks never outlive ``python -m fsdpcfg``.

* SIGINT, SIGTERM and SIGHUP to the launcher are forwarded to torchrun (started in a session of its own, so a
  terminal's Ctrl-C reaches it once, from here); the launcher waits :data:`GRACE_S` seconds for it to stop
  its ranks, then SIGKILLs its process group; a second signal kills at once. The launcher then exits with
  ``128 + signal`` (130, 143, 129) through :class:`fsdpcfg.errors.Interrupted`.
* Whatever kills the launcher (SIGKILL included), torchrun gets SIGTERM from the kernel
  (``prctl(PR_SET_PDEATHSIG)``, :func:`child_setup`), and each rank gets SIGKILL when torchrun dies
  (:func:`die_with_parent`, called first thing in the rank entry): torchrun starts every rank in a session of its
  own, so no process-group signal reaches them.

Linux only (``prctl``); elsewhere signals are still forwarded, and torchrun stays in the launcher's process group
so that killing the group reaches it.

Source: issue 14 item 2 (SIGTERM or SIGKILL of the launcher left torchrun and the ranks writing checkpoints);
``prctl(2)`` (``PR_SET_PDEATHSIG`` fires when the parent *thread* exits, and is cleared by nothing but
``fork``, so it is set in each child, and the parent is checked afterwards to close the race with an
already-dead parent).
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from fsdpcfg.errors import Interrupted

#: seconds torchrun gets to stop its ranks after a forwarded signal before its process group is SIGKILLed.
GRACE_S = 5.0
#: the signals forwarded to torchrun.
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: environment variable naming the launcher's PID for the ranks' parent check (:func:`die_with_parent`).
LAUNCHER_PID_ENV = "FSDPCFG_LAUNCHER_PID"
_PR_SET_PDEATHSIG = 1


def set_death_signal(sig: int) -> bool:
    """Ask the kernel to send ``sig`` to this process when its parent (thread) exits; False where unsupported
    (not Linux, or ``prctl`` refused)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def supported() -> bool:
    """True where :func:`set_death_signal` works (Linux)."""
    return sys.platform.startswith("linux")


def child_setup(parent_pid: int, sig: int = signal.SIGTERM) -> Callable[[], None]:
    """A ``preexec_fn`` for torchrun: set its death signal to ``sig``, then exit at once when the launcher
    (``parent_pid``) already died between ``fork`` and ``prctl``."""

    def setup() -> None:
        if set_death_signal(sig) and os.getppid() != parent_pid:
            os._exit(128 + int(sig))

    return setup


def _parent_of(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def die_with_parent() -> None:
    """Called by each rank at start-up: SIGKILL this process when its parent (torchrun) dies. When the
    launcher named itself in ``$FSDPCFG_LAUNCHER_PID`` and the parent's parent is no longer it (torchrun or the
    launcher died before the death signal was set), exit now with 143."""
    if not set_death_signal(signal.SIGKILL):
        return
    launcher = os.environ.get(LAUNCHER_PID_ENV)
    if launcher and launcher.isdigit() and _parent_of(os.getppid()) != int(launcher):
        os._exit(143)


def run_forwarding(
    cmd: list[str],
    env: dict[str, str],
    *,
    grace_s: float = GRACE_S,
    say: Callable[[str], None] | None = None,
    pass_fds: tuple[int, ...] = (),
) -> int:
    """Run ``cmd`` (torchrun) with ``env`` and return its exit code, forwarding :data:`FORWARDED` signals to it.
    ``pass_fds``: file descriptors the child inherits (the run-folder locks, which it then holds too).

    Raises:
        Interrupted: a forwarded signal stopped the run (after torchrun and its process group are gone, at most
            ``grace_s`` seconds after the signal); its ``exit_code`` is ``128 + signal``.
    """
    say = say or (lambda line: print(line, file=sys.stderr, flush=True))
    own_session = supported()
    env = {**env, LAUNCHER_PID_ENV: str(os.getpid())}
    # filelock (>= 4) closes the descriptors it owns in a forked child (an at-fork hook, which runs because of
    # preexec_fn): pass duplicates, which share the open file description and so the lock, and close ours after
    dups = tuple(os.dup(fd) for fd in pass_fds)
    try:
        proc = subprocess.Popen(
            cmd,
            env=env,
            start_new_session=own_session,
            pass_fds=dups,
            preexec_fn=child_setup(os.getpid()) if own_session else None,
        )
    finally:
        for fd in dups:
            os.close(fd)
    received: list[tuple[int, float]] = []

    def kill_group() -> None:
        try:
            if own_session:
                os.killpg(proc.pid, signal.SIGKILL)
            else:
                proc.kill()
        except (ProcessLookupError, PermissionError):
            pass

    def forward(signum: int, frame: object) -> None:
        received.append((signum, time.monotonic()))
        if len(received) > 1:  # a second signal: no more waiting
            kill_group()
            return
        say(f"fsdpcfg: {signal.Signals(signum).name}: stopping torchrun and its ranks (at most {grace_s:g} s)")
        try:
            proc.send_signal(signum)
        except ProcessLookupError:
            pass

    main = threading.current_thread() is threading.main_thread()
    saved = {s: signal.signal(s, forward) for s in FORWARDED} if main else {}
    try:
        while True:
            try:
                rc = proc.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                if received and time.monotonic() - received[0][1] > grace_s:
                    kill_group()
    except BaseException:  # an exception here (not a signal we forward) must not leave torchrun running
        kill_group()
        proc.wait()
        raise
    finally:
        for s, h in saved.items():
            signal.signal(s, h)
    if received:
        if own_session:  # whatever torchrun left in its group (its ranks have a death signal of their own)
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        raise Interrupted(received[0][0])
    return rc

"""One run per folder: an exclusive lock on the run folder and the checkpoint folder, held for the run's life.

    <fsdpcfg.run_dir>/.fsdpcfg.lock              {"pid", "host", "started", "command"} of the run holding it
    <trainer.default_local_dir>/.fsdpcfg.lock    the same

The lock is ``fcntl.flock`` through the ``filelock`` library: the kernel drops it when its process dies, however
it dies, so a lock file whose flock is free is stale (its holder is gone) and is taken over with a message. The
launcher (``python -m fsdpcfg``, a sweep point) takes both locks before it writes anything into either folder
and holds them until torchrun (or verl) has exited; a second run into the same folders is refused before
torchrun starts, naming the holder. Rank 0 of a run started directly (``torchrun -m fsdpcfg.train CONFIG``,
without the launcher) takes them itself (:func:`hold_for_rank`).

Source: issue 14 item 3 (two runs into one run folder mixed their metrics, steps 1,1,2,2, and checkpoints; a
second run could delete the first one's save in progress).
"""

from __future__ import annotations

import errno
import json
import os
import socket
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fsdpcfg.errors import ConfigError
from fsdpcfg.paths import LOCK_FILE, within

#: environment variable the launcher sets for torchrun's ranks: the pid of the process holding the locks.
HOLDER_ENV = "FSDPCFG_LOCK_HOLDER"
#: the folder a run adds only its checkpoints to (``global_step_N/``): locked, not claimed (a run folder is claimed,
#: :func:`claim_run_folders`).
CHECKPOINT_KEY = "trainer.default_local_dir"


@dataclass(frozen=True)
class Holder:
    """Who holds (or held) a folder's lock, as written in its lock file."""

    pid: int
    host: str
    started: str
    command: str

    @classmethod
    def of_this_process(cls) -> Holder:
        """This process: its pid, host name, the current time and its command line."""
        from fsdpcfg.runinfo import redact_overrides

        return cls(
            os.getpid(),
            socket.gethostname(),
            time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            " ".join([Path(sys.executable).name, *redact_overrides(list(sys.argv))]),
        )

    @classmethod
    def parse(cls, text: str) -> Holder | None:
        """The holder written in a lock file's ``text``, or ``None`` when it is empty or not a holder record."""
        try:
            d = json.loads(text)
            return cls(int(d["pid"]), str(d["host"]), str(d["started"]), str(d.get("command", "")))
        except (ValueError, KeyError, TypeError):
            return None

    def describe(self) -> str:
        """``pid 1234 on host h, started 2026-12-01T08:00:00+0000 (python -m fsdpcfg ...)``."""
        return f"pid {self.pid} on host {self.host}, started {self.started} ({self.command})"

    def alive(self) -> bool | None:
        """Whether the holder's process runs: ``True``/``False`` on this host, ``None`` on another one."""
        if self.host != socket.gethostname():
            return None
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def probe(folder: str | Path) -> tuple[str, Holder | None]:
    """Look at ``folder``'s lock without taking it or writing anything: ``("free", None)`` (no lock file, or
    an empty one), ``("held", holder)`` (a live run holds it; ``holder`` may be ``None`` while it writes its
    record) or ``("stale", holder)`` (a lock file left by a process that is gone)."""
    import fcntl

    path = Path(folder) / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return "free", None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
                return "held", Holder.parse(_read(path))
            raise
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
    holder = Holder.parse(_read(path))
    return ("stale", holder) if holder is not None else ("free", None)


def deleted_lock_holders(path: Path) -> list[Holder]:
    """Processes of this user that hold ``path`` open after it was deleted (``/proc/<pid>/fd/*`` reads
    ``<path> (deleted)``): a run whose lock file someone removed still holds its flock, on an inode a new lock
    file does not share, so taking the new file's flock proves nothing. Linux only (``[]`` elsewhere, or where
    ``/proc`` cannot be read). Source: issue 22 item 3 (deleting the lock file mid-run let a second run start in the
    same folders)."""
    proc = Path("/proc")
    if not proc.is_dir():
        return []
    target = f"{Path(path).absolute()} (deleted)"
    me, out = os.getpid(), []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            fds = list((entry / "fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(fd) == target:
                    cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
                    out.append(Holder(int(entry.name), socket.gethostname(), "?", f"{cmd}; its lock file was deleted"))
                    break
            except OSError:
                continue
    return out


class FolderBusy(ConfigError):
    """Another run holds the lock of a folder this run would write (exit code 1)."""


def busy_error(folder: Path, key: str, holder: Holder | None) -> FolderBusy:
    """The refusal for ``folder`` (the value of ``key``) held by ``holder``."""
    who = holder.describe() if holder is not None else "another process (its record is being written)"
    kill = f" (kill {holder.pid})" if holder is not None and holder.alive() else ""
    if holder is not None and holder.alive() is False:  # the launcher is gone, the torchrun it started is not
        who += f"; that process is gone but one it started still holds the lock (lsof {folder / LOCK_FILE})"
    return FolderBusy(
        f"{folder} is in use by another run: {who}; two runs in one folder mix their metrics and "
        "checkpoints, so this one was not started",
        key=key,
        value=str(folder),
        fix=f"wait for that run to finish or stop it{kill}, or give this run folders of its own: "
        "another trainer.experiment_name (or fsdpcfg.run_dir and trainer.default_local_dir)",
    )


class RunLock:
    """The exclusive locks of a run's folders (run folder, checkpoint folder), taken together.

    Args:
        folders: ``(key, folder)`` pairs, e.g. ``("fsdpcfg.run_dir", Path(...))``; a folder listed twice (the
            run folder used as checkpoint folder) is locked once. Folders are created when missing.
        echo: where the stale-lock take-over message goes.

    Use as a context manager, or :meth:`acquire` / :meth:`release`. Raises :class:`FolderBusy` (a
    :class:`ConfigError`) from :meth:`acquire` when a live run holds one of the folders; locks already taken
    are released first.
    """

    def __init__(self, folders: Iterable[tuple[str, str | Path]], echo: Callable[[str], None] = print) -> None:
        seen: dict[Path, str] = {}
        for key, folder in folders:
            seen.setdefault(Path(folder).expanduser().absolute(), key)
        self.folders = [(key, folder) for folder, key in seen.items()]
        self.echo = echo
        self.holder = Holder.of_this_process()
        self._locks: list[Any] = []
        self._fds: list[int] = []  # the lock files' descriptors (filelock's, borrowed), for pass_fds

    def _on_acquired(self, folder: Path) -> Callable[[int], None]:
        def write_record(fd: int) -> None:
            self._fds.append(fd)
            os.lseek(fd, 0, os.SEEK_SET)
            old = Holder.parse(os.read(fd, 65536).decode(errors="replace"))
            if old is not None and old.pid != self.holder.pid:
                state = {False: "is not running", None: "ran on another host; its lock was free"}.get(
                    old.alive(), "no longer holds it"
                )
                self.echo(f"fsdpcfg: took over the stale lock of {folder}: {old.describe()} {state}")
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, (json.dumps(self.holder.__dict__) + "\n").encode())
            os.fsync(fd)

        return write_record

    def acquire(self) -> RunLock:
        """Take every folder's lock (creating the folder), or none of them.

        Raises:
            FolderBusy: a live run holds one of them (named with its pid, host, start time and command).
            OSError: a folder cannot be created or written (see :func:`fsdpcfg.runinfo.writable.require_writable`).
        """
        from filelock import FileLock, Timeout

        try:
            for key, folder in self.folders:
                folder.mkdir(parents=True, exist_ok=True)
                path = within(folder, LOCK_FILE)
                lock = FileLock(path, timeout=0, on_acquired=self._on_acquired(folder))
                try:
                    lock.acquire()
                except Timeout:
                    raise busy_error(folder, key, Holder.parse(_read(path))) from None
                self._locks.append((path, lock))
                holders = deleted_lock_holders(path)
                if holders:  # the lock file was deleted under a live run: its flock is on an inode no path names
                    raise busy_error(folder, key, holders[0])
        except BaseException:
            self.release()
            raise
        return self

    def pass_fds(self) -> tuple[int, ...]:
        """The lock files' descriptors, for ``subprocess``'s ``pass_fds``: a child started with them shares the
        locks (one open file description), so they stay held while torchrun lives even if this process is
        killed first."""
        return tuple(self._fds)

    def release(self) -> None:
        """Empty the lock files (a later run then sees no stale holder) and release the locks."""
        self._fds.clear()
        while self._locks:
            path, lock = self._locks.pop()
            try:
                with open(path, "r+") as fh:  # still ours: nobody else writes it while we hold the flock
                    fh.truncate()
            except OSError:
                pass
            lock.release()

    def env(self) -> dict[str, str]:
        """The environment torchrun's ranks get, so rank 0 knows its launcher holds the folders."""
        return {HOLDER_ENV: str(self.holder.pid)}

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def run_folders(cfg: dict[str, Any]) -> list[tuple[str, Path]]:
    """The folders a run writes and locks: ``[("fsdpcfg.run_dir", ...), ("trainer.default_local_dir", ...)]``
    (absolute; the launcher made them so)."""
    return [
        ("fsdpcfg.run_dir", Path(cfg["fsdpcfg"]["run_dir"]).expanduser().absolute()),
        (CHECKPOINT_KEY, Path(cfg["trainer"]["default_local_dir"]).expanduser().absolute()),
    ]


def claim_run_folders(folders: Iterable[tuple[str, Path]], *, write: bool = True) -> None:
    """Claim every folder of ``folders`` but the checkpoint folder (:func:`fsdpcfg.paths.claim_folder`: its mark
    written), or with ``write=False`` only check them (:func:`fsdpcfg.paths.check_folder`). A run checks before it
    writes anything (a lock, a probe) and claims once it holds the locks: a run folder (``fsdpcfg.run_dir``, a
    sweep job's folder) that holds files fsdpcfg did not write is refused with nothing written into it, and so is
    a second run into a held folder.

    Raises:
        FolderNotOwned: a run folder holds files fsdpcfg did not write (rule FC731).
        WriteFault: a folder cannot be created or written.
    """
    from fsdpcfg.paths import OWNED_MARK, check_folder, claim_folder
    from fsdpcfg.runinfo.faults import writing

    for key, folder in folders:
        if key == CHECKPOINT_KEY:
            continue
        if not write:
            check_folder(folder, key)
            continue
        with writing(Path(folder) / OWNED_MARK, key, shown=folder):
            claim_folder(folder, key)


_RANK_LOCK: list[RunLock] = []  # held by rank 0 of a run started without the launcher, for the process's life


def hold_for_rank(cfg: dict[str, Any], echo: Callable[[str], None] = print) -> None:
    """On rank 0: make sure this run holds its folders. Started by the launcher (``$FSDPCFG_LOCK_HOLDER`` names
    the pid that holds them, and the lock files agree), there is nothing to do; started directly, take the locks
    for the life of this process.

    Raises:
        FolderBusy: another run holds one of the folders.
    """
    launcher = os.environ.get(HOLDER_ENV, "")
    folders = run_folders(cfg)

    def held_by_launcher(folder: Path) -> bool:
        state, holder = probe(folder)
        return state == "held" and holder is not None and str(holder.pid) == launcher

    if launcher and all(held_by_launcher(f) for _, f in folders):
        return
    claim_run_folders(folders, write=False)
    _RANK_LOCK.append(RunLock(folders, echo=echo).acquire())
    claim_run_folders(folders)

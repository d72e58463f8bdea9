"""The folders a launch writes: locked for the run's life, checked writable before torchrun, left alone by a
dry run.

    with hold_folders(cfg) as lock:     # both locks taken, both folders written to once; lock.env() for torchrun
        ...write config.yaml, run_info.json; start torchrun with env...
    folder = dry_run_folder(run_dir)    # where --dry-run may write: the run folder, unless it holds a run

A dry run never writes into a folder that holds a run (a lock file, metrics, a start-up audit, or the
run_info.json of a real launch) or files fsdpcfg did not write (``fsdpcfg.run_dir=.`` in a project folder: a real
run refuses it, rule FC731): it writes its files into a fresh temporary folder instead and says so, so
``--dry-run`` next to a running or finished run, or in a user's folder, changes nothing there. A folder holding
only an earlier dry run's files is reused. A real run claims its run folder first
(:func:`fsdpcfg.paths.claim_folder`): a new or empty folder, or one fsdpcfg already wrote.

Source: issue 14 items 3 and 8 (a dry run rewrote a running run's config.yaml and run_info.json; an unwritable
checkpoint folder was found only at the first save); issue 22 item 3 (with ``fsdpcfg.run_dir=.`` a dry run
overwrote the user's own config.yaml).
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from fsdpcfg.paths import folder_not_owned, foreign_entries
from fsdpcfg.runinfo.faults import require_writable
from fsdpcfg.runinfo.lock import LOCK_FILE, RunLock, claim_run_folders, probe, run_folders

#: files and folders that only a real run writes into its run folder.
RUN_MARKERS = ("metrics.jsonl", "startup_audit.json", "tensorboard", "error.txt", LOCK_FILE)
#: the run_info.json entry that marks a dry run's files.
DRY_RUN_KEY = "dry_run"


def holds_run(run_dir: str | Path) -> str | None:
    """Why ``run_dir`` holds a run (one line), or ``None`` when it is absent, empty or holds only a dry run's
    files."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        return None
    state, holder = probe(run_dir)
    if state == "held":
        return f"a run is using it ({holder.describe() if holder else 'its holder is writing its record'})"
    if state == "stale":
        return f"it holds the run of {holder.describe()}" if holder else "it holds an earlier run"
    for name in RUN_MARKERS:
        if name != LOCK_FILE and (run_dir / name).exists():
            return f"it holds an earlier run ({name})"
    info = run_dir / "run_info.json"
    if info.is_file():
        try:
            real = not json.loads(info.read_text()).get(DRY_RUN_KEY)
        except (OSError, ValueError, AttributeError):
            real = True
        if real:
            return "it holds an earlier run (run_info.json)"
    return None


def dry_run_folder(run_dir: str | Path, echo: Callable[[str], None] = print, key: str = "fsdpcfg.run_dir") -> Path:
    """The folder a dry run writes its config.yaml and run_info.json into: ``run_dir``, or, when it holds a
    run (:func:`holds_run`) or files fsdpcfg did not write (:func:`fsdpcfg.paths.foreign_entries`: a real run
    refuses it, rule FC731, printed as a warning naming ``key``), a fresh temporary folder (named in a printed
    line)."""
    why = holds_run(run_dir)
    if why is None:
        foreign = foreign_entries(run_dir)
        if foreign:
            err = folder_not_owned(run_dir, key, foreign)
            echo(f"warning: {key}: {err.message}\n  -> a real run refuses it: {err.fix}")
            why = "it holds files fsdpcfg did not write"
    if why is None:
        return Path(run_dir)
    tmp = Path(tempfile.mkdtemp(prefix="fsdpcfg-dry-run-"))
    echo(f"dry run: {run_dir} is left as it is ({why}); this dry run's files are in {tmp}")
    return tmp


@contextlib.contextmanager
def hold_folders(
    cfg: dict[str, Any], echo: Callable[[str], None] = print, folders: list[tuple[str, Path]] | None = None
) -> Iterator[RunLock]:
    """Lock the run folder and the checkpoint folder (``folders``: default :func:`fsdpcfg.runinfo.lock.
    run_folders`) and write to each once, for the body; yield the lock (its :meth:`RunLock.env` is the
    environment torchrun's ranks need, its :meth:`RunLock.pass_fds` the descriptors torchrun should share).

    Raises:
        FolderNotOwned: the run folder holds files fsdpcfg did not write (rule FC731); nothing was written.
        FolderBusy: another run holds one of them (its pid, host, start time and command named).
        WriteFault: one of them cannot be created or written (named, with the cause and the fix).
    """
    folders = run_folders(cfg) if folders is None else folders
    claim_run_folders(folders, write=False)  # holding files fsdpcfg did not write: refused, nothing written
    for key, folder in folders:  # before the lock, which would fail on the same fault with a less clear message
        require_writable(folder, key)
    with RunLock(folders, echo=echo) as lock:
        claim_run_folders(folders)  # held: the run folder is fsdpcfg's from now on
        yield lock

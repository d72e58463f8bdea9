"""Where built assets live, how a complete one is recognised, and the atomic write.

A folder ``$FSDPCFG_HOME/models/<name>`` is complete when its manifest ``.fsdpcfg-asset.json`` (written
last, inside a temporary folder that is then renamed into place) names the same fingerprint as the current
spec. An interrupted build leaves only a ``.tmp-*`` folder, which the next build removes. Builds of the same
asset in several processes (torchrun ranks, test workers) are serialised by a lock file.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fsdpcfg import paths

MANIFEST = ".fsdpcfg-asset.json"


def models_dir() -> Path:
    """Return ``$FSDPCFG_HOME/models`` (not created)."""
    return paths.home_dir() / "models"


def read_manifest(folder: Path) -> dict[str, Any] | None:
    """Return the manifest of ``folder``, or ``None`` when it is missing or unreadable (incomplete folder)."""
    try:
        return json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        return None


def file_hashes(folder: Path) -> dict[str, str]:
    """Return ``{relative path: sha256}`` of every file under ``folder`` except the manifest, sorted."""
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file() and p.name != MANIFEST:
            out[p.relative_to(folder).as_posix()] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@contextlib.contextmanager
def locked(name: str) -> Iterator[None]:
    """Hold an exclusive lock on ``models/.<name>.lock`` for the duration of the block (blocks meanwhile)."""
    root = models_dir()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".{name}.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@contextlib.contextmanager
def atomic_folder(final: Path) -> Iterator[Path]:
    """Yield an empty temporary folder beside ``final``; on success it replaces ``final`` by a rename.

    On an exception the temporary folder is removed and ``final`` is left as it was.
    """
    final.parent.mkdir(parents=True, exist_ok=True)
    for stale in final.parent.glob(f".tmp-{final.name}-*"):
        shutil.rmtree(stale, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{final.name}-", dir=final.parent))
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    paths.publish_folder(tmp, final, final.parent / f".tmp-{final.name}-old-{os.getpid()}")

"""Faults of the machine during a run (a full disk, a read-only or unwritable folder), as one fsdpcfg message.

A write that fails is reported as :class:`WriteFault` (a :class:`fsdpcfg.errors.ConfigError`) naming the file,
the cause read from the file system (no space left, read-only, no permission, I/O error), the config key that
chose the folder and the fix, instead of the library's traceback (torch.save says ``unexpected pos 704 vs 598``
on a full disk, safetensors ``I/O error: No space left on device``). :func:`writing` wraps every write of the
run folder and the checkpoint folder; :func:`require_writable` probes both folders before torchrun starts, so an
unwritable checkpoint folder is found before step 1, not at the first save.

Source: issue 14 item 8 (disk full, a read-only folder and corrupt data printed raw torch/pyarrow tracebacks;
an unwritable checkpoint folder was found only at the first save).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
from collections.abc import Iterator
from pathlib import Path

from fsdpcfg.errors import ConfigError
from fsdpcfg.paths import WRITE_PROBE as PROBE

#: errno values that are the machine's fault, not a bug of the code that wrote.
FAULT_ERRNOS = {
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "the operation is not permitted",
    errno.EIO: "an I/O error from the device",
    errno.EFBIG: "the file is too large for the file system",
}
#: how libraries that do not raise OSError spell the errno (safetensors: "... (os error 28)").
_OS_ERROR_TEXT = re.compile(r"os error (\d+)|\[Errno (\d+)\]")
#: below this many free bytes a failed write is put down to a full disk.
NEARLY_FULL = 1 << 20


class WriteFault(ConfigError):
    """A file of the run could not be written because of the machine (exit code 1)."""


def _existing(path: Path) -> Path:
    p = path
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def fault_errno(path: str | Path, exc: BaseException | None = None) -> int | None:
    """The errno that explains why writing ``path`` failed with ``exc``: the exception's own (an OSError, or an
    ``os error N`` in a library's message, through the ``__cause__``/``__context__`` chain), else what the file
    system says now (read-only, nearly full, not writable); ``None`` when nothing there explains it (a bug)."""
    seen = 0
    e = exc
    while e is not None and seen < 8:
        if isinstance(e, OSError) and e.errno in FAULT_ERRNOS:
            return e.errno
        m = _OS_ERROR_TEXT.search(str(e))
        if m and int(m.group(1) or m.group(2)) in FAULT_ERRNOS:
            return int(m.group(1) or m.group(2))
        e = e.__cause__ or e.__context__
        seen += 1
    where = _existing(Path(path).parent)
    try:
        st = os.statvfs(where)
    except OSError:
        return None
    if st.f_flag & os.ST_RDONLY:
        return errno.EROFS
    if st.f_bavail * st.f_frsize < NEARLY_FULL:
        return errno.ENOSPC
    if not os.access(where, os.W_OK):
        return errno.EACCES
    return None


def write_fault(path: str | Path, key: str, code: int, exc: BaseException | None = None) -> WriteFault:
    """The message for a failed write of ``path`` (in the folder chosen by config ``key``) with errno ``code``."""
    path = Path(path)
    where = _existing(path.parent)
    free = ""
    with contextlib.suppress(OSError):
        st = os.statvfs(where)
        free = f" ({st.f_bavail * st.f_frsize / 2**20:.1f} MiB free of {st.f_blocks * st.f_frsize / 2**20:.1f} MiB)"
    cause = FAULT_ERRNOS.get(code, os.strerror(code))
    resume = (
        (
            "; the checkpoint being written is left as global_step_N.tmp, never resumed from, and the next run "
            "resumes from the last complete one (trainer.resume_mode=auto)"
        )
        if "global_step_" in str(path)
        else ""
    )
    if code in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        fix = f"free space on that file system (df -h {where}) or point {key} at a larger one" + resume
        cause += free
    elif code == errno.EROFS:
        fix = f"point {key} at a folder on a writable file system" + resume
    elif code in (errno.EACCES, errno.EPERM):
        fix = f"make {where} writable for this user (chmod/chown), or point {key} at a folder you can write"
    else:
        fix = f"check the device holding {where} (dmesg), or point {key} at another file system" + resume
    what = f"into {path}" if path.is_dir() else str(path)
    return WriteFault(f"cannot write {what}: {cause}", key=key, value=str(path), fix=fix)


@contextlib.contextmanager
def writing(path: str | Path, key: str, shown: str | Path | None = None) -> Iterator[None]:
    """Run the body (a write of ``path``); a failure the file system explains becomes :class:`WriteFault`
    (naming ``shown``, default ``path``).

    Anything else (a bug) propagates unchanged, traceback and all.
    """
    try:
        yield
    except ConfigError:  # already a message (WriteFault, PathEscape)
        raise
    except Exception as e:
        code = fault_errno(path, e)
        if code is None:
            raise
        raise write_fault(shown if shown is not None else path, key, code, e) from e


def require_writable(folder: str | Path, key: str, nbytes: int = 4096) -> None:
    """Create ``folder`` if needed and write, fsync and delete a probe file of ``nbytes`` there.

    Raises:
        WriteFault: the folder cannot be created or written (naming it, the cause and ``key``).
    """
    folder = Path(folder)
    probe = folder / f"{PROBE}-{os.getpid()}"
    with writing(probe, key, shown=folder):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                os.write(fd, b"\0" * nbytes)
                os.fsync(fd)
            finally:
                os.close(fd)
        finally:
            with contextlib.suppress(OSError):
                probe.unlink()


def write_file_in(folder: str | Path, name: str, text: str, key: str) -> Path:
    """Write ``text`` to ``folder/name`` atomically and scrubbed of secrets
    (:func:`fsdpcfg.redact.write_private`), creating ``folder``; the one writer of the run folder's
    files. Returns the path.

    Raises:
        FolderNotOwned: ``folder`` holds files fsdpcfg did not write (:func:`fsdpcfg.paths.claim_folder`).
        PathEscape: ``name`` leads outside ``folder``.
        WriteFault: the folder cannot be written (named with the cause and ``key``, the key that chose it).
    """
    from fsdpcfg.paths import owned
    from fsdpcfg.redact import write_private

    with writing(Path(folder) / name, key):
        return write_private(owned(folder, name, key=key), text)

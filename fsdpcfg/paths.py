"""Where fsdpcfg finds its config tree, its shipped data and its built offline assets.

The config tree (``conf/``) and the recipes (``recipes/``) live at the top of the repository; an installed
(non-editable) package carries copies under ``fsdpcfg/_tree``. Offline assets that are built rather than
shipped (the tiny model checkpoints) go under ``$FSDPCFG_HOME`` (default ``~/.cache/fsdpcfg``).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from fsdpcfg import runkind
from fsdpcfg.errors import ConfigError, UsageError

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_DIR = PACKAGE_DIR.parent


#: Config kinds and their tree, relative to ``conf/`` (:attr:`fsdpcfg.runkind.RunKind.conf`): ``ppo`` is verl's
#: ppo_trainer layout (RL: GRPO/PPO), ``sft`` verl's sft_trainer_engine layout. A recipe says which it extends with
#: ``fsdpcfg.kind``.
KINDS = {name: kind.conf for name, kind in runkind.KINDS.items()}


def conf_dir(kind: str = "ppo") -> Path:
    """Return the Hydra config directory of ``kind`` (the folder holding ``config.yaml`` and the groups).

    Raises:
        FileNotFoundError: the tree is missing (a broken install).
        KeyError: ``kind`` is not one of :data:`KINDS`.
    """
    rel = KINDS[kind]
    for candidate in (REPO_DIR / "conf", PACKAGE_DIR / "_tree" / "conf"):
        if (candidate / rel / "config.yaml").is_file():
            return (candidate / rel).resolve()
    raise FileNotFoundError(f"fsdpcfg config tree not found under {REPO_DIR / 'conf'} or {PACKAGE_DIR / '_tree'}")


def recipes_dir() -> Path:
    """Return the directory of recipe YAML files (the ``recipe`` config group, shared by every kind)."""
    return (conf_dir("ppo") / "recipe").resolve()


def data_dir() -> Path:
    """Return the package's shipped data directory (datasets, reference tables)."""
    return PACKAGE_DIR / "data"


def home_dir() -> Path:
    """Return ``$FSDPCFG_HOME`` (default ``~/.cache/fsdpcfg``), where built offline assets live."""
    return Path(os.environ.get("FSDPCFG_HOME") or Path.home() / ".cache" / "fsdpcfg").expanduser()


# -- where fsdpcfg writes -----------------------------------------------------------------------------------
#: the longest file name most Linux file systems accept (NAME_MAX, bytes).
NAME_MAX = 255


def component_problem(name: object) -> str | None:
    """Why ``name`` cannot be one path component of a folder fsdpcfg writes (``trainer.project_name`` and
    ``trainer.experiment_name`` become ``runs/<project>/<experiment>``), or ``None`` when it can.

    Refused: a non-string or empty name, ``.`` and ``..``, a ``/`` or NUL in it, a leading ``-`` (read as an
    option by the shell tools a user points at the folder), more than :data:`NAME_MAX` bytes. Source: issue 14
    item 5 (``trainer.experiment_name=../../x`` wrote outside the run root and overwrote a user's config.yaml).
    """
    if not isinstance(name, str):
        return f"is a {type(name).__name__}, not a name"
    if not name.strip():
        return "is empty"
    if name in (".", ".."):
        return f"is {name!r}, which names a parent or the same folder"
    if "/" in name or "\\" in name:
        return "holds a path separator ('/' or '\\')"
    if "\x00" in name:
        return "holds a NUL character"
    if name.startswith("-"):
        return "starts with '-' (read as an option by shell tools)"
    if len(name.encode()) > NAME_MAX:
        return f"is {len(name.encode())} bytes long (file names stop at {NAME_MAX})"
    return None


class PathEscape(ConfigError):
    """A path fsdpcfg was about to write or delete lies outside the folder it belongs to (exit code 1)."""


def within(root: str | os.PathLike, *parts: str) -> Path:
    """Return ``root/parts...`` after checking that it stays inside ``root`` once ``..`` and symbolic links
    are resolved (``root`` itself may be a link); the path returned is the joined, unresolved one.

    Every writer of the run folder and the checkpoint folder builds its target with this (one check for
    every file fsdpcfg writes or deletes there).

    Raises:
        PathEscape: the joined path resolves outside ``root`` (an absolute part, ``..``, a link pointing out).
    """
    base = Path(root)
    target = base.joinpath(*parts)
    real_root = base.resolve()
    real = target.resolve()
    if real != real_root and real_root not in real.parents:
        raise PathEscape(
            f"{target} resolves to {real}, outside {real_root}; fsdpcfg writes only inside it",
            value=str(target),
            fix="remove the link or the '..' that leads out of the folder",
        )
    return target


#: the file that makes a folder fsdpcfg's own: written when fsdpcfg first writes into a new or empty run folder
#: (or sweep folder); a folder that holds it takes fsdpcfg's files again (a resumed run, a later dry run).
OWNED_MARK = ".fsdpcfg-folder"
#: the lock file fsdpcfg keeps in a folder a run holds (:mod:`fsdpcfg.runinfo.lock`).
LOCK_FILE = ".fsdpcfg.lock"
#: the scratch file the disk probe writes and deletes (:func:`fsdpcfg.runinfo.faults.require_writable`).
WRITE_PROBE = ".fsdpcfg-write-probe"
#: the job log Hydra writes into a sweep job's folder before the job starts (``${hydra.job.name}.log``; fsdpcfg's
#: sweeps are the Hydra task ``fsdpcfg``: :class:`fsdpcfg.sweep._hydra.HydraLaunch`).
HYDRA_JOB_LOG = "fsdpcfg.log"
#: entries that do not make a folder someone else's: fsdpcfg's own bookkeeping, and the job record (``.hydra/``)
#: and job log Hydra's launcher writes into a sweep job's folder before the job starts.
_BOOKKEEPING = (OWNED_MARK, LOCK_FILE, ".hydra", HYDRA_JOB_LOG)
#: the rule whose message :class:`FolderNotOwned` carries (``fsdpcfg explain FC731``).
FOLDER_RULE = "FC731"


class FolderNotOwned(ConfigError):
    """A folder fsdpcfg was about to write its run files into holds files it did not write (exit code 1)."""


def _is_file(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()


def _first_json(path: Path) -> Any:
    """The JSON value of ``path``'s first line (``run_info.json`` is one object over many lines: the whole file),
    or ``None`` when it is not a file or not JSON."""
    import json

    if not _is_file(path):
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read(1 << 20)
        return json.loads(text if path.suffix == ".json" else text.split("\n", 1)[0])
    except (OSError, ValueError):
        return None


def _earlier_run_folder(folder: Path) -> bool:
    """True when ``folder`` is a run folder an fsdpcfg without :data:`OWNED_MARK` wrote: it holds fsdpcfg's lock
    file, a ``run_info.json`` with fsdpcfg's record (``overrides`` and ``provenance``), or a ``metrics.jsonl``
    of fsdpcfg's rows (``{"step": N, ...}``: ranks started without the launcher write no run_info.json) beside
    nothing a run would write over that is not fsdpcfg's: rows of ``{"step": N}`` are what many trackers write,
    so a folder of another tool's metrics and its own ``config.yaml`` is the user's (issue 22, D3: a run wrote
    over that config.yaml), and so is one holding any name a run does not write (:data:`RUN_FOLDER_NAMES`: a
    ``README.md``, a ``results.csv``). A run's ``config.yaml`` is a resolved config, with fsdpcfg's own
    ``fsdpcfg:`` section."""
    if _is_file(folder / LOCK_FILE):
        return True
    info = _first_json(folder / "run_info.json")
    if isinstance(info, dict) and "overrides" in info and "provenance" in info:
        return True
    row = _first_json(folder / "metrics.jsonl")
    if not (isinstance(row, dict) and isinstance(row.get("step"), int)):
        return False
    if (folder / "run_info.json").exists() or (folder / "overrides.yaml").exists():
        return False  # not fsdpcfg's record (above), or a file of that name fsdpcfg writes only beside one
    try:
        names = [e.name for e in os.scandir(folder)]
    except OSError:
        return False
    if any(not _a_run_writes(n) for n in names):  # a README.md, a results.csv: the folder is someone's
        return False
    config = folder / "config.yaml"
    return not config.exists() or _has_fsdpcfg_section(config)


#: the names a native run writes into its run folder (trackers' folders and files, logs, its picture): a folder
#: holding anything else was not written by fsdpcfg alone
RUN_FOLDER_NAMES = (
    "config.yaml",
    "metrics.jsonl",
    "metrics.discarded.jsonl",
    "tensorboard",
    "error.txt",
    "startup_audit.json",
    "curves.png",
    "wandb",
    "mlruns",
    "verl",
    "train.log",
    "result.json",
    "*.jsonl",
    "fault-rank*.log",
    "stack-rank*.log",
)


def _a_run_writes(name: str) -> bool:
    import fnmatch

    return (
        name in _BOOKKEEPING or name.startswith(WRITE_PROBE) or any(fnmatch.fnmatch(name, p) for p in RUN_FOLDER_NAMES)
    )


def _has_fsdpcfg_section(config: Path) -> bool:
    """True when the YAML file ``config`` (its first MiB) has a top-level ``fsdpcfg:`` mapping, as every config
    a run writes does."""
    if not _is_file(config):
        return False
    try:
        with open(config, encoding="utf-8", errors="replace") as fh:
            text = fh.read(1 << 20)
    except OSError:
        return False
    return any(line.rstrip() == "fsdpcfg:" for line in text.splitlines())


def foreign_entries(folder: str | os.PathLike) -> list[str]:
    """The names of the entries of ``folder`` that fsdpcfg did not write, sorted; ``[]`` when fsdpcfg may write
    its run files there: the folder does not exist, is empty, holds :data:`OWNED_MARK` (fsdpcfg made it its own),
    or is the run folder of an earlier fsdpcfg. Entries of fsdpcfg's own bookkeeping (its lock, its write probe)
    and Hydra's job record (``.hydra``) do not count."""
    p = Path(folder)
    if not p.is_dir():
        return []  # absent: created; a file in the way fails the mkdir with its own message
    if _is_file(p / OWNED_MARK) or _earlier_run_folder(p):
        return []
    try:
        names = sorted(e.name for e in os.scandir(p))
    except OSError:
        return []  # unreadable: the write that follows reports it (fsdpcfg.runinfo.faults)
    return [n for n in names if n not in _BOOKKEEPING and not n.startswith(WRITE_PROBE)]


def folder_not_owned(folder: str | os.PathLike, key: str, foreign: list[str]) -> FolderNotOwned:
    """The :class:`FolderNotOwned` error for ``folder`` (chosen by config ``key``) holding the ``foreign`` entries:
    names the folder, the key, the rule (:data:`FOLDER_RULE`), some of the entries and the fix."""
    shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
    where = Path(folder).absolute()
    return FolderNotOwned(
        f"[{FOLDER_RULE}] {where} holds files fsdpcfg did not write ({shown}); a run writes its own files there "
        "(config.yaml, run_info.json, overrides.yaml, metrics.jsonl, tensorboard/, ...) and would overwrite "
        "or mix with them, so fsdpcfg writes nothing into it",
        key=key,
        value=str(folder),
        fix=f"point {key} at a new or empty folder (e.g. {key}=runs/my_run), or move those files out of {where}",
    )


def check_folder(folder: str | os.PathLike, key: str) -> None:
    """Refuse ``folder`` as a run folder when it holds files fsdpcfg did not write (:func:`foreign_entries`);
    write nothing. A run checks its folders so before it locks them, and claims them (:func:`claim_folder`) once
    it holds the locks: a second run into a held folder writes nothing there.

    Raises:
        FolderNotOwned: ``folder`` holds files fsdpcfg did not write.
    """
    foreign = foreign_entries(folder)
    if foreign:
        raise folder_not_owned(folder, key, foreign)


def claim_folder(folder: str | os.PathLike, key: str) -> Path:
    """Make ``folder`` fsdpcfg's to write run files into: create it (and its parents) when absent and write
    :data:`OWNED_MARK` when it is new or empty; a folder already fsdpcfg's is left as it is. The one check before
    fsdpcfg writes into a run folder (:func:`owned`). Returns ``folder`` as a path.

    Raises:
        FolderNotOwned: ``folder`` holds files fsdpcfg did not write (``fsdpcfg.run_dir=.`` in a project folder,
            a user's folder with its own ``config.yaml``); nothing is written.
        OSError: the folder cannot be created or written (the callers report it as a write fault).
    """
    p = Path(folder)
    if _is_file(p / OWNED_MARK):
        return p
    check_folder(p, key)
    p.mkdir(parents=True, exist_ok=True)
    atomic_write_text(
        within(p, OWNED_MARK),
        "fsdpcfg writes its run files into this folder (it was new or empty when fsdpcfg took it).\n",
    )
    return p


def owned(folder: str | os.PathLike, *parts: str, key: str) -> Path:
    """``folder/parts...`` for fsdpcfg to write: ``folder`` claimed (:func:`claim_folder`, chosen by config
    ``key``) and the path inside it once links are resolved (:func:`within`). Every path fsdpcfg writes in a run
    folder or a sweep folder is built here.

    Raises:
        FolderNotOwned: ``folder`` holds files fsdpcfg did not write.
        PathEscape: the path resolves outside ``folder`` (a ``tensorboard`` link pointing elsewhere, ``..``).
    """
    claim_folder(folder, key)
    return within(folder, *parts)


def recipe_target(dest: str | os.PathLike, name: str) -> Path:
    """The recipe file a command that writes one (``cp``, ``import``) names with ``dest``: ``.yaml`` added when it has
    no YAML suffix. One place for what ``cp X DEST`` and ``import S -o DEST`` take.

    Raises:
        UsageError: ``dest`` names a folder (``.``, ``..``, ``/``, ``dir/``, an existing folder); the fix names
            ``dest/<name>.yaml``.
    """
    text = os.fspath(dest)
    p = Path(text).expanduser()
    if text.endswith(("/", os.sep)) or p.name in ("", ".", "..") or p.is_dir():
        raise UsageError(f"{text} is a folder, not a recipe file", fix=f"name the file in it: {p / (name + '.yaml')}")
    return p if p.suffix in (".yaml", ".yml") else p.with_name(p.name + ".yaml")


def atomic_write_text(
    path: str | os.PathLike, text: str, *, root: str | os.PathLike | None = None, mode: int | None = None
) -> Path:
    """Write ``text`` to ``path`` through a temporary file in the same folder, fsync it and rename it over
    ``path``, so a reader never sees half a file; the temporary file is removed when the write fails (a full
    disk leaves the old file in place, never a truncated one). With ``root``, ``path`` must lie inside it
    (:func:`within`); ``mode`` sets the permission bits. Returns ``path``. The one atomic writer of text (bytes:
    :func:`atomic_write_bytes`, which it calls): text that may hold config values goes through
    :func:`fsdpcfg.redact.write_private`, which scrubs it first.

    Raises:
        PathEscape: ``path`` lies outside ``root``.
        OSError: the folder cannot be written (full, read-only, no permission); nothing is left behind.
    """
    return atomic_write_bytes(path, text.encode(), root=root, mode=mode)


def atomic_write_bytes(
    path: str | os.PathLike, data: bytes, *, root: str | os.PathLike | None = None, mode: int | None = None
) -> Path:
    """:func:`atomic_write_text` for bytes (a PNG, a binary file): through a temporary file in the same folder,
    fsynced and renamed over ``path``; nothing is left behind when the write fails.

    Raises:
        PathEscape: ``path`` lies outside ``root``.
        OSError: the folder cannot be written.
    """
    path = Path(path)
    if root is not None:
        within(root, os.path.relpath(path, root))
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_folder(path.parent, missing_ok=True)
    return path


def fsync_file(path: str | os.PathLike) -> None:
    """Flush ``path``'s written bytes to the disk (``fsync``).

    Raises:
        OSError: the file cannot be opened or flushed.
    """
    with open(path, "rb") as fh:
        os.fsync(fh.fileno())


def fsync_folder(path: str | os.PathLike, *, missing_ok: bool = False) -> None:
    """Flush ``path``'s entries (the renames and new names in the folder) to the disk.

    Raises:
        OSError: the folder cannot be opened (unless ``missing_ok``) or flushed.
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        if missing_ok:
            return
        raise
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def publish_folder(tmp: str | os.PathLike, final: str | os.PathLike, old: str | os.PathLike) -> Path:
    """Put the complete folder ``tmp`` in place of ``final`` by renames, the one atomic folder publish: an
    existing ``final`` is first renamed to ``old`` (so a reader sees the old folder or the new one, never half
    of one), ``tmp`` is renamed to ``final``, the parent folder is flushed, then ``old`` is removed. ``tmp``,
    ``final`` and ``old`` lie in the same folder (one file system). Returns ``final``.

    Raises:
        OSError: a rename fails (``final`` is then as it was, or still at ``old``).
    """
    final = Path(final)
    moved = False
    if final.exists():
        os.replace(final, old)
        moved = True
    os.replace(tmp, final)
    fsync_folder(final.parent, missing_ok=True)
    if moved:
        shutil.rmtree(old, ignore_errors=True)
    return final

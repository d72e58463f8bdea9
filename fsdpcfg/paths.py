"""Where fsdpcfg finds its config tree, its shipped data and its built offline assets.

The config tree (``conf/``) and the recipes (``recipes/``) live at the top of the repository; an installed
(non-editable) package carries copies under ``fsdpcfg/_tree``. Offline assets that are built rather than
shipped (the tiny model checkpoints) go under ``$FSDPCFG_HOME`` (default ``~/.cache/fsdpcfg``).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from fsdpcfg import runkind
from fsdpcfg.errors import ConfigError

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


def atomic_write_text(
    path: str | os.PathLike, text: str, *, root: str | os.PathLike | None = None, mode: int | None = None
) -> Path:
    """Write ``text`` to ``path`` through a temporary file in the same folder, fsync it and rename it over
    ``path``, so a reader never sees half a file; the temporary file is removed when the write fails (a full
    disk leaves the old file in place, never a truncated one). With ``root``, ``path`` must lie inside it
    (:func:`within`); ``mode`` sets the permission bits. Returns ``path``. The one atomic writer: text that may
    hold config values goes through :func:`fsdpcfg.redact.write_private`, which scrubs it first.

    Raises:
        PathEscape: ``path`` lies outside ``root``.
        OSError: the folder cannot be written (full, read-only, no permission); nothing is left behind.
    """
    path = Path(path)
    if root is not None:
        within(root, os.path.relpath(path, root))
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "w") as fh:
            fh.write(text)
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

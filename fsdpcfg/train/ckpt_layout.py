"""Which checkpoint a run resumes from, read from the folder layout alone (no torch import, so the launcher can
check a resume before anything starts).

    <trainer.default_local_dir>/
        global_step_N/                      complete: MANIFEST.json present and every file it lists present
        global_step_N.tmp/                  a save in progress (or killed): never resumed from
        latest_checkpointed_iteration.txt   the last complete step (verl's name), replaced atomically

:mod:`fsdpcfg.train.checkpoint` writes this layout; the manifest is written last, after every shard is on
disk, and the folder is renamed from ``.tmp`` only afterwards, so a process killed at any point of a save
leaves either the previous complete checkpoint or the new one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fsdpcfg.errors import ConfigError

MANIFEST = "MANIFEST.json"
LATEST = "latest_checkpointed_iteration.txt"


def read_manifest(folder: str | Path) -> dict[str, Any] | None:
    """Return the parsed manifest of ``folder``, or ``None`` when it is missing or unreadable."""
    try:
        data = json.loads((Path(folder) / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def is_complete(folder: str | Path) -> bool:
    """True when ``folder`` holds a readable manifest (written last) and every file it lists (a checkpoint
    whose files were partly deleted, e.g. by a pruning that was killed, is not complete)."""
    manifest = read_manifest(folder)
    if manifest is None:
        return False
    sizes = manifest.get("sizes") or {}
    for f in manifest.get("files", []):
        p = Path(folder) / f
        if not p.is_file() or (f in sizes and p.stat().st_size != sizes[f]):
            return False
    return True


def complete_checkpoints(root: str | Path) -> list[Path]:
    """Complete ``global_step_N`` folders directly under ``root`` (real folders, not links), oldest first."""
    root = Path(root)
    if not root.is_dir():
        return []
    found = []
    for p in root.glob("global_step_*"):
        suffix = p.name[len("global_step_"):]
        if suffix.isdigit() and not p.is_symlink() and p.is_dir() and is_complete(p):
            found.append((int(suffix), p))
    return [p for _, p in sorted(found)]


def prunable(root: str | Path, keep: int) -> list[Path]:
    """The checkpoints ``trainer.max_actor_ckpt_to_keep=keep`` deletes: all but the newest ``keep`` complete
    ``global_step_N`` folders of this layout (a manifest whose ``step`` is N, a real folder directly inside
    ``root``), oldest first. Nothing else under ``root`` is ever a candidate (another tool's folders, a link, a
    ``global_step_N`` without this layout's manifest). Source: issue 14 item 5 (pruning followed a run folder
    moved outside its root by ``trainer.experiment_name=../../x``)."""
    from fsdpcfg.paths import PathEscape, within

    out = []
    for p in complete_checkpoints(root)[:-keep] if keep > 0 else []:
        try:
            within(root, p.name)
        except PathEscape:
            continue
        if (read_manifest(p) or {}).get("step") == int(p.name[len("global_step_"):]):
            out.append(p)
    return out


def find_resume_folder(trainer_cfg: dict) -> Path | None:
    """The checkpoint to resume from, by ``trainer.resume_mode``: ``disable`` -> none; ``auto`` -> the one
    ``latest_checkpointed_iteration.txt`` names under ``trainer.default_local_dir`` (else the newest complete
    one, else none); ``resume_path`` -> ``trainer.resume_from_path``.

    Raises:
        ConfigError: an unknown mode, or a ``resume_from_path`` that is not a complete checkpoint.
    """
    mode = trainer_cfg["resume_mode"]
    if mode == "disable":
        return None
    root = Path(trainer_cfg["default_local_dir"])
    if mode == "auto":
        latest = root / LATEST
        if latest.is_file():
            folder = root / f"global_step_{latest.read_text().strip()}"
            if is_complete(folder):
                return folder
        done = complete_checkpoints(root)
        return done[-1] if done else None
    if mode == "resume_path":
        path = trainer_cfg["resume_from_path"]
        if not path or not is_complete(Path(path)):
            raise ConfigError(f"{path!r} is not a complete checkpoint folder (global_step_N with {MANIFEST})",
                              key="trainer.resume_from_path", value=path,
                              fix="point it at a global_step_N folder the native loop wrote")
        return Path(path)
    raise ConfigError(f"unknown resume_mode {mode!r}; allowed: auto, disable, resume_path", key="trainer.resume_mode",
                      value=mode, fix="use auto, disable or resume_path")


def check_resume_world_size(trainer_cfg: dict, world_size: int) -> Path | None:
    """Refuse, before anything starts, to resume a checkpoint written by a different number of ranks (the
    optimizer is saved as one shard per rank). Returns the folder the run will resume from, or ``None``.

    Raises:
        ConfigError: the checkpoint's world size differs from ``world_size`` (both named), or what
            :func:`find_resume_folder` raises.
    """
    folder = find_resume_folder(trainer_cfg)
    if folder is None:
        return None
    saved = (read_manifest(folder) or {}).get("world_size")
    if saved is not None and int(saved) != int(world_size):
        raise ConfigError(f"trainer.resume_mode={trainer_cfg['resume_mode']} would resume {folder}, written by "
                          f"world size {saved}, but this run has world size {world_size} (its optimizer state is "
                          "one shard per rank)", key="trainer.n_gpus_per_node", value=world_size,
                          fix=f"resume with world size {saved} (trainer.nnodes x trainer.n_gpus_per_node), or set "
                              "trainer.resume_mode=disable (or another trainer.default_local_dir) to start over")
    return folder

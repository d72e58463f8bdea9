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
from typing import Any, Protocol

from fsdpcfg.errors import ConfigError


class TrainerCfg(Protocol):
    """The ``trainer`` section of a run of either kind, as far as resuming reads it (the schema's
    ``TrainerSection`` and ``SftTrainer`` both are one; a protocol, so this floor imports no schema)."""

    @property
    def resume_mode(self) -> str: ...  # auto | disable | resume_path

    @property
    def default_local_dir(self) -> str: ...

    @property
    def resume_from_path(self) -> str | None: ...


MANIFEST = "MANIFEST.json"
LATEST = "latest_checkpointed_iteration.txt"
#: ``global_step_N/trainer_state/``: trainer.pt (step, sampler, scheduler, RNG) and the DCP folder
STATE_DIR = "trainer_state"
#: ``trainer_state/dcp/``: sharded model and optimizer state written by ``torch.distributed.checkpoint``
DCP_DIR = "dcp"
#: ``global_step_N/lora_adapter/``: a LoRA run's PEFT adapter folder
ADAPTER_DIR = "lora_adapter"


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
        suffix = p.name[len("global_step_") :]
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
        if (read_manifest(p) or {}).get("step") == int(p.name[len("global_step_") :]):
            out.append(p)
    return out


def find_resume_folder(trainer_cfg: TrainerCfg) -> Path | None:
    """The checkpoint to resume from, by ``trainer.resume_mode``: ``disable`` -> none; ``auto`` -> the one
    ``latest_checkpointed_iteration.txt`` names under ``trainer.default_local_dir`` (else the newest complete
    one, else none); ``resume_path`` -> ``trainer.resume_from_path``.

    Raises:
        ConfigError: a ``resume_from_path`` that is not a complete checkpoint (the folder on disk).
    """
    mode = trainer_cfg.resume_mode
    if mode == "disable":
        return None
    root = Path(trainer_cfg.default_local_dir)
    if mode == "auto":
        latest = root / LATEST
        if latest.is_file():
            folder = root / f"global_step_{latest.read_text().strip()}"
            if is_complete(folder):
                return folder
        done = complete_checkpoints(root)
        return done[-1] if done else None
    path = trainer_cfg.resume_from_path  # resume_path: the schema's literal leaves no other mode
    if not path or not is_complete(Path(path)):
        raise ConfigError(
            f"{path!r} is not a complete checkpoint folder (global_step_N with {MANIFEST})",
            key="trainer.resume_from_path",
            value=path,
            fix="point it at a global_step_N folder the native loop wrote",
        )
    return Path(path)


def require_dcp_state(folder: str | Path) -> None:
    """Refuse a checkpoint without ``trainer_state/dcp/.metadata``: the layout before it kept one optimizer
    shard per rank (``trainer_state/optim_rank<r>.pt``), which only the same world size could read, and it is
    no longer read at all.

    Raises:
        ConfigError: naming the folder, ``trainer.resume_mode`` and the fixes (start over, or start from its
            Hugging Face weights).
    """
    folder = Path(folder)
    if not (folder / STATE_DIR / DCP_DIR / ".metadata").is_file():
        raise ConfigError(
            f"{folder} has no {STATE_DIR}/{DCP_DIR}/.metadata (sharded model and optimizer state, "
            "torch.distributed.checkpoint): it was written by an older fsdpcfg, whose optimizer "
            "state cannot be resumed",
            key="trainer.resume_mode",
            fix=f"set trainer.resume_mode=disable (or another trainer.default_local_dir) and start "
            f"from its weights with model.path={folder}",
        )


def check_resume_layout(trainer_cfg: TrainerCfg) -> Path | None:
    """Before anything starts: the folder the run will resume from (``None`` for none), refused when it cannot
    be resumed. Another world size or the other FSDP version (``fsdp`` / ``fsdp2``) is not refused: the state is
    resharded by ``torch.distributed.checkpoint`` (tests/train/test_dcp_resume.py).

    Raises:
        ConfigError: what :func:`find_resume_folder` or :func:`require_dcp_state` raises.
    """
    folder = find_resume_folder(trainer_cfg)
    if folder is not None:
        require_dcp_state(folder)
    return folder

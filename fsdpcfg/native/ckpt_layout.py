"""Which checkpoint a run resumes from, read from the folder layout alone (no torch import, so the launcher can
check a resume before anything starts).

    <trainer.default_local_dir>/
        global_step_N/                      complete: MANIFEST.json present and every file it lists present
        global_step_N.tmp/                  a save in progress (or killed): never resumed from
        latest_checkpointed_iteration.txt   the last complete step (verl's name), replaced atomically

The manifest lists every file with its size and CRC-32 (:func:`describe_files`); before a resume the folder is
read back against it (:func:`damage`). A run resumes from the newest ``global_step_N`` or stops naming what is
wrong with it, and it never starts below a step folder that exists, so it never writes over one
(:func:`check_resume_layout`; issue 22 item 2: a damaged latest checkpoint restarted the run from step 0, or from
an older one without a word, and the new saves replaced the newer work).

:mod:`fsdpcfg.train.checkpoint` writes this layout; the manifest is written last, after every shard is on
disk, and the folder is renamed from ``.tmp`` only afterwards, so a process killed at any point of a save
leaves either the previous complete checkpoint or the new one.
"""

from __future__ import annotations

import json
import zlib
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
    return [p for _, p in step_folders(root) if is_complete(p)]


def _step_entries(root: str | Path) -> list[tuple[int, Path]]:
    """``(N, entry)`` for every entry named ``global_step_N`` directly under ``root``, folders, links and files
    alike, by step."""
    root = Path(root)
    if not root.is_dir():
        return []
    found = []
    for p in root.glob("global_step_*"):
        suffix = p.name[len("global_step_") :]
        if suffix.isdigit():
            found.append((int(suffix), p))
    return sorted(found)


def step_folders(root: str | Path) -> list[tuple[int, Path]]:
    """``(N, folder)`` for every ``global_step_N`` directory directly under ``root`` (real folders, not links;
    ``.tmp``, ``.old`` and ``.deleting`` folders aside), by step."""
    return [(n, p) for n, p in _step_entries(root) if not p.is_symlink() and p.is_dir()]


#: the checksum the manifest records for each file (``checksums``): CRC-32 (zlib), read in 4 MiB chunks. It finds
#: truncation, flipped bytes and a file replaced by another; it is no defence against a forger.
CHECKSUM = "crc32"
_CHUNK = 1 << 22


def file_checksum(path: str | Path) -> str:
    """The CRC-32 of the file at ``path`` as 8 hex digits (reads the whole file, 4 MiB at a time)."""
    value = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            value = zlib.crc32(chunk, value)
    return f"{value:08x}"


#: the manifest's own CRC-32 (of its other entries as canonical JSON: sorted keys, no spaces), so that a byte
#: changed inside it (a file name, a size, a recorded checksum) is named as the manifest's damage, not as a file's
SELF_CHECKSUM = "manifest_crc32"


def _own_checksum(manifest: dict[str, Any]) -> str:
    body = {k: v for k, v in manifest.items() if k != SELF_CHECKSUM}
    return f"{zlib.crc32(json.dumps(body, sort_keys=True, separators=(',', ':')).encode()):08x}"


def seal(manifest: dict[str, Any]) -> dict[str, Any]:
    """``manifest`` with :data:`SELF_CHECKSUM` added (:func:`fsdpcfg.train.checkpoint.save_checkpoint` writes it
    so; :func:`damage` checks it). Its values must survive a JSON round trip (they are what is written)."""
    return {**{k: v for k, v in manifest.items() if k != SELF_CHECKSUM}, SELF_CHECKSUM: _own_checksum(manifest)}


def describe_files(folder: str | Path) -> dict[str, Any]:
    """The manifest's file entries for every file under ``folder`` (the manifest itself aside): ``files`` (paths
    relative to ``folder``, sorted), ``sizes`` (bytes), ``checksum`` (:data:`CHECKSUM`) and ``checksums``
    (:func:`file_checksum`). :func:`fsdpcfg.train.checkpoint.save_checkpoint` writes them; :func:`damage` reads
    them back."""
    folder = Path(folder)
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST)
    return {
        "files": files,
        "sizes": {f: (folder / f).stat().st_size for f in files},
        "checksum": CHECKSUM,
        "checksums": {f: file_checksum(folder / f) for f in files},
    }


def damage(folder: str | Path) -> list[tuple[str, str]]:
    """What is wrong with checkpoint ``folder``: ``(file, why)`` pairs, empty when it is intact. The manifest must
    be readable and list trainer state (:data:`STATE_DIR`); each file it lists must exist with its recorded size
    and CRC-32, every file of the folder must be listed, and the manifest must match its own
    :data:`SELF_CHECKSUM`. A manifest written before checksums
    were recorded is held to the sizes only. Reads every listed file (~0.3 s per GB from the page cache on this
    machine)."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    if manifest is None:
        why = "unreadable (truncated or not JSON)" if (folder / MANIFEST).is_file() else "missing"
        return [(MANIFEST, f"{why}: not a complete checkpoint of fsdpcfg's layout")]
    recorded = manifest.get(SELF_CHECKSUM)
    if recorded is not None and recorded != (now := _own_checksum(manifest)):
        return [(MANIFEST, f"contents changed (crc32 {now} of its entries, it records {recorded!r})")]
    files = [f for f in manifest.get("files") or [] if isinstance(f, str)]
    sizes = manifest.get("sizes") or {}
    sums = (manifest.get("checksums") or {}) if manifest.get("checksum") == CHECKSUM else {}
    out = []
    for f in files:
        p = folder / f
        if not p.is_file():
            out.append((f, "missing"))
        elif f in sizes and p.stat().st_size != sizes[f]:
            out.append((f, f"{p.stat().st_size} bytes, the manifest says {sizes[f]} (truncated or replaced)"))
        elif f in sums and (now := file_checksum(p)) != sums[f]:
            out.append((f, f"contents changed (crc32 {now}, the manifest says {sums[f]})"))
    listed = set(files)
    for p in sorted(folder.rglob("*")):  # the writer lists every file it wrote: one it does not list is not its
        rel = str(p.relative_to(folder))
        if p.is_file() and rel != MANIFEST and rel not in listed:
            out.append((rel, "not in the manifest (added later, or the manifest lost its entry)"))
    if not any(f.startswith(f"{STATE_DIR}/") for f in files):
        out.append((STATE_DIR, "the manifest lists no trainer state"))
    return out


def state_damage(problems: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The problems of :func:`damage` a resume cannot get past: all but those of the Hugging Face export (the
    files outside :data:`STATE_DIR`), which the resumed run writes again from the state."""
    return [(f, why) for f, why in problems if f in (MANIFEST, STATE_DIR) or f.startswith(f"{STATE_DIR}/")]


def export_damage(folder: str | Path) -> list[tuple[str, str]]:
    """The problems of :func:`damage` in the Hugging Face export of ``folder`` alone (the files a resume writes
    again); empty when the export is intact."""
    problems = damage(folder)
    return [p for p in problems if p not in state_damage(problems)]


def newer_step_folders(root: str | Path, start_step: int) -> list[Path]:
    """The ``global_step_N`` folders under ``root`` with ``N > start_step``: a run that starts at ``start_step``
    and saves into ``root`` would write over them."""
    return [p for n, p in step_folders(root) if n > start_step]


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


class DamagedCheckpoint(ConfigError):
    """The checkpoint a run would resume from does not match its manifest (:func:`damage`)."""


def _damaged(folder: Path, problems: list[tuple[str, str]], fix: str) -> DamagedCheckpoint:
    listed = "; ".join(f"{f}: {why}" for f, why in problems[:5])
    more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
    return DamagedCheckpoint(
        f"the checkpoint to resume, {folder}, is damaged: {listed}{more}", key="trainer.resume_mode", fix=fix
    )


def _tracked_step(root: Path) -> int | None:
    """The step ``latest_checkpointed_iteration.txt`` under ``root`` names (the last save that completed), or
    ``None`` when there is no such file or it holds no step number."""
    try:
        text = (root / LATEST).read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


def find_resume_folder(trainer_cfg: TrainerCfg, *, verify: bool = True) -> Path | None:
    """The checkpoint to resume from, by ``trainer.resume_mode``: ``disable`` -> none; ``auto`` -> the newest
    ``global_step_N`` folder under ``trainer.default_local_dir`` (none when there is none); ``resume_path`` ->
    ``trainer.resume_from_path``. With ``verify`` the folder is read back against its manifest (:func:`damage`):
    damage to the trainer state stops the run, naming each file and what is wrong; damage to the Hugging Face
    export alone does not (the resumed run writes it again). ``auto`` never falls back to an older checkpoint by
    itself: the error names the newest intact one for ``resume_path``; nor when the newest is gone
    (``latest_checkpointed_iteration.txt`` names a step whose folder is missing).

    Raises:
        DamagedCheckpoint: the folder's trainer state does not match its manifest (or it has none).
        ConfigError: ``latest_checkpointed_iteration.txt`` names a step newer than every folder left.
        ConfigError: a ``resume_from_path`` that is not a ``global_step_N`` folder with a manifest.
    """
    mode = trainer_cfg.resume_mode
    if mode == "disable":
        return None
    root = Path(trainer_cfg.default_local_dir)
    if mode == "auto":
        steps = step_folders(root)
        odd = [(n, p) for n, p in _step_entries(root) if (n, p) not in steps and (not steps or n > steps[-1][0])]
        if odd:  # a newer step that is a link or a file: resuming the older folder would pass it silently
            n, p = odd[-1]
            what = "a link" if p.is_symlink() else "not a folder"
            raise ConfigError(
                f"{p} is {what}: fsdpcfg resumes, prunes and writes checkpoint folders in place and does not follow "
                f"it, so an auto resume would pass step {n} by"
                + (f" and resume {steps[-1][1].name}" if steps else " and start over"),
                key="trainer.resume_mode",
                fix=f"move the real global_step_{n} folder into {root} (in place of the link), or resume a folder "
                "on purpose: trainer.resume_mode=resume_path trainer.resume_from_path=<its global_step_N>",
            )
        tracked = _tracked_step(root)
        if tracked is not None and (not steps or tracked > steps[-1][0]):
            # the newest checkpoint the run wrote is gone (deleted or moved): resuming what is left would redo
            # steps silently and write over nothing the user can see
            older = steps[-1][1] if steps else None
            raise ConfigError(
                f"{root / LATEST} names step {tracked}, but {root / f'global_step_{tracked}'} is missing "
                + (f"(the newest left is {older.name})" if older is not None else "(no checkpoint is left)"),
                key="trainer.resume_mode",
                fix=(
                    f"put global_step_{tracked} back, or resume the older one on purpose: "
                    f"trainer.resume_mode=resume_path trainer.resume_from_path={older}"
                    if older is not None
                    else f"put global_step_{tracked} back, or start over in another trainer.default_local_dir"
                ),
            )
        if not steps:
            return None
        newest = steps[-1][1]
        if verify and (bad := state_damage(damage(newest))):
            older = next((p for _, p in reversed(steps[:-1]) if not state_damage(damage(p))), None)
            fix = (
                f"move {newest.name} out of {root}, then resume the newest intact checkpoint with "
                f"trainer.resume_mode=resume_path trainer.resume_from_path={older}"
                if older is not None
                else f"move {newest} out of {root}, or start over in another trainer.default_local_dir"
            )
            raise _damaged(newest, bad, fix)
        return newest
    path = trainer_cfg.resume_from_path  # resume_path: the schema's literal leaves no other mode
    if not path or read_manifest(Path(path)) is None:
        raise ConfigError(
            f"{path!r} is not a complete checkpoint folder (global_step_N with {MANIFEST})",
            key="trainer.resume_from_path",
            value=path,
            fix="point it at a global_step_N folder the native loop wrote",
        )
    if verify and (bad := state_damage(damage(Path(path)))):
        raise _damaged(Path(path), bad, "point trainer.resume_from_path at another global_step_N folder")
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
            fix=f"start a new run from its weights: model.path={folder} with another trainer.default_local_dir "
            "(or a new trainer.experiment_name)",
        )


def check_resume_layout(trainer_cfg: TrainerCfg) -> Path | None:
    """Before anything starts: the folder the run will resume from (``None`` for none), refused when it cannot
    be resumed, and the run refused when it would write over a step folder of ``trainer.default_local_dir``
    newer than its start (``resume_mode=disable`` beside existing checkpoints, or a ``resume_from_path`` below
    the newest). Another world size or the other FSDP version (``fsdp`` / ``fsdp2``) is not refused: the state is
    resharded by ``torch.distributed.checkpoint`` (tests/train/test_dcp_resume.py).

    Raises:
        ConfigError: what :func:`find_resume_folder` or :func:`require_dcp_state` raises; a newer step folder the
            run would write over (named, with the fixes).
    """
    folder = find_resume_folder(trainer_cfg)
    start = 0
    if folder is not None:
        require_dcp_state(folder)
        step = (read_manifest(folder) or {}).get("step")
        start = step if isinstance(step, int) else 0
    newer = newer_step_folders(trainer_cfg.default_local_dir, start)
    if newer:
        names = ", ".join(p.name for p in newer[:5]) + (f" (and {len(newer) - 5} more)" if len(newer) > 5 else "")
        how = f"resumes step {start} of {folder}" if folder is not None else "starts at step 0"
        raise ConfigError(
            f"trainer.resume_mode={trainer_cfg.resume_mode} {how}, but {trainer_cfg.default_local_dir} already "
            f"holds {names}: the run's saves would write over them",
            key="trainer.default_local_dir",
            value=trainer_cfg.default_local_dir,
            fix="save into another folder (a new trainer.experiment_name or trainer.default_local_dir), move those "
            "folders away, or continue the newest with trainer.resume_mode=auto",
        )
    return folder

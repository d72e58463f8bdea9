"""Checkpoints of the native loop: ``trainer.default_local_dir/global_step_N/``, written atomically.

A checkpoint folder is a Hugging Face model folder (``config.json``, ``model.safetensors``, tokenizer files:
``AutoModelForCausalLM.from_pretrained(folder)`` loads it) plus ``trainer_state/`` for resuming: the trainer
state (step, sampler position, lr scheduler, RNG) and one optimizer shard per rank (resume needs the same world
size). Every rank writes into ``global_step_N.tmp``; rank 0 fsyncs, writes ``MANIFEST.json`` last and renames
the folder; then ``latest_checkpointed_iteration.txt`` (as verl names it) is replaced atomically. A folder
without a manifest is never resumed from.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import time
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from fsdpcfg.errors import ConfigError

MANIFEST = "MANIFEST.json"
LATEST = "latest_checkpointed_iteration.txt"
STATE_DIR = "trainer_state"


def _fsync_file(path: Path) -> None:
    with open(path, "rb") as fh:
        os.fsync(fh.fileno())


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file, fsync and rename (readers never see half a file)."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text)
    _fsync_file(tmp)
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _local_optimizer_state(optimizer: torch.optim.Optimizer) -> dict:
    from torch.distributed.tensor import DTensor

    sd = optimizer.state_dict()
    # the per-parameter dicts of state_dict() are the optimizer's live ones: build new ones, never mutate them
    sd["state"] = {idx: {k: (v.to_local().clone() if isinstance(v, DTensor) else v) for k, v in st.items()}
                   for idx, st in sd["state"].items()}
    return sd


def _restore_dtensor_state(optimizer: torch.optim.Optimizer) -> None:
    from torch.distributed.tensor import DTensor

    for group in optimizer.param_groups:
        for p in group["params"]:
            if not isinstance(p, DTensor):
                continue
            for k, v in list(optimizer.state.get(p, {}).items()):
                if torch.is_tensor(v) and not isinstance(v, DTensor) and v.dim() > 0:
                    optimizer.state[p][k] = DTensor.from_local(v, p.device_mesh, p.placements, shape=p.shape,
                                                               stride=p.stride())


def save_checkpoint(root: str | Path, step: int, *, full_weights, hf_config, tokenizer, optimizer,
                    generation_config=None, scheduler,
                    trainer_state: dict[str, Any], keep: int | None = None) -> Path | None:
    """Write ``root/global_step_<step>`` on all ranks together; return its path on rank 0 (``None`` elsewhere).

    Args:
        full_weights: an iterator of ``(hf_name, full_tensor)`` that every rank must consume (collective).
        hf_config, tokenizer, generation_config: saved with ``save_pretrained`` by rank 0 (the generation
            config only when given).
        optimizer, scheduler: this rank's optimizer shard and the lr scheduler.
        trainer_state: picklable dict (step, sampler state, ...); RNG states are added here.
        keep: keep at most this many checkpoints (``trainer.max_actor_ckpt_to_keep``); ``None`` keeps all.
    """
    from safetensors.torch import save_file

    rank = dist.get_rank()
    root = Path(root)
    final = root / f"global_step_{step}"
    tmp = root / f"global_step_{step}.tmp"
    if rank == 0:
        root.mkdir(parents=True, exist_ok=True)
        if tmp.exists():
            shutil.rmtree(tmp)
        (tmp / STATE_DIR).mkdir(parents=True)
    dist.barrier()
    weights: dict[str, torch.Tensor] = {}
    for name, tensor in full_weights:
        if rank == 0:
            weights[name] = tensor.detach().cpu().contiguous()
    torch.save(_local_optimizer_state(optimizer), tmp / STATE_DIR / f"optim_rank{rank}.pt")
    if rank == 0:
        save_file(weights, str(tmp / "model.safetensors"), metadata={"format": "pt"})
        hf_config.save_pretrained(tmp)
        if generation_config is not None:
            generation_config.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        state = dict(trainer_state, scheduler=scheduler.state_dict(), torch_rng=torch.get_rng_state(),
                     python_rng=random.getstate(), world_size=dist.get_world_size())
        torch.save(state, tmp / STATE_DIR / "trainer.pt")
    dist.barrier()
    if rank != 0:
        dist.barrier()
        return None
    files = sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*") if p.is_file())
    for f in files:
        _fsync_file(tmp / f)
    manifest = {"step": step, "world_size": dist.get_world_size(), "files": files, "time": time.time()}
    (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    _fsync_file(tmp / MANIFEST)
    _fsync_dir(tmp)
    if final.exists():
        old = root / f"global_step_{step}.old"
        os.replace(final, old)
        shutil.rmtree(old)
    os.replace(tmp, final)
    _fsync_dir(root)
    atomic_write_text(root / LATEST, f"{step}\n")
    if keep is not None and keep > 0:
        for old in complete_checkpoints(root)[:-keep]:
            shutil.rmtree(old, ignore_errors=True)
    dist.barrier()
    return final


def is_complete(folder: Path) -> bool:
    """True when ``folder`` holds a manifest (written last)."""
    return (Path(folder) / MANIFEST).is_file()


def complete_checkpoints(root: str | Path) -> list[Path]:
    """Complete ``global_step_N`` folders under ``root``, oldest first."""
    root = Path(root)
    if not root.is_dir():
        return []
    found = []
    for p in root.glob("global_step_*"):
        suffix = p.name[len("global_step_"):]
        if suffix.isdigit() and is_complete(p):
            found.append((int(suffix), p))
    return [p for _, p in sorted(found)]


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


def load_trainer_state(folder: Path, optimizer, scheduler) -> dict[str, Any]:
    """Restore this rank's optimizer shard, the scheduler and the RNG; return the trainer state dict.

    Raises:
        ConfigError: the checkpoint was written with a different world size.
    """
    state = torch.load(folder / STATE_DIR / "trainer.pt", weights_only=False)
    if state["world_size"] != dist.get_world_size():
        raise ConfigError(f"{folder} was written by {state['world_size']} ranks, this run has "
                          f"{dist.get_world_size()}", key="trainer.n_gpus_per_node",
                          fix="resume with the same world size, or trainer.resume_mode=disable")
    optim_sd = torch.load(folder / STATE_DIR / f"optim_rank{dist.get_rank()}.pt", weights_only=False)
    optimizer.load_state_dict(optim_sd)
    _restore_dtensor_state(optimizer)
    scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["torch_rng"])
    random.setstate(state["python_rng"])
    return state

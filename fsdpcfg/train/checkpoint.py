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
from fsdpcfg.paths import atomic_write_text, within
from fsdpcfg.runinfo.faults import writing
# the layout (which folder is complete, which one a run resumes from) is read without torch by the launcher
from fsdpcfg.train.ckpt_layout import (LATEST, MANIFEST, complete_checkpoints, find_resume_folder,  # noqa: F401
                                       is_complete, prunable)

#: the config key that chooses the checkpoint folder (named in write faults).
ROOT_KEY = "trainer.default_local_dir"

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
                    trainer_state: dict[str, Any], keep: int | None = None,
                    trained_from: dict[str, Any] | None = None) -> Path | None:
    """Write ``root/global_step_<step>`` on all ranks together; return its path on rank 0 (``None`` elsewhere).

    Args:
        full_weights: an iterator of ``(hf_name, full_tensor)`` that every rank must consume (collective).
        hf_config, tokenizer, generation_config: saved with ``save_pretrained`` by rank 0 (the generation
            config only when given).
        optimizer, scheduler: this rank's optimizer shard and the lr scheduler.
        trainer_state: picklable dict (step, sampler state, ...); RNG states are added here.
        keep: keep at most this many checkpoints (``trainer.max_actor_ckpt_to_keep``); ``None`` keeps all.
            Only folders :func:`fsdpcfg.train.ckpt_layout.prunable` recognises as this layout's are deleted.
        trained_from: what the run was trained from (:func:`fsdpcfg.train.ckpt_identity.identity`, rank 0),
            recorded in the manifest and compared when a run resumes.

    Raises:
        WriteFault: a file could not be written (full disk, read-only folder, no permission), naming it.
    """
    from safetensors.torch import save_file

    rank = dist.get_rank()
    root = Path(root)
    final = within(root, f"global_step_{step}")
    tmp = within(root, f"global_step_{step}.tmp")
    if rank == 0:
        with writing(tmp, ROOT_KEY):
            root.mkdir(parents=True, exist_ok=True)
            if tmp.exists():
                shutil.rmtree(tmp)
            (tmp / STATE_DIR).mkdir(parents=True)
    dist.barrier()
    weights: dict[str, torch.Tensor] = {}
    for name, tensor in full_weights:
        if rank == 0:
            weights[name] = tensor.detach().cpu().contiguous()
    shard = tmp / STATE_DIR / f"optim_rank{rank}.pt"
    with writing(shard, ROOT_KEY):
        torch.save(_local_optimizer_state(optimizer), shard)
    if rank == 0:
        with writing(tmp / "model.safetensors", ROOT_KEY):
            save_file(weights, str(tmp / "model.safetensors"), metadata={"format": "pt"})
        with writing(tmp / "config.json", ROOT_KEY):
            hf_config.save_pretrained(tmp)
            if generation_config is not None:
                generation_config.save_pretrained(tmp)
        with writing(tmp / "tokenizer_config.json", ROOT_KEY):
            tokenizer.save_pretrained(tmp)
        state = dict(trainer_state, scheduler=scheduler.state_dict(), torch_rng=torch.get_rng_state(),
                     python_rng=random.getstate(), world_size=dist.get_world_size())
        with writing(tmp / STATE_DIR / "trainer.pt", ROOT_KEY):
            torch.save(state, tmp / STATE_DIR / "trainer.pt")
    dist.barrier()
    if rank != 0:
        dist.barrier()
        return None
    files = sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*") if p.is_file())
    with writing(tmp / MANIFEST, ROOT_KEY):
        for f in files:
            _fsync_file(tmp / f)
        _test_pause_in_save(step)
        manifest = {"step": step, "world_size": dist.get_world_size(), "files": files,
                    "sizes": {f: (tmp / f).stat().st_size for f in files}, "time": time.time()}
        if trained_from is not None:
            manifest["trained_from"] = trained_from
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
        _fsync_file(tmp / MANIFEST)
        _fsync_dir(tmp)
        if final.exists():
            old = within(root, f"global_step_{step}.old")
            os.replace(final, old)
            shutil.rmtree(old)
        os.replace(tmp, final)
        _fsync_dir(root)
    with writing(root / LATEST, ROOT_KEY):
        atomic_write_text(within(root, LATEST), f"{step}\n")
    if keep is not None and keep > 0:
        for old in prunable(root, keep):
            # rename first: a pruning killed half-way must not leave a global_step_N with a manifest but no weights
            trash = within(root, old.name + ".deleting")
            os.replace(old, trash)
            shutil.rmtree(trash, ignore_errors=True)
    dist.barrier()
    return final


def _test_pause_in_save(step: int) -> None:
    """Test hook: ``$FSDPCFG_TEST_SAVE_PAUSE="STEP:SECONDS"`` makes rank 0 sleep SECONDS in the save of step STEP,
    after every shard is written and before the manifest (tests/train/test_kill_during_save.py kills it there)."""
    spec = os.environ.get("FSDPCFG_TEST_SAVE_PAUSE", "")
    if spec and int(spec.split(":")[0]) == step:
        print(f"fsdpcfg: test hook: pausing {spec.split(':')[1]} s inside the save of step {step}", flush=True)
        time.sleep(float(spec.split(":")[1]))


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

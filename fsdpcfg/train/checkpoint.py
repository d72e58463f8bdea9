"""Checkpoints of the native loop: ``trainer.default_local_dir/global_step_N/``, written atomically.

A checkpoint folder holds, side by side:

* a Hugging Face model folder (``config.json``, ``model.safetensors`` -- or ``model-0000i-of-0000n.safetensors``
  with ``model.safetensors.index.json`` past :data:`HF_MAX_SHARD_SIZE`, as ``save_pretrained`` writes them --,
  tokenizer files, a model card ``README.md``): ``AutoModelForCausalLM.from_pretrained(folder)`` loads it. For a
  LoRA run the weights are the merged ones (``W + s B A``) and ``lora_adapter/`` holds the PEFT adapter
  (``adapter_config.json``, ``adapter_model.safetensors``: ``PeftModel.from_pretrained(base, folder/"lora_adapter")``);
* ``trainer_state/dcp/``: the sharded model and optimizer state through ``torch.distributed.checkpoint``
  (``get_state_dict`` / ``set_state_dict``, keyed by parameter name, so a run resumes on another number of ranks
  or with the other FSDP version); frozen parameters (a LoRA run's base) are not in it, they are read again
  from ``model.path``;
* ``trainer_state/trainer.pt``: step, sampler position, lr scheduler, RNG (rank 0's).

Every rank writes into ``global_step_N.tmp``; rank 0 fsyncs, writes ``MANIFEST.json`` last and renames the
folder; then ``latest_checkpointed_iteration.txt`` (as verl names it) is replaced atomically. A folder without a
manifest is never resumed from. The manifest records each file's size and CRC-32, read back before a resume
(:func:`fsdpcfg.native.ckpt_layout.damage`).
"""

from __future__ import annotations

import datetime
import json
import os
import random
import shutil
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
import torch.distributed as dist

from fsdpcfg import runkind
from fsdpcfg.paths import atomic_write_text, fsync_file, fsync_folder, publish_folder, within
from fsdpcfg.runinfo.faults import writing

if TYPE_CHECKING:
    from fsdpcfg.runinfo.ckpt_identity import AnyRunConfig

# the layout (which folder is complete, which one a run resumes from) is read without torch by the launcher
from fsdpcfg.native.ckpt_layout import (  # noqa: F401
    ADAPTER_DIR,
    DCP_DIR,
    LATEST,
    MANIFEST,
    STATE_DIR,
    complete_checkpoints,
    describe_files,
    find_resume_folder,
    is_complete,
    prunable,
    seal,
)

#: the config key that chooses the checkpoint folder (named in write faults).
ROOT_KEY = "trainer.default_local_dir"

#: the largest safetensors file of the Hugging Face export; past it the weights are split with an index, as
#: ``transformers.PreTrainedModel.save_pretrained(max_shard_size="5GB")`` (its default) does.
HF_MAX_SHARD_SIZE = "5GB"


def _dcp_options(load: bool = False):
    from torch.distributed.checkpoint.state_dict import StateDictOptions

    # sharded (DTensor / ShardedTensor) state keyed by parameter name; frozen weights (a LoRA base) are left out.
    # Loading is not strict about those frozen weights only: dcp.load has already refused a checkpoint that lacks
    # any key of the state asked for (every trainable parameter and buffer, every optimizer state)
    return StateDictOptions(ignore_frozen_params=True, strict=not load)


def _unwrap_dcp(fn, *args, **kwargs):
    """Call ``dcp.save`` / ``dcp.load``; a failure comes back as the exception of this rank (else the first
    failing rank's), not ``CheckpointException``, which is a ``BaseException`` gathering every rank's: so a full
    disk or a read-only folder is read as a write fault by :func:`fsdpcfg.runinfo.faults.writing`."""
    from torch.distributed.checkpoint.api import CheckpointException

    try:
        return fn(*args, **kwargs)
    except CheckpointException as e:
        failures = e.failures or {}
        first = failures.get(dist.get_rank()) or next(iter(failures.values()), None)
        if first is None:
            raise
        raise first[0] from e


def _dcp_state(model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    from torch.distributed.checkpoint.state_dict import get_state_dict

    msd, osd = get_state_dict(model, optimizer, options=_dcp_options())
    return {"model": msd, "optim": osd}


def save_checkpoint(
    root: str | Path,
    step: int,
    *,
    model: torch.nn.Module,
    full_weights,
    hf_config,
    tokenizer,
    optimizer,
    scheduler,
    trainer_state: dict[str, Any],
    generation_config=None,
    keep: int | None = None,
    trained_from: dict[str, Any] | None = None,
    adapter: tuple[Any, Iterable[tuple[str, torch.Tensor]]] | None = None,
    card: dict[str, Any] | None = None,
    max_shard_size: str | int = HF_MAX_SHARD_SIZE,
) -> Path | None:
    """Write ``root/global_step_<step>`` on all ranks together; return its path on rank 0 (``None`` elsewhere).

    Args:
        model, optimizer: the sharded (FSDP1 or FSDP2) module and its optimizer; their state goes to
            ``trainer_state/dcp`` through ``torch.distributed.checkpoint`` (collective).
        full_weights: an iterator of ``(hf_name, full_tensor)`` that every rank must consume (collective); rank 0
            writes it as the Hugging Face export, split past ``max_shard_size`` (bytes, or a string like ``"5GB"``).
        hf_config, tokenizer, generation_config: saved with ``save_pretrained`` by rank 0 (the generation
            config only when given).
        scheduler: the lr scheduler.
        trainer_state: picklable dict (step, sampler state, ...); RNG states are added here.
        keep: keep at most this many checkpoints (``trainer.max_actor_ckpt_to_keep``); ``None`` keeps all.
            Only folders :func:`fsdpcfg.native.ckpt_layout.prunable` recognises as this layout's are deleted.
        trained_from: what the run was trained from (:func:`fsdpcfg.runinfo.ckpt_identity.identity`, rank 0),
            recorded in the manifest and compared when a run resumes.
        adapter: for a LoRA run, ``(peft.LoraConfig, iterator of (adapter_file_key, full_tensor))`` (the iterator
            is collective): written to ``lora_adapter/`` as PEFT's ``save_pretrained`` lays it out.
        card: what the model card states (:func:`fsdpcfg.train.model_card.write_model_card` arguments).

    Raises:
        WriteFault: a file could not be written (full disk, read-only folder, no permission), naming it.
    """
    rank = dist.get_rank()
    root = Path(root)
    final = within(root, f"global_step_{step}")
    tmp = within(root, f"global_step_{step}.tmp")
    if rank == 0:
        with writing(tmp, ROOT_KEY):
            root.mkdir(parents=True, exist_ok=True)
            if tmp.exists():
                shutil.rmtree(tmp)
            (tmp / STATE_DIR / DCP_DIR).mkdir(parents=True)
    dist.barrier()
    import torch.distributed.checkpoint as dcp

    with writing(tmp / STATE_DIR / DCP_DIR, ROOT_KEY):
        _unwrap_dcp(dcp.save, _dcp_state(model, optimizer), checkpoint_id=str(tmp / STATE_DIR / DCP_DIR))
    weights: dict[str, torch.Tensor] = {}
    for name, tensor in full_weights:
        if rank == 0:
            weights[name] = tensor.detach().cpu().contiguous()
    adapter_weights: dict[str, torch.Tensor] = {}
    if adapter is not None:
        for name, tensor in adapter[1]:
            if rank == 0:
                adapter_weights[name] = tensor.detach().cpu().contiguous()
    if rank == 0:
        _write_hf_export(tmp, weights, hf_config, tokenizer, generation_config, max_shard_size)
        if adapter is not None:
            _write_adapter(tmp / ADAPTER_DIR, adapter[0], adapter_weights)
        if card is not None:
            from fsdpcfg.train.model_card import write_model_card

            with writing(tmp / "README.md", ROOT_KEY):
                write_model_card(tmp / "README.md", step=step, **card)
        state = dict(
            trainer_state,
            scheduler=scheduler.state_dict(),
            torch_rng=torch.get_rng_state(),
            python_rng=random.getstate(),
            world_size=dist.get_world_size(),
        )
        with writing(tmp / STATE_DIR / "trainer.pt", ROOT_KEY):
            torch.save(state, tmp / STATE_DIR / "trainer.pt")
    dist.barrier()
    if rank != 0:
        dist.barrier()
        return None
    with writing(tmp / MANIFEST, ROOT_KEY):
        entries = describe_files(tmp)  # every file with its size and CRC-32
        files = entries["files"]
        for f in files:
            fsync_file(tmp / f)
        _test_pause_in_save(step)
        manifest = {
            "step": step,
            "world_size": dist.get_world_size(),
            **entries,
            "time": time.time(),
            "state_format": "torch.distributed.checkpoint",
        }
        if trained_from is not None:
            manifest["trained_from"] = trained_from
        (tmp / MANIFEST).write_text(json.dumps(seal(manifest), indent=2) + "\n")
        fsync_file(tmp / MANIFEST)
        for d in {(tmp / f).parent for f in files} | {tmp}:
            fsync_folder(d)
        publish_folder(tmp, final, within(root, f"global_step_{step}.old"))
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


def _write_hf_export(
    folder: Path, weights: dict[str, torch.Tensor], hf_config, tokenizer, generation_config, max_shard_size: str | int
) -> None:
    """Rank 0: the Hugging Face folder (weights through ``huggingface_hub.save_torch_state_dict``, the writer
    ``transformers`` uses: one ``model.safetensors``, or shards named ``model-0000i-of-0000n.safetensors`` and
    ``model.safetensors.index.json`` past ``max_shard_size``)."""
    from huggingface_hub import save_torch_state_dict

    with writing(folder / "model.safetensors", ROOT_KEY):
        save_torch_state_dict(
            weights, folder, max_shard_size=max_shard_size, metadata={"format": "pt"}, safe_serialization=True
        )
    with writing(folder / "config.json", ROOT_KEY):
        hf_config.save_pretrained(folder)
        if generation_config is not None:
            generation_config.save_pretrained(folder)
    with writing(folder / "tokenizer_config.json", ROOT_KEY):
        tokenizer.save_pretrained(folder)


def _write_adapter(folder: Path, lora_config, weights: dict[str, torch.Tensor]) -> None:
    """Rank 0: PEFT's adapter folder (``adapter_config.json``, ``adapter_model.safetensors`` keyed as PEFT's
    ``save_pretrained`` keys them: ``base_model.model.<module>.lora_A.weight``, no adapter name)."""
    from safetensors.torch import save_file

    with writing(folder / "adapter_model.safetensors", ROOT_KEY):
        folder.mkdir(parents=True, exist_ok=True)
        save_file(weights, str(folder / "adapter_model.safetensors"), metadata={"format": "pt"})
    with writing(folder / "adapter_config.json", ROOT_KEY):
        lora_config.save_pretrained(str(folder))


def _test_pause_in_save(step: int) -> None:
    """Test hook: ``$FSDPCFG_TEST_SAVE_PAUSE="STEP:SECONDS"`` makes rank 0 sleep SECONDS in the save of step STEP,
    after every shard is written and before the manifest (tests/train/test_resume_equivalence.py kills it there)."""
    spec = os.environ.get("FSDPCFG_TEST_SAVE_PAUSE", "")
    if spec and int(spec.split(":")[0]) == step:
        print(f"fsdpcfg: test hook: pausing {spec.split(':')[1]} s inside the save of step {step}", flush=True)
        time.sleep(float(spec.split(":")[1]))


def load_checkpoint(
    folder: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer, scheduler
) -> dict[str, Any]:
    """Restore the sharded model and optimizer state (``trainer_state/dcp``, resharded to this run's ranks and
    FSDP version by ``torch.distributed.checkpoint``), the scheduler and the RNG (collective); return the trainer
    state dict (``step``, ``sampler``, ``world_size`` of the run that wrote it, ...).

    Call it after the model is sharded and the optimizer built, before the first step. Frozen parameters (a LoRA
    base) are not restored: the model must have read them from the same ``model.path``.

    Raises:
        ConfigError: the folder has no ``trainer_state/dcp`` (written by the layout before it, one optimizer
            shard per rank), naming the fix.
    """
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import set_state_dict

    from fsdpcfg.native.ckpt_layout import require_dcp_state

    require_dcp_state(folder)
    state = _dcp_state(model, optimizer)
    _unwrap_dcp(dcp.load, state, checkpoint_id=str(folder / STATE_DIR / DCP_DIR))
    set_state_dict(
        model,
        optimizer,
        model_state_dict=state["model"],
        optim_state_dict=state["optim"],
        options=_dcp_options(load=True),
    )
    trainer = torch.load(folder / STATE_DIR / "trainer.pt", weights_only=False)
    scheduler.load_state_dict(trainer["scheduler"])
    torch.set_rng_state(trainer["torch_rng"])
    random.setstate(trainer["python_rng"])
    return trainer


def card_facts(cfg: AnyRunConfig, base_model: str, metrics: dict[str, float] | None) -> dict[str, Any]:
    """What :func:`save_checkpoint` puts in the model card: the base model path, the experiment, the run folder
    (whose ``config.yaml`` is the resolved config it was trained with), the date, the fsdpcfg version and the
    last logged metrics (``metrics``; ``None`` before the first step)."""
    import fsdpcfg

    return {
        "base_model": str(base_model),
        "project": cfg.trainer.project_name,
        "experiment": cfg.trainer.experiment_name,
        "kind": runkind.of(cfg).trainer,
        "run_dir": cfg.fsdpcfg.run_dir,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "version": fsdpcfg.__version__,
        "metrics": dict(metrics or {}),
    }

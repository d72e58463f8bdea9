"""The batch arithmetic of an SFT run (pure Python, no torch): what ``fsdpcfg check`` prints and the trainer uses.

verl 0.9.1's SFT trainer (``verl/trainer/sft_trainer.py``): ``data.train_batch_size`` sequences per optimizer
step over all ranks; each data-parallel rank takes ``train_batch_size / dp`` of them and runs micro-batches of
``data.micro_batch_size_per_gpu`` (gradient accumulation ``= per_rank / micro``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fsdpcfg.errors import ConfigError
from fsdpcfg.plan._plan import Described, config_value, positive_int

_HINT = "compose the config with `python -m fsdpcfg +recipe=qwen_sft` (conf/sft/config.yaml lists the key)"


def _get(cfg: dict, key: str) -> Any:
    return config_value(cfg, key, _HINT)


def _pos_int(cfg: dict, key: str) -> int:
    return positive_int(cfg, key, _HINT)


@dataclass
class SftPlan(Described):
    """What a native SFT run does (sizes count sequences).

    Attributes:
        nnodes, nproc_per_node, world_size: torchrun's layout; device: ``cpu``/``cuda``; backend: gloo/nccl.
        strategy: ``fsdp`` or ``fsdp2`` (``engine.strategy``).
        train_batch_size: sequences per optimizer step over all ranks (``data.train_batch_size``).
        batch_per_rank: ``train_batch_size / world_size``.
        micro_batch_per_rank: ``data.micro_batch_size_per_gpu``; grad_accum: ``batch_per_rank / micro``.
        derivations: human-readable derivation of each number.
    """

    nnodes: int
    nproc_per_node: int
    world_size: int
    device: str
    backend: str
    strategy: str
    train_batch_size: int
    batch_per_rank: int
    micro_batch_per_rank: int
    grad_accum: int
    derivations: dict[str, str] = field(default_factory=dict)


def make_sft_plan(cfg: dict) -> SftPlan:
    """Derive the :class:`SftPlan` of a resolved SFT config (nested dicts, verl's sft_trainer_engine names).

    Raises:
        ConfigError: a batch size that does not divide (numbers in the message), a missing key, an unknown
            device, ``use_dynamic_bsz`` or Ulysses (not implemented by the native trainer).
    """
    nnodes, nproc = _pos_int(cfg, "trainer.nnodes"), _pos_int(cfg, "trainer.n_gpus_per_node")
    world = nnodes * nproc
    device = _get(cfg, "trainer.device")
    if device not in ("cpu", "cuda"):
        raise ConfigError(
            f"unknown device {device!r}; allowed: cpu, cuda",
            key="trainer.device",
            value=device,
            fix="set trainer.device=cpu (gloo) or cuda (NCCL)",
        )
    if _get(cfg, "data.use_dynamic_bsz"):
        raise ConfigError(
            "token-budget micro-batches are implemented by launcher=verl, not by the native SFT trainer",
            key="data.use_dynamic_bsz",
            value=True,
            fix="set data.use_dynamic_bsz=false, or launcher=verl",
        )
    if _get(cfg, "engine.ulysses_sequence_parallel_size") != 1:
        raise ConfigError(
            "Ulysses sequence parallelism is implemented by launcher=verl, not by the native trainer",
            key="engine.ulysses_sequence_parallel_size",
            value=_get(cfg, "engine.ulysses_sequence_parallel_size"),
            fix="set engine.ulysses_sequence_parallel_size=1, or launcher=verl",
        )
    tbs = _pos_int(cfg, "data.train_batch_size")
    micro = _pos_int(cfg, "data.micro_batch_size_per_gpu")
    d = {
        "world_size": f"{world} = trainer.nnodes {nnodes} x trainer.n_gpus_per_node {nproc}",
        "backend": f"{'gloo' if device == 'cpu' else 'nccl'} (trainer.device={device})",
    }
    if tbs % world:
        raise ConfigError(
            f"data.train_batch_size {tbs} does not split over {world} ranks",
            key="data.train_batch_size",
            value=tbs,
            fix=f"make data.train_batch_size a multiple of {world}",
        )
    per = tbs // world
    d["batch_per_rank"] = f"{per} = data.train_batch_size {tbs} / world {world}"
    if per % micro:
        raise ConfigError(
            f"{d['batch_per_rank']} is not a multiple of data.micro_batch_size_per_gpu {micro}",
            key="data.micro_batch_size_per_gpu",
            value=micro,
            fix=f"choose a divisor of {per}",
        )
    d["grad_accum"] = f"{per // micro} = batch_per_rank {per} / data.micro_batch_size_per_gpu {micro}"
    return SftPlan(
        nnodes=nnodes,
        nproc_per_node=nproc,
        world_size=world,
        device=device,
        backend="gloo" if device == "cpu" else "nccl",
        strategy=_get(cfg, "engine.strategy"),
        train_batch_size=tbs,
        batch_per_rank=per,
        micro_batch_per_rank=micro,
        grad_accum=per // micro,
        derivations=d,
    )


def total_sft_steps(cfg: dict, num_rows: int) -> int:
    """``trainer.total_training_steps`` when set, else ``trainer.total_epochs x (num_rows // train_batch_size)``.

    Raises:
        ConfigError: fewer rows than one batch.
    """
    steps = _get(cfg, "trainer.total_training_steps")
    if steps is not None:
        return _pos_int(cfg, "trainer.total_training_steps")
    tbs = _pos_int(cfg, "data.train_batch_size")
    if num_rows < tbs:
        raise ConfigError(
            f"the training set has {num_rows} conversations, fewer than one batch of {tbs}",
            key="data.train_batch_size",
            value=tbs,
            fix="lower data.train_batch_size or add data",
        )
    return _pos_int(cfg, "trainer.total_epochs") * (num_rows // tbs)

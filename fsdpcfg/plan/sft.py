"""The batch arithmetic of an SFT run (pure Python, no torch): what ``fsdpcfg check`` prints and the trainer uses.

verl 0.9.1's SFT trainer (``verl/trainer/sft_trainer.py``): ``data.train_batch_size`` sequences per optimizer
step over all ranks; each data-parallel rank takes ``train_batch_size / dp`` of them and runs micro-batches of
``data.micro_batch_size_per_gpu`` (gradient accumulation ``= per_rank / micro``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from fsdpcfg import runkind
from fsdpcfg.errors import ConfigError
from fsdpcfg.plan._plan import Described, Tree, as_tree, config_value, positive_int

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
    kind: ClassVar[str] = runkind.SFT.name


#: the rules that decide whether an SFT config can be planned (:func:`fsdpcfg.rules.gate.require`): the SFT
#: schema's types and values, the batch split, what the native SFT trainer runs.
SFT_PLAN_RULES = ("FC150", "FC250", "FC251", "FC252")


def make_sft_plan(cfg: Tree) -> SftPlan:
    """Derive the :class:`SftPlan` of a resolved SFT config (nested dicts, verl's sft_trainer_engine names, or the
    typed :class:`fsdpcfg.schema.sft.SftRunConfig`).

    The rules decide whether the config can run (:data:`SFT_PLAN_RULES`, the functions ``fsdpcfg check``
    runs); the plan only derives the numbers.

    Raises:
        ConfigError: the first error of :data:`SFT_PLAN_RULES` (a batch size that does not divide, with the
            numbers; an unknown device; ``use_dynamic_bsz`` or Ulysses under the native trainer), a missing key.
    """
    from fsdpcfg.rules import gate

    cfg = as_tree(cfg)
    gate.require(cfg, SFT_PLAN_RULES, kind="sft")
    nnodes, nproc = _pos_int(cfg, "trainer.nnodes"), _pos_int(cfg, "trainer.n_gpus_per_node")
    world = nnodes * nproc
    device = _get(cfg, "trainer.device")
    tbs = _pos_int(cfg, "data.train_batch_size")
    micro = _pos_int(cfg, "data.micro_batch_size_per_gpu")
    per = tbs // world
    d = {
        "world_size": f"{world} = trainer.nnodes {nnodes} x trainer.n_gpus_per_node {nproc}",
        "backend": f"{'gloo' if device == 'cpu' else 'nccl'} (trainer.device={device})",
        "batch_per_rank": f"{per} = data.train_batch_size {tbs} / world {world}",
    }
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


def total_sft_steps(cfg: Tree, num_rows: int) -> int:
    """``trainer.total_training_steps`` when set, else ``trainer.total_epochs x (num_rows // train_batch_size)``.

    Raises:
        ConfigError: fewer rows than one batch.
    """
    cfg = as_tree(cfg)
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

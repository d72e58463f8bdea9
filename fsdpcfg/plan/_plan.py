"""Derive a run's plan from the resolved config: world size, backend, per-rank batch sizes.

Batch arithmetic follows verl 0.9.1 (``verl/workers/config/actor.py``, ``verl/trainer/ppo/ray_trainer.py``):

- one training step consumes ``data.train_batch_size`` prompts x ``rollout.n`` samples = ``sequences_per_step``;
- ``actor.ppo_mini_batch_size`` counts prompts; one mini-batch is ``ppo_mini_batch_size x n`` sequences, split
  over the data-parallel ranks, so each rank holds ``mini_batch_per_rank`` sequences of it;
- each mini-batch is one optimizer step, so a training step makes
  ``train_batch_size / ppo_mini_batch_size x ppo_epochs`` optimizer steps;
- ``ppo_micro_batch_size_per_gpu`` sequences go through one forward/backward; gradient accumulation is
  ``mini_batch_per_rank / ppo_micro_batch_size_per_gpu`` micro-batches per optimizer step.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Union

from fsdpcfg import runkind
from fsdpcfg.errors import ConfigError

if TYPE_CHECKING:
    from pydantic import BaseModel

_MISSING = object()

#: a config the planner reads: the resolved config as nested dicts (``fsdpcfg check``, which plans configs that
#: may not validate) or a typed model (the trainers: :func:`fsdpcfg.schema.parse_config`)
Tree = Union[dict, "BaseModel"]


def as_tree(cfg: Tree) -> dict:
    """The nested dicts the planner reads: ``cfg`` itself, or a typed model's fields (``model_dump``: every
    field, defaults filled in), so that one planner serves both."""
    if isinstance(cfg, dict):
        return cfg
    return cfg.model_dump()


_COMPOSE_HINT = "compose the config with `python -m fsdpcfg` (conf/config.yaml lists the key)"


def config_value(cfg: dict, key: str, hint: str = _COMPOSE_HINT) -> Any:
    """Return the value of dotted ``key`` in the nested dict ``cfg``.

    Raises:
        ConfigError: the key is missing (``hint`` is the fix shown).
    """
    from fsdpcfg import keypath

    node = keypath.get(cfg, key, _MISSING)
    if node is _MISSING:
        raise ConfigError("is missing from the config", key=key, fix=hint)
    return node


def positive_int(cfg: dict, key: str, hint: str = _COMPOSE_HINT) -> int:
    """Return the value of ``key`` when it is an integer > 0 (booleans are not integers here).

    Raises:
        ConfigError: the key is missing or its value is not a positive integer.
    """
    v = config_value(cfg, key, hint)
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise ConfigError(f"must be a positive integer, got {v!r}", key=key, value=v, fix=f"set {key}=<int > 0>")
    return v


_get = config_value
_pos_int = positive_int


class Described:
    """What every plan offers: its fields as a dict and its ``derivations`` as lines for people, and the run kind
    it plans (``kind``, a :mod:`fsdpcfg.runkind` name) with the trainer module torchrun runs for it (``entry``)."""

    derivations: dict[str, str]
    kind: ClassVar[str] = runkind.DEFAULT

    @property
    def entry(self) -> str:
        """The module ``torchrun ... -m <entry> <config.yaml>`` runs on every rank (:attr:`fsdpcfg.runkind.
        RunKind.entry` of this plan's kind)."""
        return runkind.get(self.kind).entry

    def to_dict(self) -> dict[str, Any]:
        """Return the plan as a plain dict (for JSON/YAML output)."""
        return asdict(self)  # type: ignore[call-overload]

    def describe(self) -> str:
        """Return a few lines a person reads before a run starts (``name: value = derivation``)."""
        return "\n".join(f"  {k}: {v}" for k, v in self.derivations.items())


@dataclass
class Plan(Described):
    """What a native run does, derived from the config (all sizes count sequences unless named ``prompts``).

    Attributes:
        nnodes, nproc_per_node, world_size: torchrun's layout; ``world_size = nnodes x nproc_per_node``.
        device: ``cpu`` or ``cuda`` (``trainer.device``).
        backend: ``gloo`` on CPU, ``nccl`` on CUDA.
        strategy: ``fsdp`` or ``fsdp2`` (``actor_rollout_ref.actor.strategy``).
        train_batch_prompts: prompts per training step (``data.train_batch_size``).
        n: samples per prompt (``rollout.n``).
        sequences_per_step: ``train_batch_prompts x n``.
        sequences_per_rank: ``sequences_per_step / world_size`` (each rank generates and trains on these).
        mini_batch_prompts: ``actor.ppo_mini_batch_size`` (prompts).
        mini_batch_per_rank: sequences of one mini-batch on one rank: ``mini_batch_prompts x n / world_size``.
        micro_batch_per_rank: ``actor.ppo_micro_batch_size_per_gpu`` sequences per forward/backward.
        grad_accum: micro-batches per optimizer step: ``mini_batch_per_rank / micro_batch_per_rank``.
        optimizer_steps_per_step: ``train_batch_prompts / mini_batch_prompts x ppo_epochs``.
        log_prob_micro_batch_per_rank: sequences per forward when recomputing the old log-probs.
        ref_log_prob_micro_batch_per_rank: sequences per forward of the reference model.
        use_reference: a frozen reference model is built (``actor.use_kl_loss`` or ``algorithm.use_kl_in_reward``).
        derivations: human-readable derivation of each number (for ``--dry-run`` and error messages).
    """

    nnodes: int
    nproc_per_node: int
    world_size: int
    device: str
    backend: str
    strategy: str
    train_batch_prompts: int
    n: int
    sequences_per_step: int
    sequences_per_rank: int
    mini_batch_prompts: int
    mini_batch_per_rank: int
    micro_batch_per_rank: int
    grad_accum: int
    ppo_epochs: int
    optimizer_steps_per_step: int
    log_prob_micro_batch_per_rank: int
    ref_log_prob_micro_batch_per_rank: int
    use_reference: bool
    derivations: dict[str, str] = field(default_factory=dict)
    kind: ClassVar[str] = runkind.PPO.name


def _per_gpu(cfg: dict, per_gpu_key: str, global_key: str, world: int) -> int:
    per_gpu = _get(cfg, per_gpu_key)
    if per_gpu is not None:
        return _pos_int(cfg, per_gpu_key)
    glob = _get(cfg, global_key)
    if glob is None:  # FC203 allows it with use_dynamic_bsz (launcher=verl): no fixed micro-batch to plan
        raise ConfigError(
            "is not set (nor the deprecated global form): the plan counts fixed micro-batches",
            key=per_gpu_key,
            fix=f"set {per_gpu_key}=<sequences per forward on one rank>",
        )
    glob = _pos_int(cfg, global_key)
    if glob % world:
        raise ConfigError(
            f"{glob} sequences do not split over {world} ranks",
            key=global_key,
            value=glob,
            fix=f"set {per_gpu_key} instead (verl deprecates {global_key})",
        )
    return glob // world


#: the rules that decide whether a config can be planned (run by :func:`make_plan` through
#: :func:`fsdpcfg.rules.gate.require`): value types and ranges, the batch arithmetic, what the native loop runs.
PLAN_RULES = ("FC103", "FC201", "FC202", "FC203", "FC204", "FC205", "FC301", "FC364", "FC801", "FC802", "FC803")


def make_plan(cfg: Tree) -> Plan:
    """Derive the :class:`Plan` of a native run from a resolved config (plain nested dicts, verl key names, or
    the typed :class:`fsdpcfg.schema.RunConfig`).

    The rules decide whether the config can run (:data:`PLAN_RULES`, the same functions ``fsdpcfg check``
    runs); the plan only derives the numbers.

    Raises:
        ConfigError: the first error of :data:`PLAN_RULES` (a batch size that does not divide, with the numbers
            and the derivation; an unknown device; ``use_dynamic_bsz`` or another key the native loop does not
            run), or a missing key.
    """
    from fsdpcfg.rules import gate

    cfg = as_tree(cfg)
    gate.require(cfg, PLAN_RULES)
    nnodes = _pos_int(cfg, "trainer.nnodes")
    nproc = _pos_int(cfg, "trainer.n_gpus_per_node")
    world = nnodes * nproc
    device = _get(cfg, "trainer.device")
    backend = "gloo" if device == "cpu" else "nccl"
    strategy = _get(cfg, "actor_rollout_ref.actor.strategy")
    tbs = _pos_int(cfg, "data.train_batch_size")
    n = _pos_int(cfg, "actor_rollout_ref.rollout.n")
    mini = _pos_int(cfg, "actor_rollout_ref.actor.ppo_mini_batch_size")
    epochs = _pos_int(cfg, "actor_rollout_ref.actor.ppo_epochs")
    seqs = tbs * n
    d: dict[str, str] = {
        "world_size": f"{world} = trainer.nnodes {nnodes} x trainer.n_gpus_per_node {nproc}",
        "backend": f"{backend} (trainer.device={device})",
        "sequences_per_step": f"{seqs} = data.train_batch_size {tbs} x rollout.n {n}",
    }
    mini_rank = mini * n // world
    micro = _per_gpu(
        cfg,
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",
        "actor_rollout_ref.actor.ppo_micro_batch_size",
        world,
    )
    d["mini_batch_per_rank"] = f"{mini_rank} = ppo_mini_batch_size {mini} x n {n} / world {world} (sequences)"
    accum = mini_rank // micro
    d["grad_accum"] = f"{accum} = mini_batch_per_rank {mini_rank} / ppo_micro_batch_size_per_gpu {micro}"
    opt_steps = tbs // mini * epochs
    d["optimizer_steps_per_step"] = (
        f"{opt_steps} = train_batch_size {tbs} / ppo_mini_batch_size {mini} x ppo_epochs {epochs}"
    )
    lp = _per_gpu(
        cfg,
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu",
        "actor_rollout_ref.rollout.log_prob_micro_batch_size",
        world,
    )
    use_ref = bool(_get(cfg, "actor_rollout_ref.actor.use_kl_loss")) or bool(_get(cfg, "algorithm.use_kl_in_reward"))
    ref_lp = (
        _per_gpu(
            cfg,
            "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu",
            "actor_rollout_ref.ref.log_prob_micro_batch_size",
            world,
        )
        if use_ref
        else lp
    )
    return Plan(
        nnodes=nnodes,
        nproc_per_node=nproc,
        world_size=world,
        device=device,
        backend=backend,
        strategy=strategy,
        train_batch_prompts=tbs,
        n=n,
        sequences_per_step=seqs,
        sequences_per_rank=seqs // world,
        mini_batch_prompts=mini,
        mini_batch_per_rank=mini_rank,
        micro_batch_per_rank=micro,
        grad_accum=accum,
        ppo_epochs=epochs,
        optimizer_steps_per_step=opt_steps,
        log_prob_micro_batch_per_rank=lp,
        ref_log_prob_micro_batch_per_rank=ref_lp,
        use_reference=use_ref,
        derivations=d,
    )


def total_training_steps(cfg: Tree, num_train_prompts: int) -> int:
    """Return the number of training steps: ``trainer.total_training_steps`` when set, else
    ``trainer.total_epochs x (num_train_prompts // data.train_batch_size)`` (verl drops the last partial batch).

    Raises:
        ConfigError: the dataset holds fewer prompts than one batch.
    """
    cfg = as_tree(cfg)
    steps = _get(cfg, "trainer.total_training_steps")
    if steps is not None:
        return _pos_int(cfg, "trainer.total_training_steps")
    tbs = _pos_int(cfg, "data.train_batch_size")
    per_epoch = num_train_prompts // tbs
    if per_epoch == 0:
        raise ConfigError(
            f"the training set has {num_train_prompts} prompts, fewer than one batch of {tbs}",
            key="data.train_batch_size",
            value=tbs,
            fix="lower data.train_batch_size or add data",
        )
    return _pos_int(cfg, "trainer.total_epochs") * per_epoch

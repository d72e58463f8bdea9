"""What every native trainer does around its own steps (the GRPO :class:`fsdpcfg.train.loop.Trainer` and the
:class:`fsdpcfg.train.sft.trainer.SFTTrainer`): join the process group the plan asks for, restore the newest
checkpoint, run the remaining steps with logging and checkpoints, write a checkpoint, and the entry point of one
rank. A trainer builds its models and implements :meth:`TrainerBase.step`; the rest is here, once.
"""

from __future__ import annotations

import datetime
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import torch
import torch.distributed as dist

from fsdpcfg import yamlio
from fsdpcfg.errors import ConfigError
from fsdpcfg.runinfo.ckpt_identity import identity
from fsdpcfg.train import checkpoint as ckpt

if TYPE_CHECKING:
    from fsdpcfg.runinfo.ckpt_identity import AnyRunConfig


def init_distributed(device: str, backend: str, timeout_s: int | None = None) -> torch.device:
    """Join the torchrun process group (``backend``: gloo or nccl; every collective waits at most ``timeout_s``
    seconds, torch's default when ``None``); return this rank's device (``cpu`` or ``cuda:<LOCAL_RANK>``, set as
    the current CUDA device before the group starts)."""
    if device == "cuda":
        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)
        dev = torch.device("cuda", local)
    else:
        dev = torch.device("cpu")
    if not dist.is_initialized():
        timeout = None if timeout_s is None else datetime.timedelta(seconds=timeout_s)
        dist.init_process_group(backend=backend, timeout=timeout)
    return dev


class TrainerBase:
    """The set-up, resume, step loop and checkpoint shared by the native trainers.

    A subclass sets, in its ``__init__``: ``cfg`` (the typed config: :class:`fsdpcfg.schema.RunConfig` or
    :class:`fsdpcfg.schema.sft.SftRunConfig`), then calls :meth:`start` with its plan (computed once, from
    ``cfg``: everything the trainer needs that the config does not say),
    builds ``sampler`` / ``total_steps`` / its models, optimizer and scheduler, and calls :meth:`resume` with the
    model to restore. It implements :meth:`step` (one optimizer step: ``{metric: value}``) and may override
    :meth:`validate_before_steps` / :meth:`after_step` (validation) and :meth:`checkpoint_parts`.

    Attributes:
        rank, world: this process's rank and the world size (checked against the plan).
        start_step: the last step already done (0, or the resumed checkpoint's step).
        last_metrics: the metrics of the last step (the model card states them).
    """

    #: the ``trainer.*`` key holding how many checkpoints to keep (verl's names differ between trainers)
    keep_key: ClassVar[str] = "max_actor_ckpt_to_keep"
    #: keyword arguments of :meth:`fsdpcfg.train.metrics.MetricsLogger.for_run` (progress-bar title and keys)
    logger_options: ClassVar[dict[str, Any]] = {}

    cfg: AnyRunConfig
    plan: Any
    sampler: Any
    total_steps: int
    optimizer: Any
    scheduler: Any
    tokenizer: Any
    hf_config: Any
    generation_config: Any

    #: the resolved config the run started from (nested dicts, verl's keys included): what trackers record
    resolved: dict[str, Any] | None = None

    def __init__(self, cfg: AnyRunConfig) -> None:
        """Keep the typed config; a trainer's own ``__init__`` then calls :meth:`start` and builds its parts."""
        self.cfg = cfg

    def start(self, plan: Any) -> None:
        """Join the process group ``plan`` names (``plan.device``, ``plan.backend``, ``plan.world_size``) and find
        the checkpoint to resume from (``trainer.resume_mode``).

        Raises:
            ConfigError: torchrun started another number of ranks than the plan (only a launch by hand can).
        """
        self.plan = plan
        from fsdpcfg.train.entry import collective_timeout

        self.device = init_distributed(plan.device, plan.backend, collective_timeout(self.cfg.model_dump()))
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        if self.world != plan.world_size:
            raise ConfigError(
                f"torchrun started {self.world} ranks, the config plans {plan.world_size}",
                key="trainer.n_gpus_per_node",
                fix="launch with python -m fsdpcfg",
            )
        # read back against its manifest before torchrun started (fsdpcfg.launch.preflight, or rank 0's preflight)
        self.resume_from = ckpt.find_resume_folder(self.cfg.trainer, verify=False)
        # what the checkpoints record they were trained from (compared by the launcher before a resume)
        self.trained_from = identity(self.cfg) if self.rank == 0 else None
        self.start_step = 0
        self.last_metrics: dict[str, float] | None = None

    def resume(self, model: torch.nn.Module) -> None:
        """Load the checkpoint found by :meth:`start` (if any) into ``model``, the optimizer, the scheduler and
        the sampler; set :attr:`start_step` (collective)."""
        if self.resume_from is not None:
            state = ckpt.load_checkpoint(self.resume_from, model, self.optimizer, self.scheduler)
            self.sampler.load_state_dict(state["sampler"])
            self.start_step = int(state["step"])
            self._rewrite_damaged_export()

    def _rewrite_damaged_export(self) -> None:
        """When the Hugging Face export of the resumed checkpoint does not match its manifest (the trainer state
        does: the launcher checked it), write the checkpoint of the resumed step again from the loaded state
        (collective; rank 0 reads the files and tells the others)."""
        from fsdpcfg.native.ckpt_layout import export_damage

        found = [export_damage(self.resume_from) if self.rank == 0 and self.resume_from is not None else []]
        dist.broadcast_object_list(found, src=0)
        if found[0]:
            if self.rank == 0:
                listed = "; ".join(f"{f}: {why}" for f, why in found[0][:5])
                print(
                    f"fsdpcfg: the Hugging Face export of {self.resume_from} is damaged ({listed}); "
                    f"writing global_step_{self.start_step} again from its trainer state",
                    flush=True,
                )
            self.save(self.start_step)

    def step(self, step: int) -> dict[str, float]:
        """Run training step ``step`` (1-based) on every rank; return its metrics (the same on every rank)."""
        raise NotImplementedError

    def checkpoint_parts(self) -> tuple[torch.nn.Module, Any, Any]:
        """``(sharded model, Hugging Face weights stream, LoRA (LoraConfig, adapter weights) or None)``."""
        raise NotImplementedError

    def save_every(self) -> int:
        """Steps between checkpoints (``trainer.save_freq``; 0 or less: only at the end)."""
        freq = self.cfg.trainer.save_freq
        assert isinstance(freq, int), freq  # the RL schema takes an int only; the SFT trainer maps its word
        return freq

    def save(self, step: int) -> None:
        """Write checkpoint ``global_step_<step>`` (collective): the sharded state, the Hugging Face folder (and
        a LoRA adapter folder), the trainer state; atomic (:func:`fsdpcfg.train.checkpoint.save_checkpoint`)."""
        tr = self.cfg.trainer
        model, weights, adapter = self.checkpoint_parts()
        ckpt.save_checkpoint(
            tr.default_local_dir,
            step,
            model=model,
            full_weights=weights,
            adapter=adapter,
            card=ckpt.card_facts(self.cfg, self.cfg_model_path(), self.last_metrics),
            hf_config=self.hf_config,
            tokenizer=self.tokenizer,
            optimizer=self.optimizer,
            generation_config=self.generation_config,
            scheduler=self.scheduler,
            trainer_state={"step": step, "sampler": self.sampler.state_dict()},
            keep=getattr(tr, self.keep_key),
            trained_from=self.trained_from,
        )

    def cfg_model_path(self) -> str:
        """The ``model.path`` the run trains (the model card names it)."""
        raise NotImplementedError

    def validate_before_steps(self) -> dict[str, float] | None:
        """Metrics of a validation pass before the first step (``trainer.val_before_train``), or ``None``."""
        return None

    def after_step(self, step: int, metrics: dict[str, float]) -> None:
        """Add what runs after step ``step`` (a validation pass) to ``metrics``, in place."""

    def fit(self) -> None:
        """Run the remaining steps, logging each and checkpointing every ``trainer.save_freq`` steps and at the end."""
        from fsdpcfg.runinfo.learning import LearningWatch, why_zero_reward
        from fsdpcfg.train.metrics import MetricsLogger

        logger = MetricsLogger.for_run(
            self.cfg,
            self.total_steps,
            self.start_step,
            enabled=self.rank == 0,
            tracked=self.resolved,
            **self.logger_options,
        )
        save_freq = self.save_every()
        watch = LearningWatch(why_zero=why_zero_reward(self.cfg_model_path()))
        if self.resume_from is not None:
            logger.message(f"fsdpcfg: resumed from {self.resume_from} (step {self.start_step} of {self.total_steps})")
            if self.start_step >= self.total_steps:
                logger.message(
                    "fsdpcfg: trainer.total_training_steps already reached; nothing to do "
                    "(raise it, or trainer.resume_mode=disable to start over)"
                )
        try:
            if self.start_step == 0:
                # before the first step only: a resumed run's start step already has its row in metrics.jsonl
                before = self.validate_before_steps()
                if before is not None:
                    logger.log(0, before, advance=False)
            for step in range(self.start_step + 1, self.total_steps + 1):
                _test_hang(self.rank, step)
                metrics = self.step(step)
                self.after_step(step, metrics)
                logger.log(step, metrics)
                for warning in watch.update(step, metrics):
                    logger.message(warning)
                self.last_metrics = metrics
                if (save_freq > 0 and step % save_freq == 0) or step == self.total_steps:
                    self.save(step)
        finally:
            logger.close()


def save_resolved_config(resolved: dict, run_dir: str, config_path: Path) -> None:
    """Write the resolved config (``resolved``: nested dicts, verl's keys included) to ``<run_dir>/config.yaml``
    unless it was launched from that file."""
    from fsdpcfg.runinfo.faults import write_file_in

    target = Path(run_dir) / "config.yaml"
    if not target.exists() or target.resolve() != config_path.resolve():
        write_file_in(run_dir, "config.yaml", yamlio.dump(resolved), "fsdpcfg.run_dir")


def train_rank(config_path: str, trainer_cls: type[TrainerBase], *, audit: bool = False) -> int:
    """Entry point of one rank: read the resolved config at ``config_path``, validate it once into the typed
    model (:func:`fsdpcfg.schema.parse_config`), build ``trainer_cls`` from that, write the resolved config into
    the run folder (rank 0), audit what was built against what the resolved config asked (``audit``:
    ``<run_dir>/startup_audit.json``; a mismatch stops every rank), train, tear the process group down.
    Returns the exit code (0).

    Raises:
        ConfigError: the config does not match its schema, or a setting the trainer cannot honour.
    """
    from fsdpcfg.schema import parse_config
    from fsdpcfg.train.entry import close_process_group, read_resolved

    path = Path(config_path)
    resolved = read_resolved(path)
    trainer = trainer_cls(parse_config(resolved))
    trainer.resolved = resolved
    try:
        if trainer.rank == 0:
            save_resolved_config(resolved, trainer.cfg.fsdpcfg.run_dir, path)
        if audit:
            from fsdpcfg.runinfo import audit_startup

            audit_startup(trainer, resolved)
        trainer.fit()
    except BaseException:
        close_process_group(clean=False)  # no barrier: the other ranks may be inside a collective
        raise
    close_process_group(clean=True)
    return 0


def _test_hang(rank: int, step: int) -> None:
    """Test hook: ``$FSDPCFG_TEST_HANG="RANK:STEP"`` makes rank RANK stop answering at the start of step STEP (it
    sleeps until it is stopped), as a rank stuck in a kernel or a deadlock does (tests/train/test_hung_rank.py)."""
    spec = os.environ.get("FSDPCFG_TEST_HANG", "")
    if spec and [int(x) for x in spec.split(":")] == [rank, step]:
        print(f"fsdpcfg: test hook: rank {rank} stops answering at step {step}", flush=True)
        while True:
            time.sleep(60)

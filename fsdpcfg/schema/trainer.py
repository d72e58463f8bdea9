"""``trainer``: layout, length, logging and checkpoints of a run (verl's ``trainer`` section)."""

from __future__ import annotations

from typing import Literal

from fsdpcfg.schema._base import MAX_NODES, MAX_RANKS_PER_NODE, MAX_SIZE, F, Section

#: ``verl.utils.tracking.Tracking.supported_backend`` (0.9.1).
Logger = Literal[
    "wandb", "mlflow", "swanlab", "vemlp_wandb", "tensorboard", "console", "clearml", "trackio", "file", "rl_insight"
]
#: the ``trainer.logger`` sinks the native loop writes (``fsdpcfg/train/trackers.py``); the others only verl has.
NATIVE_SINKS = ("console", "tensorboard", "file", "wandb", "mlflow")


class TrainerSection(Section):
    """Where and how long the run goes."""

    balance_batch: bool = F(True, description="reorder sequences so ranks get similar token counts")
    total_epochs: int = F(30, gt=0, description="passes over the training set")
    total_training_steps: int | None = F(
        None, le=MAX_SIZE, gt=0, description="stop after this many steps (null: from total_epochs)"
    )
    project_name: str = F("verl_examples", description="project name for loggers and checkpoint folders")
    experiment_name: str = F("gsm8k", description="run name for loggers and checkpoint folders")
    logger: Logger | list[Logger] = F(default_factory=lambda: ["console", "wandb"], description="metric sinks")
    log_val_generations: int = F(0, le=MAX_SIZE, ge=0, description="validation generations to log")
    nnodes: int = F(1, le=MAX_NODES, ge=1, description="nodes in the run (torchrun --nnodes / Ray nodes)")
    n_gpus_per_node: int = F(
        8, le=MAX_RANKS_PER_NODE, ge=1, description="ranks per node (GPUs, or CPU processes with device=cpu)"
    )
    # verl reads both as "every N steps when N > 0" (verl/trainer/ppo/ray_trainer.py ``fit``: ``save_freq > 0 and
    # ...``), so 0 and any negative number mean what -1 means; so does the native loop (fsdpcfg/train/base.py)
    save_freq: int = F(
        -1,
        ge=-MAX_SIZE,
        le=MAX_SIZE,
        description="checkpoint every N steps (0 or less: none with verl, only at the end with the native loop)",
    )
    resume_mode: Literal["auto", "disable", "resume_path"] = F(
        "auto", description="resume from the latest checkpoint, never, or resume_from_path"
    )
    resume_from_path: str | None = F(None, description="checkpoint folder when resume_mode=resume_path")
    val_before_train: bool = F(True, description="validate before the first step")
    test_freq: int = F(-1, ge=-MAX_SIZE, le=MAX_SIZE, description="validate every N steps (0 or less: never)")
    critic_warmup: int = F(0, le=MAX_SIZE, ge=0, description="steps that update only the critic")
    default_local_dir: str = F("checkpoints/verl_examples/gsm8k", description="checkpoint folder")
    # verl keeps all for null, 0 or less (verl/utils/checkpoint/checkpoint_manager.py ``register_checkpoint``:
    # ``max_ckpt_to_keep > 0``), and so does the native trainer (fsdpcfg/train/checkpoint.py)
    max_actor_ckpt_to_keep: int | None = F(
        None, le=MAX_SIZE, description="keep at most this many actor checkpoints (null, 0 or less: all)"
    )
    device: Literal["cpu", "cuda", "npu"] = F("cuda", description="device type (cpu only with the native launcher)")

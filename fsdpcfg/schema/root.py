"""The whole config: verl's top-level sections plus ``fsdpcfg``."""

from __future__ import annotations

from fsdpcfg.schema._base import MAX_SIZE, F, Section, Sub, V
from fsdpcfg.schema.actor import ActorSection
from fsdpcfg.schema.algorithm import AlgorithmSection
from fsdpcfg.schema.critic import CriticSection
from fsdpcfg.schema.data import DataSection
from fsdpcfg.schema.fsdpcfg_section import FsdpcfgSection
from fsdpcfg.schema.model import ModelSection
from fsdpcfg.schema.ref import RefSection
from fsdpcfg.schema.reward import RewardSection
from fsdpcfg.schema.rollout import RolloutSection
from fsdpcfg.schema.trainer import TrainerSection


class ActorRolloutRef(Section):
    """Actor, rollout and reference share one model and (hybrid engine) one set of ranks."""

    hybrid_engine: bool = F(True, description="actor and rollout share the same ranks (verl supports only true)")
    nccl_timeout: int = F(
        V("actor_rollout_ref.nccl_timeout"),
        gt=0,
        le=MAX_SIZE,
        description="seconds a collective waits for the other ranks before the run stops naming the rank that "
        "stopped answering (the native process group's timeout, as verl's FSDP workers used it; verl 0.9.1 no "
        "longer reads it)",
    )
    model: ModelSection = F(description="the Hugging Face model")
    actor: ActorSection = Sub(ActorSection, "the policy under training")
    ref: RefSection = Sub(RefSection, "the frozen reference policy")
    rollout: RolloutSection = F(description="the generation engine")


class RunConfig(Section):
    """A GRPO/PPO run in verl 0.9.1's key names (``verl/trainer/config/ppo_trainer.yaml``) plus ``fsdpcfg``."""

    actor_rollout_ref: ActorRolloutRef = F(description="actor, rollout and reference")
    data: DataSection = F(description="the dataset")
    algorithm: AlgorithmSection = Sub(AlgorithmSection, "advantage estimation")
    critic: CriticSection = Sub(CriticSection, "the value model (GAE/PPO)")
    reward: RewardSection = Sub(RewardSection, "the reward function")
    trainer: TrainerSection = Sub(TrainerSection, "layout, logging, checkpoints")
    fsdpcfg: FsdpcfgSection = Sub(FsdpcfgSection, "fsdpcfg's own settings")

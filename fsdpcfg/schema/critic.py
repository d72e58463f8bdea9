"""``critic``: the value model of GAE/PPO runs (verl's ``FSDPCriticConfig``/``McoreCriticConfig``,
``verl/workers/config/critic.py``; ``verl/trainer/config/critic/*.yaml``).

verl builds a critic when ``critic.enable`` is true, or when it is null and ``algorithm.adv_estimator`` is
``gae`` (``verl/trainer/ppo/utils.py`` ``need_critic``). Only the keys fsdpcfg's rules read are typed here; the
rest of verl's critic tree (``critic.fsdp.qat``, ``critic.megatron.*`` ...) is accepted as verl keys. Every
default is verl's own (:func:`fsdpcfg.schema._base.V`); the batch defaults copy the actor's through verl's
``${oc.select:...}`` interpolations, kept in the composed tree.
"""

from __future__ import annotations

from typing import Any

from fsdpcfg.schema._base import F, Section, Strategy, Sub, V
from fsdpcfg.schema.actor import Checkpoint, FSDPConfig, LossAggMode, Optim


class CriticModel(Section):
    """The critic's Hugging Face model (verl's ``HFModelConfig`` under ``critic.model``)."""

    path: str = F(
        V("critic.model.path"),
        description="the value model's checkpoint: a local folder with "
        "config.json or a hub id (verl's default is a placeholder path: set it for a GAE run)",
    )
    tokenizer_path: str | None = F(
        V("critic.model.tokenizer_path"), description="tokenizer folder or hub id; null: the model path"
    )
    trust_remote_code: bool = F(
        V("critic.model.trust_remote_code"), description="allow the checkpoint's own Python code (auto_map)"
    )
    external_lib: str | list[str] | None = F(
        V("critic.model.external_lib"), description="module(s) imported before the model is built; only at launch"
    )
    override_config: dict[str, Any] = F(
        default_factory=dict, description="entries merged into the model's config.json at load time"
    )
    enable_gradient_checkpointing: bool = F(
        V("critic.model.enable_gradient_checkpointing"), description="activation checkpointing of every decoder layer"
    )
    use_remove_padding: bool = F(
        V("critic.model.use_remove_padding"),
        description="packed sequences without pad tokens (needed by Ulysses sequence parallelism)",
    )
    lora_rank: int = F(V("critic.model.lora_rank"), ge=0, description="LoRA rank of the critic; 0 disables LoRA")


class CriticOptim(Optim):
    """The critic's optimizer (verl's ``FSDPOptimizerConfig``; its learning rate differs from the actor's)."""

    lr: float = F(V("critic.optim.lr"), ge=0, description="peak learning rate of the critic")


class CriticSection(Section):
    """The value model: its update (``ppo_*`` keys) and its forward pass over the rollouts (``forward_*``)."""

    enable: bool | None = F(
        V("critic.enable"), description="build a critic; null: when algorithm.adv_estimator is gae (verl's need_critic)"
    )
    strategy: Strategy = F(
        V("critic.strategy"),
        description="training engine of the critic (fsdp, fsdp2, megatron ...); engine= sets it with the actor's",
    )
    ppo_mini_batch_size: int = F(
        V("critic.ppo_mini_batch_size"),
        gt=0,
        description="prompts per critic optimizer step (x rollout.n sequences; default: the actor's)",
    )
    ppo_micro_batch_size: int | None = F(
        V("critic.ppo_micro_batch_size"),
        gt=0,
        description="deprecated global micro batch; use ppo_micro_batch_size_per_gpu",
    )
    ppo_micro_batch_size_per_gpu: int | None = F(
        V("critic.ppo_micro_batch_size_per_gpu"), gt=0, description="sequences per critic forward/backward on one rank"
    )
    forward_micro_batch_size: int | None = F(
        V("critic.forward_micro_batch_size"),
        gt=0,
        description=("deprecated global micro batch of the value pass (default: ppo_micro_batch_size)"),
    )
    forward_micro_batch_size_per_gpu: int | None = F(
        V("critic.forward_micro_batch_size_per_gpu"),
        gt=0,
        description="sequences per value forward on one rank (default: ppo_micro_batch_size_per_gpu)",
    )
    use_dynamic_bsz: bool = F(
        V("critic.use_dynamic_bsz"), description="pack micro-batches by token count (default: the actor's)"
    )
    ppo_max_token_len_per_gpu: int = F(
        V("critic.ppo_max_token_len_per_gpu"),
        gt=0,
        description="token budget per rank and micro-batch of the update when use_dynamic_bsz",
    )
    forward_max_token_len_per_gpu: int = F(
        V("critic.forward_max_token_len_per_gpu"),
        gt=0,
        description=("token budget per rank of the value pass (default: ppo_max_token_len_per_gpu)"),
    )
    ppo_epochs: int = F(V("critic.ppo_epochs"), gt=0, description="passes over each batch (default: the actor's)")
    shuffle: bool = F(V("critic.shuffle"), description="shuffle mini-batches (default: the actor's)")
    ulysses_sequence_parallel_size: int = F(
        V("critic.ulysses_sequence_parallel_size"), ge=1, description="Ulysses sequence-parallel ranks of the critic"
    )
    loss_agg_mode: LossAggMode = F(
        V("critic.loss_agg_mode"), description="how token value losses aggregate (default: the actor's)"
    )
    cliprange_value: float = F(V("critic.cliprange_value"), ge=0, description="clip range of the value loss")
    grad_clip: float = F(
        V("critic.grad_clip"), ge=0, description="not read by verl 0.9.1 (FC721): the clip is critic.optim.clip_grad"
    )
    model: CriticModel = Sub(CriticModel, "the value model's checkpoint")
    optim: CriticOptim = Sub(CriticOptim, "optimizer and schedule of the critic")
    checkpoint: Checkpoint = Sub(Checkpoint, "critic checkpoint contents")
    fsdp: FSDPConfig = Sub(FSDPConfig, "FSDP engine settings of the critic (strategy fsdp/fsdp2)")

"""``actor_rollout_ref.actor``: the policy being trained, its FSDP engine, optimizer and policy loss
(verl's ``FSDPActorConfig``, ``FSDPEngineConfig``, ``FSDPOptimizerConfig``, ``PolicyLossConfig``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import field_validator

from fsdpcfg.schema._base import (
    MAX_RANKS_PER_NODE,
    MAX_SEED,
    MAX_SIZE,
    MAX_TOKENS,
    Beta,
    F,
    FSDPEngineStrategy,
    KLType,
    Precision,
    Section,
    Strategy,
    Sub,
)

#: ``verl/workers/config/actor.py`` ``ActorConfig.__post_init__``.
LossAggMode = Literal["token-mean", "token-sum", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"]
#: policy losses registered with ``register_policy_loss`` in ``verl/trainer/ppo/core_algos.py`` (0.9.1).
PolicyLossMode = Literal[
    "vanilla",
    "dppo_tv",
    "dppo_kl",
    "gspo",
    "sapo",
    "gpg",
    "clip_cov",
    "kl_cov",
    "geo_mean",
    "dro",
    "cispo",
    "bypass_mode",
]
CheckpointContent = Literal["model", "optimizer", "extra", "hf_model"]


class WrapPolicy(Section):
    """Which modules become FSDP units."""

    min_num_params: int = F(
        0,
        le=2**62,
        ge=0,
        description="FSDP1: wrap any module with at least this many parameters, in place of the layer classes "
        "(0: by layer class; FSDP2 ignores it)",
    )
    transformer_layer_cls_to_wrap: str | list[str] | None = F(
        None, description="decoder-layer class names to wrap; null: the model's `_no_split_modules`"
    )


class MixedPrecision(Section):
    """An explicit FSDP mixed-precision policy (torch's FSDP1 ``MixedPrecision``, FSDP2 ``MixedPrecisionPolicy``).

    An entry left out takes verl's default: verl/workers/engine/fsdp/transformer_impl.py ``_build_fsdp_module``
    reads each with ``.get`` (``bf16``, ``fp32``, ``fp32``); :func:`fsdp_dtypes` is where every reader gets them.
    """

    param_dtype: Precision = F("bf16", description="dtype parameters are gathered and computed in")
    reduce_dtype: Precision = F("fp32", description="dtype gradients are reduced in")
    buffer_dtype: Precision = F("fp32", description="dtype of the module buffers (FSDP1; FSDP2 leaves them)")


def fsdp_dtypes(fsdp_config: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    """``(param, reduce, buffer)`` precision names (``bf16``, ``fp32`` ...) of one ``fsdp_config`` mapping as the
    native engine shards with them: the ``mixed_precision`` entries when it is set (each left out: verl's default,
    :class:`MixedPrecision`'s), else ``dtype`` for compute with fp32 reduce and buffers. One home for the engine
    (``Precision.from_fsdp_config``), the memory plan and ``fsdpcfg audit``; SFT's ``engine`` section has no
    ``mixed_precision`` and reads as null."""
    mp = fsdp_config.get("mixed_precision")
    if isinstance(mp, Mapping):
        d = {name: field.default for name, field in MixedPrecision.model_fields.items()} | dict(mp)
        return d["param_dtype"], d["reduce_dtype"], d["buffer_dtype"]
    return fsdp_config.get("dtype"), "fp32", "fp32"


class FSDPConfig(Section):
    """FSDP/FSDP2 engine settings of one role (verl's ``FSDPEngineConfig``)."""

    strategy: FSDPEngineStrategy = F(
        "fsdp",
        description="fsdp (FullyShardedDataParallel), fsdp2 (fully_shard) or verl's fsdp_turbo; follows the role's "
        "strategy",
    )
    wrap_policy: WrapPolicy = Sub(WrapPolicy, "auto-wrap policy")
    param_offload: bool = F(False, description="FSDP1: keep parameters on the CPU between uses")
    optimizer_offload: bool = F(False, description="FSDP1: keep optimizer state on the CPU")
    offload_policy: bool = F(False, description="FSDP2: CPUOffloadPolicy for parameters, gradients and optimizer state")
    reshard_after_forward: bool = F(True, description="free gathered parameters after forward (ZeRO-3 style)")
    fsdp_size: int = F(
        -1,
        ge=-MAX_SIZE,
        le=MAX_SIZE,
        description="ranks per FSDP shard group (-1, or any negative number: all ranks; otherwise HSDP)",
    )
    forward_prefetch: bool = F(False, description="FSDP1: prefetch the next all-gather during forward")
    model_dtype: Precision = F("fp32", description="dtype the parameters are kept in (master weights)")
    dtype: Precision = F("bfloat16", description="compute dtype of the mixed-precision policy")
    mixed_precision: MixedPrecision | None = F(
        None,
        description="explicit mixed-precision policy (param_dtype, reduce_dtype, buffer_dtype; each left out: verl's "
        "bf16, fp32, fp32); null: compute in dtype, reduce and buffers in fp32",
    )
    seed: int = F(42, ge=0, le=MAX_SEED, description="seed of the engine's random state")

    @field_validator("fsdp_size")
    @classmethod
    def _fsdp_size(cls, v: int) -> int:
        # verl shards over all ranks for any negative size and divides the world size by any other (verl/workers/
        # engine/fsdp/utils.py ``create_device_mesh``), as the native engine does (fsdpcfg/estimate/mesh.py)
        if v == 0:
            raise ValueError("must be -1 (shard over all ranks) or a positive number of ranks; 0 builds no device mesh")
        return v


class Optim(Section):
    """The actor's optimizer and learning-rate schedule (verl's ``FSDPOptimizerConfig``)."""

    optimizer: str = F(
        "AdamW", description="optimizer class name in optimizer_impl (verl's key; the native launcher implements AdamW)"
    )
    lr: float = F(1e-6, ge=0, description="peak learning rate")
    lr_warmup_steps_ratio: float = F(
        0.0, ge=0, le=1, description="warmup length as a fraction of the total steps (used when lr_warmup_steps < 0)"
    )
    lr_warmup_steps: int | None = F(
        -1, le=MAX_SIZE, ge=-1, description="warmup steps; -1 (or verl's null): from lr_warmup_steps_ratio"
    )
    total_training_steps: int = F(
        -1, ge=-1, le=MAX_SIZE, description="steps of the schedule; -1: filled in by the trainer"
    )
    weight_decay: float = F(0.01, ge=0, description="decoupled weight decay")
    betas: list[Beta] = F(
        default_factory=lambda: [0.9, 0.999],
        min_length=2,
        max_length=2,
        description="AdamW betas [beta1, beta2], each in [0, 1) (torch.optim.AdamW)",
    )
    clip_grad: float = F(1.0, ge=0, description="gradient-norm clip (the one verl 0.9.1 and the native trainer apply)")
    # verl's OptimizerConfig.min_lr_ratio is Optional[float]; get_cosine_schedule_with_warmup reads null as 0.0
    min_lr_ratio: float | None = F(
        0.0, ge=0, le=1, description="cosine schedule floor as a fraction of lr (null: 0, as verl reads it)"
    )
    num_cycles: float = F(0.5, ge=0, description="cosine cycles over the schedule")
    lr_scheduler_type: Literal["constant", "cosine"] = F("constant", description="schedule after warmup")


class PolicyLoss(Section):
    """Which policy-gradient loss the actor uses."""

    loss_mode: PolicyLossMode = F("vanilla", description="verl's registered policy loss (vanilla: PPO clip)")


class Checkpoint(Section):
    """What actor checkpoints contain."""

    save_contents: list[CheckpointContent] = F(
        default_factory=lambda: ["model", "optimizer", "extra"], description="parts written at each save"
    )
    load_contents: list[CheckpointContent] = F(
        default_factory=lambda: ["model", "optimizer", "extra"],
        description="parts read on resume (default: save_contents)",
    )


class ActorSection(Section):
    """The policy under training (verl's ``FSDPActorConfig``)."""

    strategy: Strategy = F(
        "fsdp",
        description="training engine: fsdp or fsdp2 (FSDP generations, checked in "
        "depth), or megatron, veomni, torchtitan ... (verl's other engines: engine=megatron ...)",
    )
    ppo_mini_batch_size: int = F(
        256, le=MAX_SIZE, gt=0, description="prompts per optimizer step (multiplied by rollout.n into sequences)"
    )
    ppo_micro_batch_size: int | None = F(
        None,
        le=MAX_SIZE,
        gt=0,
        description="deprecated global micro batch (sequences over all ranks); use ppo_micro_batch_size_per_gpu",
    )
    ppo_micro_batch_size_per_gpu: int | None = F(
        None, le=MAX_SIZE, gt=0, description="sequences per forward/backward on one rank"
    )
    use_dynamic_bsz: bool = F(False, description="pack micro-batches by token count instead of a fixed size")
    ppo_max_token_len_per_gpu: int = F(
        16384,
        le=MAX_TOKENS,
        gt=0,
        description="token budget per rank and micro-batch when use_dynamic_bsz (x ulysses size)",
    )
    clip_ratio: float = F(0.2, ge=0, description="PPO clip epsilon (both sides unless low/high are set)")
    clip_ratio_low: float = F(0.2, ge=0, description="lower clip epsilon")
    clip_ratio_high: float = F(0.2, ge=0, description="upper clip epsilon")
    clip_ratio_c: float = F(3.0, gt=1, description="dual-clip constant (verl asserts > 1)")
    loss_agg_mode: LossAggMode = F("token-mean", description="how token losses aggregate into the batch loss")
    entropy_coeff: float = F(0, description="entropy bonus coefficient")
    use_kl_loss: bool = F(False, description="add a KL-to-reference term to the loss (GRPO style)")
    kl_loss_coef: float = F(0.001, ge=0, description="weight of the KL loss")
    kl_loss_type: KLType = F("low_var_kl", description="KL estimator of the KL loss")
    ppo_epochs: int = F(1, le=MAX_SIZE, gt=0, description="passes over each training batch")
    shuffle: bool = F(False, description="shuffle mini-batches between epochs")
    data_loader_seed: int | None = F(42, ge=0, le=MAX_SEED, description="seed of the mini-batch shuffling")
    grad_clip: float = F(1.0, ge=0, description="not read by verl 0.9.1 (FC721): the clip is optim.clip_grad")
    ulysses_sequence_parallel_size: int = F(
        1, le=MAX_RANKS_PER_NODE, ge=1, description="Ulysses sequence-parallel ranks"
    )
    use_torch_compile: bool = F(True, description="torch.compile the log-prob/entropy helpers")
    policy_loss: PolicyLoss = Sub(PolicyLoss, "policy loss")
    checkpoint: Checkpoint = Sub(Checkpoint, "checkpoint contents")
    optim: Optim = Sub(Optim, "optimizer and schedule")
    fsdp_config: FSDPConfig = Sub(FSDPConfig, "FSDP engine settings")

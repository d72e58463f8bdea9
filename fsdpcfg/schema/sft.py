"""The SFT tree (``conf/sft``, ``fsdpcfg.kind: sft``): verl 0.9.1's ``sft_trainer_engine`` layout and defaults
(``verl/trainer/config/sft_trainer_engine.yaml`` with ``model/hf_model.yaml``, ``engine/fsdp.yaml``,
``optim/fsdp.yaml``), for the keys FSDP/FSDP2 SFT runs use, plus fsdpcfg's own section.

Unknown keys are rejected (``extra="forbid"``); every field says what it does; defaults are verl's.
"""

from __future__ import annotations

from typing import Any, Literal

from fsdpcfg.schema._base import Beta, F, FSDPEngineStrategy, Precision, Section, Sub
from fsdpcfg.schema.trainer import Logger


class SftModel(Section):
    """``model``: the Hugging Face model to fine-tune (verl ``HFModelConfig``)."""

    path: str = F("~/models/deepseek-llm-7b-chat", description="local folder or hub id of the model to train")
    tokenizer_path: str | None = F(None, description="tokenizer folder; null: model.path")
    hf_config_path: str | None = F(None, description="config.json folder; null: model.path")
    trust_remote_code: bool = F(False, description="allow the model's own Python code (auto_map)")
    custom_chat_template: str | None = F(None, description="a Jinja chat template replacing the tokenizer's")
    external_lib: str | list[str] | None = F(
        None, description="module(s) imported before loading the model (they may register model classes)"
    )
    override_config: dict[str, Any] = F(default_factory=dict, description="entries set on the loaded config.json")
    enable_gradient_checkpointing: bool = F(True, description="recompute activations in the backward pass")
    enable_activation_offload: bool = F(False, description="offload activations to the CPU (verl only)")
    use_remove_padding: bool = F(True, description="packed sequences without pad tokens (patches=remove_padding)")
    lora_rank: int = F(0, ge=0, description="LoRA rank; 0 trains all weights")
    lora_alpha: int | float = F(
        16, ge=0, description="LoRA alpha: the adapter update is scaled by lora_alpha / lora_rank"
    )
    target_modules: str | list[str] = F("all-linear", description="modules LoRA adapts: all-linear or names")
    exclude_modules: str | list[str] | None = F(None, description="modules LoRA must not adapt")
    lora_adapter_path: str | None = F(None, description="a saved PEFT adapter folder to start from")
    use_liger: bool = F(False, description="Liger kernels (GPU only)")
    use_fused_kernels: bool = F(False, description="verl's fused log-prob kernels (verl only)")


class SftWrapPolicy(Section):
    """``engine.wrap_policy``: which modules become FSDP units."""

    min_num_params: int = F(
        0,
        ge=0,
        description="FSDP1: wrap any module with at least this many parameters, in place of the layer classes "
        "(0: by layer class; FSDP2 ignores it)",
    )
    transformer_layer_cls_to_wrap: str | list[str] | None = F(
        None, description="decoder layer class name(s) to wrap; null: the model's _no_split_modules"
    )


class SftEngine(Section):
    """``engine``: the FSDP engine (verl ``FSDPEngineConfig``)."""

    strategy: FSDPEngineStrategy = F(
        "fsdp", description="fsdp (FullyShardedDataParallel), fsdp2 (fully_shard) or fsdp_turbo (verl only)"
    )
    dtype: Precision = F("bfloat16", description="compute dtype")
    model_dtype: Precision = F("fp32", description="master weight dtype")
    param_offload: bool = F(False, description="keep parameters on the CPU between uses (GPU only)")
    optimizer_offload: bool = F(False, description="keep the optimizer state on the CPU (GPU only)")
    offload_policy: bool = F(False, description="FSDP2 CPUOffloadPolicy (GPU only)")
    reshard_after_forward: bool = F(True, description="free gathered parameters after the forward pass")
    fsdp_size: int = F(-1, description="ranks per sharding group; -1: all ranks (hybrid sharding when smaller)")
    forward_prefetch: bool = F(False, description="FSDP1: prefetch the next unit in the forward pass")
    use_orig_params: bool = F(False, description="FSDP1 use_orig_params")
    ulysses_sequence_parallel_size: int = F(1, ge=1, description="Ulysses sequence-parallel size (verl only)")
    use_torch_compile: bool = F(True, description="torch.compile parts of the model (verl)")
    seed: int = F(42, description="seed of the model initialisation")
    wrap_policy: SftWrapPolicy = Sub(SftWrapPolicy, "which modules become FSDP units")


class SftOptim(Section):
    """``optim``: AdamW and the learning-rate schedule (verl ``FSDPOptimizerConfig``)."""

    optimizer: str = F("AdamW", description="optimizer class; the native launcher has AdamW")
    lr: float = F(0.001, gt=0, description="peak learning rate")
    lr_warmup_steps_ratio: float = F(0.0, ge=0, le=1, description="warmup steps as a fraction of all steps")
    lr_warmup_steps: int | None = F(-1, description="warmup steps; <= 0 (or verl's null): use lr_warmup_steps_ratio")
    total_training_steps: int = F(-1, description="schedule length; -1: the trainer's step count")
    weight_decay: float = F(0.01, ge=0, description="AdamW weight decay")
    betas: list[Beta] = F(
        default_factory=lambda: [0.9, 0.999],
        min_length=2,
        max_length=2,
        description="AdamW betas [beta1, beta2], each in [0, 1) (torch.optim.AdamW)",
    )
    clip_grad: float = F(1.0, gt=0, description="gradient-norm clipping threshold")
    # verl's OptimizerConfig.min_lr_ratio is Optional[float]; get_cosine_schedule_with_warmup reads null as 0.0
    min_lr_ratio: float | None = F(
        0.0, ge=0, le=1, description="cosine schedule: final lr as a fraction of lr (null: 0, as verl reads it)"
    )
    num_cycles: float = F(0.5, description="cosine schedule: number of half-waves")
    lr_scheduler_type: Literal["constant", "cosine"] = F("constant", description="constant or cosine (with warmup)")


class SftData(Section):
    """``data``: chat ``messages`` rows; the loss covers assistant tokens only (verl ``MultiTurnSFTDataset``)."""

    train_batch_size: int = F(256, gt=0, description="sequences per optimizer step, over all ranks")
    micro_batch_size_per_gpu: int = F(4, gt=0, description="sequences per forward/backward on one rank")
    max_token_len_per_gpu: int = F(8192, gt=0, description="token budget per micro-batch with use_dynamic_bsz")
    use_dynamic_bsz: bool = F(True, description="micro-batches by token budget (verl); false: fixed sizes")
    train_files: str | list[str] = F(
        "~/data/gsm8k/train.parquet", description="training files (.parquet, .jsonl) with a messages column"
    )
    val_files: str | list[str] | None = F(None, description="validation files")
    train_max_samples: int = F(-1, description="use only the first N training rows; -1: all")
    val_max_samples: int = F(-1, description="use only the first N validation rows; -1: all")
    messages_key: str = F("messages", description="column holding the chat messages")
    tools_key: str = F("tools", description="column holding tool schemas, if any")
    enable_thinking_key: str = F("enable_thinking", description="column switching the template's thinking mode")
    enable_thinking_default: bool | str | None = F(
        "none", description="thinking mode where the column is absent; none: the template's default"
    )
    pad_mode: Literal["no_padding", "right"] = F("no_padding", description="no_padding (packed, verl) or right")
    max_length: int = F(1024, gt=0, description="maximum tokens per conversation")
    truncation: Literal["error", "left", "right"] = F("error", description="what to do with longer conversations")
    balance_dp_token: bool = F(
        False, description="balance tokens over data-parallel ranks (not implemented in verl 0.9.1)"
    )
    use_shm: bool = F(False, description="copy files through shared memory (verl)")
    apply_chat_template_kwargs: dict[str, Any] = F(
        default_factory=dict, description="extra arguments of apply_chat_template"
    )
    num_workers: int = F(8, ge=0, description="data loader worker processes (verl)")
    ignore_input_ids_mismatch: bool = F(
        False, description="accept per-turn tokenisation differing from the whole-conversation tokenisation"
    )


class SftCheckpoint(Section):
    """``checkpoint``: what checkpoints hold."""

    save_contents: list[str] = F(
        default_factory=lambda: ["model", "optimizer", "extra"],
        description="parts saved: model, optimizer, extra (hf_model: a HF folder)",
    )
    load_contents: list[str] = F(
        default_factory=lambda: ["model", "optimizer", "extra"], description="parts loaded on resume"
    )


#: verl's ``sft_trainer`` word for "once per epoch" in ``trainer.save_freq`` / ``trainer.test_freq``.
AFTER_EACH_EPOCH = "after_each_epoch"


class SftTrainer(Section):
    """``trainer``: layout, length, logging and checkpoints."""

    default_local_dir: str = F("checkpoints/gsm8k-sft/test", description="checkpoint folder")
    default_hdfs_dir: str | None = F(None, description="HDFS copy of the checkpoints (verl)")
    project_name: str = F("gsm8k-sft", description="project name (logging, folders)")
    experiment_name: str = F("test", description="experiment name (logging, folders)")
    total_epochs: int = F(4, gt=0, description="passes over the data when total_training_steps is null")
    total_training_steps: int | None = F(None, gt=0, description="optimizer steps; null: from total_epochs")
    logger: Logger | list[Logger] = F(
        default_factory=lambda: ["console", "wandb"],
        description="metric sinks (verl names; one name or a list, as verl's Tracking takes either)",
    )
    seed: int = F(1, description="data shuffling seed")
    save_freq: int | Literal["after_each_epoch"] = F(
        -1,
        description="checkpoint every N steps, or after_each_epoch (verl's sft_trainer); -1: only at the end "
        "(native) / never (verl)",
    )
    test_freq: int | Literal["after_each_epoch"] = F(
        -1, description="validate every N steps, or after_each_epoch (verl's sft_trainer); -1: never"
    )
    max_ckpt_to_keep: int | None = F(None, description="keep at most N checkpoints; null: all")
    balance_batch: bool = F(True, description="balance sequence lengths over ranks (verl)")
    resume_mode: Literal["auto", "disable", "resume_path"] = F(
        "auto", description="auto: the latest checkpoint; disable; resume_path: trainer.resume_from_path"
    )
    resume_from_path: str | None = F(None, description="checkpoint to resume from (resume_mode=resume_path)")
    device: Literal["cpu", "cuda"] = F("cuda", description="cpu (gloo) or cuda (NCCL)")
    nnodes: int = F(1, gt=0, description="nodes")
    n_gpus_per_node: int = F(1, gt=0, description="ranks per node")


class SftFsdpcfg(Section):
    """``fsdpcfg``: fsdpcfg's own choices for an SFT run."""

    kind: Literal["sft"] = F("sft", description="config kind: sft (verl's sft_trainer_engine layout)")
    launcher: Literal["native", "verl"] = F(
        "native", description="who runs the trainer: native (torchrun, built-in FSDP SFT trainer) or verl"
    )
    run_dir: str = F(
        "runs/gsm8k-sft/test", description="run folder (metrics, resolved config): runs/PROJECT/EXPERIMENT"
    )
    env: dict[str, str | int | float | bool] = F(
        default_factory=dict, description="environment variables for the launched run (NAME: value)"
    )


class SftRunConfig(Section):
    """An SFT run in verl 0.9.1's ``sft_trainer_engine`` key names plus ``fsdpcfg``."""

    model: SftModel = F(description="the model")
    engine: SftEngine = Sub(SftEngine, "the FSDP engine")
    optim: SftOptim = Sub(SftOptim, "optimizer and schedule")
    data: SftData = F(description="the dataset and batch sizes")
    checkpoint: SftCheckpoint = Sub(SftCheckpoint, "checkpoint contents")
    trainer: SftTrainer = Sub(SftTrainer, "layout, length, logging, checkpoints")
    fsdpcfg: SftFsdpcfg = Sub(SftFsdpcfg, "fsdpcfg's own settings")


def schema_defaults() -> dict[str, Any]:
    """``{dotted key: default}`` of every leaf of :class:`SftRunConfig` (a default factory called)."""
    out: dict[str, Any] = {}

    def walk(model_cls, prefix: str) -> None:
        from pydantic import BaseModel

        for name, info in model_cls.model_fields.items():
            ann = info.annotation
            if isinstance(ann, type) and issubclass(ann, BaseModel):
                walk(ann, f"{prefix}{name}.")
            elif info.default_factory is not None:
                out[f"{prefix}{name}"] = info.default_factory()
            else:
                out[f"{prefix}{name}"] = info.default

    walk(SftRunConfig, "")
    return out


def schema_part(
    tree: dict[str, Any], schema: frozenset[str], prefix: str = "", comp: str = "sft_trainer_engine"
) -> dict[str, Any]:
    """``tree`` without the keys of verl's ``sft_trainer_engine`` composition that the SFT schema does not
    model (``engine.qat.*``, ``profiler.*`` ...): the tree starts from verl's own (fsdpcfg/compose/verl_base.py),
    so they are verl's keys with verl's values, passed to verl; what is left is validated (an unknown key
    stays, for ``extra="forbid"`` to report)."""
    from fsdpcfg import verlref

    vkeys, vpre = verlref.keys(comp), verlref.prefixes(comp)
    out: dict[str, Any] = {}
    for k, v in tree.items():
        key = f"{prefix}{k}"
        in_schema = key in schema or any(s.startswith(key + ".") for s in schema)
        if not in_schema and (key in vkeys or key in vpre):
            continue
        nested = isinstance(v, dict) and in_schema and key not in schema
        out[k] = schema_part(v, schema, key + ".", comp) if nested else v
    return out

#!/usr/bin/env bash
# SFT on verl's Megatron engine (verl's sft_trainer with engine=megatron optim=megatron): 2 nodes of 8 GPUs with
# tensor parallel 4 x pipeline parallel 2, so the data-parallel group is 16 / (4 x 2) = 2 ranks and the batch of
# 32 is 16 sequences per rank (4 micro batches of 4). fsdpcfg checks FSDP engines in depth and says so (FC111);
# `optim=megatron` is the optimizer config the engine option selects (FC124). Divided by all 16 ranks the share
# would be 2, smaller than the micro batch: a false FC250.
# expect: no errors
# expect-info: FC111
# expect-info: FC124
set -euo pipefail
NNODES=${NNODES:-2}
TP=4
PP=2

OPTIM=(
    optim=megatron
    optim.lr=2e-5
    optim.lr_warmup_steps=10
    optim.weight_decay=0.1
    "optim.betas=[0.9,0.95]"
    optim.lr_decay_style=cosine
    optim.min_lr=2e-6
    +optim.override_optimizer_config.optimizer_cpu_offload=True
)
ENGINE=(
    engine=megatron
    engine.tensor_model_parallel_size=$TP
    engine.pipeline_model_parallel_size=$PP
    engine.context_parallel_size=1
    engine.use_mbridge=True
    engine.dtype=bfloat16
    +engine.override_transformer_config.recompute_method=uniform
    +engine.override_transformer_config.gradient_accumulation_fusion=False
)

torchrun --nnodes=$NNODES --nproc_per_node=8 -m verl.trainer.sft_trainer \
    data.train_files=/data/gsm8k_sft/train.parquet \
    data.train_batch_size=32 \
    data.micro_batch_size_per_gpu=4 \
    data.use_dynamic_bsz=False \
    data.max_length=2048 \
    data.messages_key=messages \
    model=hf_model \
    model.path=Qwen/Qwen2.5-7B-Instruct \
    model.trust_remote_code=True \
    "${OPTIM[@]}" \
    "${ENGINE[@]}" \
    trainer.total_epochs=1 \
    trainer.logger='["console"]'

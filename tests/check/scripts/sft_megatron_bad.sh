#!/usr/bin/env bash
# SFT on verl's Megatron engine with the FSDP optimizer config (optim=fsdp: verl builds McoreEngineConfig with
# FSDPOptimizerConfig): an error naming both options and the fix.
# expect-error: FC100 optim
torchrun --nnodes=1 --nproc_per_node=8 -m verl.trainer.sft_trainer \
    data.train_files=/data/gsm8k_sft/train.parquet \
    data.train_batch_size=32 \
    model.path=Qwen/Qwen2.5-7B-Instruct \
    engine=megatron \
    engine.tensor_model_parallel_size=2 \
    optim=fsdp \
    optim.lr=2e-5

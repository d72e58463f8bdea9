#!/usr/bin/env bash
# SFT on verl's Megatron engine, 8 GPUs with tensor parallel 2: 4 data-parallel ranks, so the batch of 8 is 2
# sequences per rank, smaller than the micro batch of 4: FC250 judges Megatron's data-parallel group.
# expect-error: FC250 engine.tensor_model_parallel_size
# expect-info: FC111
torchrun --nnodes=1 --nproc_per_node=8 -m verl.trainer.sft_trainer \
    data.train_files=/data/gsm8k_sft/train.parquet \
    data.train_batch_size=8 \
    data.micro_batch_size_per_gpu=4 \
    data.use_dynamic_bsz=false \
    model.path=Qwen/Qwen2.5-7B-Instruct \
    engine=megatron \
    optim=megatron \
    engine.tensor_model_parallel_size=2

#!/usr/bin/env bash
# SFT with torchrun where each rank's share of the batch (16 / 8 = 2) is smaller than its micro batch (4).
# expect-error: FC250 data.micro_batch_size_per_gpu
NPROC=${NPROC:-8}
python -m torch.distributed.run --nproc_per_node=$NPROC --nnodes=1 -m verl.trainer.sft_trainer \
    data.train_files=/data/gsm8k/train.parquet \
    data.train_batch_size=16 \
    data.micro_batch_size_per_gpu=4 \
    data.use_dynamic_bsz=false \
    model.path=Qwen/Qwen2.5-0.5B-Instruct

#!/usr/bin/env bash
# SFT with torchrun: bash sft_torchrun.sh <nproc_per_node> <save_path> [overrides...]
# args: 8 /tmp/ckpt
# expect: no errors
# expect-info: FC124 trainer.n_gpus_per_node
# expect-line: trainer.default_local_dir=22 trainer.n_gpus_per_node=15
set -xeuo pipefail
if [ "$#" -lt 2 ]; then
    echo "usage: $0 <nproc_per_node> <save_path> [overrides]"
    exit 1
fi
nproc_per_node=$1
save_path=$2
shift 2
torchrun --standalone --nnodes=1 --nproc_per_node=$nproc_per_node \
    -m verl.trainer.sft_trainer \
    data.train_files=/data/gsm8k/train.parquet \
    data.messages_key=messages \
    data.train_batch_size=64 \
    data.micro_batch_size_per_gpu=4 \
    model.path=Qwen/Qwen2.5-0.5B-Instruct \
    trainer.default_local_dir=$save_path \
    trainer.total_epochs=1 \
    "$@"

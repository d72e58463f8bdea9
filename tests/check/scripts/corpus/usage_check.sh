#!/bin/bash
# the verl SFT examples' usage check, given its two arguments
# oracle-args: 2 /tmp/sft_ckpt model.lora_rank=32
if [ "$#" -lt 2 ]; then
    echo "Usage: run.sh <nproc_per_node> <save_path> [other_configs...]"
    exit 1
fi
nproc_per_node=$1
save_path=$2
shift 2
torchrun --standalone --nnodes=1 --nproc_per_node=$nproc_per_node \
     -m verl.trainer.sft_trainer \
    data.train_files=$HOME/data/gsm8k/train.parquet \
    trainer.default_local_dir=$save_path $@

#!/bin/bash
# torchrun SFT, the first two arguments positional, the rest passed with ${@:3}
# oracle-args: 4 /tmp/ckpt1 trainer.total_epochs=2 optim.lr=1e-5
nproc_per_node=$1
save_path=$2
torchrun --standalone --nnodes=1 --nproc_per_node=$nproc_per_node \
    -m verl.trainer.sft_trainer \
    data.train_files=$HOME/data/gsm8k/train.parquet \
    data.micro_batch_size_per_gpu=4 \
    model.path=Qwen/Qwen3-8B \
    trainer.default_local_dir=$save_path \
    "${@:3}"

#!/bin/bash
# python -m torch.distributed.run as the launcher
NPROC=${NPROC:-4}
python -m torch.distributed.run --nnodes=1 --nproc_per_node=$NPROC -m verl.trainer.sft_trainer \
    model.path=Qwen/Qwen2.5-0.5B-Instruct data.micro_batch_size_per_gpu=2 optim.lr=2e-5

#!/bin/bash
# device detection by nvidia-smi's status (the stub succeeds)
# oracle-variant: `nvidia-smi >/dev/null 2>&1` true
if nvidia-smi >/dev/null 2>&1; then
    DEVICE=cuda
    N=8
else
    DEVICE=npu
    N=16
fi
python3 -m verl.trainer.main_ppo trainer.device=$DEVICE trainer.n_gpus_per_node=$N data.train_batch_size=64

#!/bin/bash
# set -- and shift
set -- first second data.train_batch_size=64
shift 2
python3 -m verl.trainer.main_ppo "$@" trainer.nnodes=1

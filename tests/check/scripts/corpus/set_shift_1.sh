#!/bin/bash
# set -- and shift
set -- first second data.train_batch_size=256
shift 2
python -m verl.trainer.main_ppo "$@" trainer.nnodes=1

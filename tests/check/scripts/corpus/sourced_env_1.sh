#!/bin/bash
# values from a sourced env file next to the script
source "$(dirname "$0")/common_1.env"
python -m verl.trainer.main_ppo actor_rollout_ref.model.path=$MODEL data.train_batch_size=$BATCH trainer.nnodes=$NODES

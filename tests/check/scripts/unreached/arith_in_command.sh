#!/bin/bash
# an arithmetic error in the trainer command's own words: bash abandons the command and goes on
GPUS=8
NODES=0
python3 -m verl.trainer.main_ppo \
    data.train_batch_size=$((GPUS * 8)) \
    actor_rollout_ref.actor.ppo_mini_batch_size=$((64 / NODES)) \
    trainer.n_gpus_per_node=$GPUS
echo "submitted"

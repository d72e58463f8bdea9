#!/bin/bash
# arithmetic errors: bash abandons the statement that holds one (a whole loop, an assignment) and goes on
NODES=0
GPUS=8
per_node=$((64 / NODES))
mini=${per_node:-16}
for scale in 1 2; do
    lr_steps=$((100 / (scale - scale)))
done
warm=$(( 2 ** 70 ))
big=$(( 9223372036854775807 + 1 ))
python3 -m verl.trainer.main_ppo \
    data.train_batch_size=$((GPUS * 8)) \
    actor_rollout_ref.actor.ppo_mini_batch_size=$mini \
    actor_rollout_ref.actor.optim.lr_warmup_steps=${lr_steps:-5} \
    trainer.experiment_name=w${warm}_b${big} \
    trainer.n_gpus_per_node=$GPUS

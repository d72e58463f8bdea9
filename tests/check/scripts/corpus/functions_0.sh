#!/usr/bin/env bash
# a launch function called twice with its own arguments
run_one() {
    local lr=$1
    local exp=$2
    shift 2
    python3 -m verl.trainer.main_ppo actor_rollout_ref.actor.optim.lr=$lr trainer.experiment_name=$exp "$@"
}
for lr in 1e-6 3e-6; do
    run_one $lr "exp_${lr}" data.train_batch_size=64
done

#!/bin/bash
# a grid over two lists: one command per combination
for n in 4 8; do
    for kl in 0.001 0.01; do
        python -m verl.trainer.main_ppo actor_rollout_ref.rollout.n=$n actor_rollout_ref.actor.kl_loss_coef=$kl \
            trainer.experiment_name=grid_n${n}_kl${kl}_1
    done
done

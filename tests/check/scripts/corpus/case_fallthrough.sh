#!/bin/bash
# case with several patterns per branch and a glob
# oracle-args: qwen2.5-7b
MODEL_SIZE=$1
case "$MODEL_SIZE" in
    *0.5b|*1.5b) TP=1; MICRO=8 ;;
    *7b|*8b) TP=2; MICRO=4 ;;
    *) TP=8; MICRO=1 ;;
esac
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.tensor_model_parallel_size=$TP \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=$MICRO

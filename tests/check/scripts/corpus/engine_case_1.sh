#!/bin/bash
# a case on a variable the script sets from an argument
# oracle-args: vllm
ENGINE=${1:-vllm}
case "$ENGINE" in
    vllm) MEM=0.6; TP=2 ;;
    sglang) MEM=0.5; TP=4 ;;
    *) echo "no such engine"; exit 1 ;;
esac
python -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=$ENGINE \
    actor_rollout_ref.rollout.gpu_memory_utilization=$MEM \
    actor_rollout_ref.rollout.tensor_model_parallel_size=$TP

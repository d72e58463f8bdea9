#!/bin/bash
# case "$1" dispatch with shift, the rest passed on
# oracle-args: rl trainer.total_epochs=4
cmd=$1
shift
case "$cmd" in
    sft)
        torchrun --nproc_per_node=8 -m verl.trainer.sft_trainer model.path=Qwen/Qwen3-8B "$@"
        ;;
    rl)
        python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen3-8B "$@"
        ;;
esac

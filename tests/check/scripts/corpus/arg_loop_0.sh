#!/bin/bash
# an argument loop; run with arguments
# oracle-args: --model /models/m0 --nodes 2 --lr 2e-6 trainer.total_epochs=3
MODEL=/models/default
NODES=1
LR=1e-6
EXTRA_ARGS=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --model) MODEL=$2; shift 2 ;;
        --nodes) NODES=$2; shift 2 ;;
        --lr) LR="$2"; shift 2 ;;
        *) EXTRA_ARGS+=("$1"); shift ;;
    esac
done
python3 -m verl.trainer.main_ppo \
    actor_rollout_ref.model.path=$MODEL \
    actor_rollout_ref.actor.optim.lr=$LR \
    data.train_batch_size=64 \
    trainer.nnodes=$NODES \
    "${EXTRA_ARGS[@]}"

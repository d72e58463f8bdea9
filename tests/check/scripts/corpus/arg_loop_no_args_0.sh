#!/bin/bash
# an argument loop run without arguments: it runs zero times, as in bash
# oracle-variant: no arguments
MODEL=/models/default0
LR=1e-6
while [ "$#" -gt 0 ]; do
    case $1 in
        -m|--model) MODEL="$2"; shift; shift ;;
        --lr=*) LR="${1#*=}"; shift ;;
        *) echo "unknown $1"; exit 1 ;;
    esac
done
python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=$MODEL actor_rollout_ref.actor.optim.lr=$LR data.train_batch_size=64

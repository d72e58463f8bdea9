#!/bin/bash
# an until loop over given arguments
# oracle-args: a b c
COUNT=0
until [ $# -eq 0 ]; do
    COUNT=$((COUNT + 1))
    shift
done
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.n=$COUNT

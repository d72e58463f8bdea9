#!/bin/bash
# overrides built as one string with line continuations, expanded unquoted
ACTOR="actor_rollout_ref.actor.optim.lr=1e-6 \
    actor_rollout_ref.actor.ppo_mini_batch_size=16"
ROLLOUT="
    actor_rollout_ref.rollout.n=5 \
    actor_rollout_ref.rollout.temperature=1.0"
ALL="$ACTOR $ROLLOUT"
python3 -m verl.trainer.main_ppo $ALL data.train_batch_size=64

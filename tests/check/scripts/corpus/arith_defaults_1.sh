#!/bin/bash
# arithmetic in defaults
NNODES=${NNODES:-2}
GPUS=8
max_prompt_length=${MAX_PROMPT:-$((1024 * 2))}
max_response_length=$((1024 * 5))
world=$((NNODES * GPUS))
ppo_max_token_len=${PPO_MAX:-$(((max_prompt_length + max_response_length) * 2))}
bs=${BS:-$((world * 4))}
python -m verl.trainer.main_ppo \
    data.max_prompt_length=$max_prompt_length \
    data.max_response_length=$max_response_length \
    data.train_batch_size=$bs \
    actor_rollout_ref.actor.ppo_max_token_len_per_gpu=$ppo_max_token_len \
    trainer.nnodes=$NNODES

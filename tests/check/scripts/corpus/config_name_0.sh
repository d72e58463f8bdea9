#!/bin/bash
# --config-path/--config-name and a file path to the trainer
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python3 -m verl.trainer.main_ppo --config-path="$HERE/config" --config-name='ppo_megatron_trainer' \
    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2 \
    data.train_batch_size=64

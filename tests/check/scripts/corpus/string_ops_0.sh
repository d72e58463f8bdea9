#!/bin/bash
# parameter expansion: case changes, prefix/suffix removal, replacement
MODEL_PATH=/models/Qwen/Qwen2.5-0B-Instruct
ENGINE=VLLM
NAME=${MODEL_PATH##*/}
BASE=${MODEL_PATH%/*}
python3 -m verl.trainer.main_ppo \
    actor_rollout_ref.rollout.name=${ENGINE,,} \
    trainer.experiment_name=${NAME/Instruct/it} \
    trainer.project_name=${NAME^^} \
    trainer.default_local_dir=$BASE/ckpt \
    actor_rollout_ref.model.path=$MODEL_PATH

#!/bin/bash
# paths relative to the script's own folder
SCRIPT_DIR=$(dirname "$(realpath "${BASH_SOURCE[0]}")")
PROJECT_DIR=$(cd "$SCRIPT_DIR/.." && pwd)
python3 -m verl.trainer.main_ppo \
    reward.custom_reward_function.path=$PROJECT_DIR/reward/score.py \
    data.train_files=$SCRIPT_DIR/data/train.parquet \
    trainer.default_local_dir=${PROJECT_DIR}/checkpoints/$(basename "$SCRIPT_DIR")

#!/bin/bash
# two unbraced variables in one word
DATA_ROOT=/mnt/data
TASK=gsm8k1
CKPT=$HOME/ckpt
python -m verl.trainer.main_ppo \
    data.train_files=$DATA_ROOT/$TASK/train.parquet \
    data.val_files=$DATA_ROOT/$TASK/test.parquet \
    trainer.default_local_dir=$CKPT/$TASK-run \
    actor_rollout_ref.model.path=$DATA_ROOT/models/$TASK

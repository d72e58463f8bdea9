#!/bin/bash
# ${VAR:?msg} with the variable given in the environment
# oracle-env: MODEL_PATH=/models/given1 DATA_DIR=/data/d1
set -euo pipefail
: "${MODEL_PATH:?set MODEL_PATH}"
DATA=${DATA_DIR:?need DATA_DIR}/train.parquet
python -m verl.trainer.main_ppo actor_rollout_ref.model.path=$MODEL_PATH data.train_files=$DATA

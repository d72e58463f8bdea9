#!/usr/bin/env bash
# stage script: functions and a case on the stage
# oracle-args: train
set -e
STAGE=${1:-all}
prepare() {
    python3 examples/data_preprocess/gsm8k.py --local_dir "$HOME/data/gsm8k"
}
train() {
    local lr=$1
    shift
    python3 -m verl.trainer.main_ppo \
        data.train_files=$HOME/data/gsm8k/train.parquet \
        actor_rollout_ref.model.path=Qwen/Qwen3-8B \
        actor_rollout_ref.actor.optim.lr=$lr \
        "$@"
}
case "$STAGE" in
    prep) prepare ;;
    train) train 1e-6 trainer.total_epochs=2 ;;
    all) prepare; train 3e-6 ;;
esac

#!/usr/bin/env bash
# verl-examples style: parameter arrays and a device probe (torch_npu); the stub python3 fails the probe
# oracle-variant: DEVICE=gpu
set -xeuo pipefail
DEVICE=${DEVICE:-$(python3 -c 'import torch_npu' 2>/dev/null && echo npu || echo gpu)}
MODEL_PATH=${MODEL_PATH:-Qwen/Qwen2.5-0.5B-Instruct}
train_batch_size=${TRAIN_BATCH_SIZE:-64}
EXTRA=()
case "${DEVICE}" in
    gpu)
        rollout_tp=2
        NGPUS_PER_NODE=${NGPUS_PER_NODE:-8}
        ;;
    npu)
        rollout_tp=4
        NGPUS_PER_NODE=16
        EXTRA+=(actor_rollout_ref.actor.use_torch_compile=False)
        ;;
esac
DATA=(
    algorithm.adv_estimator=grpo
    data.train_files="['$HOME/data/gsm8k/train.parquet', '$HOME/data/math/train.parquet']"
    data.train_batch_size=${train_batch_size}
    data.truncation='error'
)
ROLLOUT=(
    actor_rollout_ref.rollout.name=vllm
    actor_rollout_ref.rollout.tensor_model_parallel_size=${rollout_tp}
)
TRAINER=(
    trainer.logger='["console","wandb"]'
    trainer.n_gpus_per_node=${NGPUS_PER_NODE}
)
python3 -m verl.trainer.main_ppo \
    "${DATA[@]}" \
    actor_rollout_ref.model.path="$MODEL_PATH" \
    "${ROLLOUT[@]}" \
    "${TRAINER[@]}" \
    "${EXTRA[@]}" \
    "$@"

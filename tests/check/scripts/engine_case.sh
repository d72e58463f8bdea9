#!/usr/bin/env bash
# One script for both rollout engines, chosen by the first argument: bash run.sh [vllm|sglang] [GPUS]
# expect: no errors
# expect-info: FC106 actor_rollout_ref.model.path
ENGINE=${1:-vllm}
[ "$#" -gt 0 ] && shift
GPUS=${1:-8}
[ "$#" -gt 0 ] && shift

case "$ENGINE" in
    vllm)
        ROLLOUT_ARGS=(actor_rollout_ref.rollout.name=vllm actor_rollout_ref.rollout.gpu_memory_utilization=0.6)
        ;;
    sglang)
        ROLLOUT_ARGS=(actor_rollout_ref.rollout.name=sglang actor_rollout_ref.rollout.gpu_memory_utilization=0.5)
        ;;
    *)
        echo "unknown engine $ENGINE" >&2
        exit 1
        ;;
esac

if [[ "$ENGINE" == sglang ]]; then
    ROLLOUT_ARGS+=(actor_rollout_ref.rollout.tensor_model_parallel_size=1)
fi

python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    data.train_files=/data/gsm8k/train.parquet \
    data.train_batch_size=128 \
    actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct \
    actor_rollout_ref.actor.ppo_mini_batch_size=32 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 \
    actor_rollout_ref.rollout.n=4 \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8 \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8 \
    "${ROLLOUT_ARGS[@]}" \
    trainer.n_gpus_per_node=$GPUS \
    "$@"

#!/usr/bin/env bash
# GRPO on GSM8K, FSDP2, overrides grouped in bash arrays (the verl 0.9 example style).
# expect: no errors
# expect-info: FC120 data.train_files
# expect-line: actor_rollout_ref.actor.ppo_mini_batch_size=24 actor_rollout_ref.rollout.tensor_model_parallel_size=34
set -xeuo pipefail

MODEL_PATH=${MODEL_PATH:-Qwen/Qwen2.5-0.5B-Instruct}
NGPUS=${NGPUS:-8}
TRAIN_BS=${TRAIN_BS:-256}
MINI_BS=$((TRAIN_BS / 4))

DATA=(
    algorithm.adv_estimator=grpo
    data.train_files=$HOME/data/gsm8k/train.parquet
    data.val_files=$HOME/data/gsm8k/test.parquet
    data.train_batch_size=${TRAIN_BS}
    data.max_prompt_length=512
    data.max_response_length=1024
)
ACTOR=(
    actor_rollout_ref.model.path="${MODEL_PATH}"
    actor_rollout_ref.actor.strategy=fsdp2
    actor_rollout_ref.actor.ppo_mini_batch_size=${MINI_BS}
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4
    actor_rollout_ref.actor.use_kl_loss=True
)
ROLLOUT=(
    actor_rollout_ref.rollout.name=vllm
    actor_rollout_ref.rollout.n=5
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8
)
ROLLOUT+=(actor_rollout_ref.rollout.tensor_model_parallel_size=2)
TRAINER=(
    trainer.logger='["console"]'
    trainer.n_gpus_per_node=${NGPUS}
    trainer.nnodes=1
)

python3 -m verl.trainer.main_ppo "${DATA[@]}" "${ACTOR[@]}" "${ROLLOUT[@]}" "${TRAINER[@]}" "$@"

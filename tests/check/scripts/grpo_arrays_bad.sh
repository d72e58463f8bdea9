#!/usr/bin/env bash
# The same style with a mistake: the micro batch (32) is larger than each rank's share of the mini batch
# (64 prompts x 5 samples / 8 GPUs = 40 is fine, but 16 x 5 / 8 = 10 is not).
# expect-error: FC205 actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu
set -x
MINI_BS=16
ACTOR=(
    actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct
    actor_rollout_ref.actor.ppo_mini_batch_size=${MINI_BS}
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=32
)
python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    data.train_files=/data/gsm8k/train.parquet \
    data.train_batch_size=64 \
    "${ACTOR[@]}" \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.n=5 \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8 \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8 \
    trainer.n_gpus_per_node=8

#!/usr/bin/env bash
# The tensor-parallel size comes from a `case` on a command's output, which the check does not run: each
# branch is checked as a path of its own (ACCEL=*H100*, ACCEL=other), so the Megatron actor's data-parallel
# size is known along each and no batch rule judges verl's default (TP 1, 16 data-parallel ranks, where
# 4 x 2 = 8 sequences per mini batch would be half a sequence per rank). Either branch splits evenly: TP 4
# gives 4 data-parallel ranks, TP 8 gives 2.
# expect: no errors
# expect-commands: 2
set -euo pipefail
ACCEL=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$ACCEL" in
    *H100*) TP=4 ;;
    *) TP=8 ;;
esac

python3 -m verl.trainer.main_ppo --config-path=config \
    --config-name='ppo_megatron_trainer.yaml' \
    algorithm.adv_estimator=grpo \
    data.train_files=/data/gsm8k/train.parquet \
    data.train_batch_size=16 \
    actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct \
    actor_rollout_ref.actor.ppo_mini_batch_size=4 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 \
    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=$TP \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.n=2 \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2 \
    trainer.n_gpus_per_node=8 \
    trainer.nnodes=2

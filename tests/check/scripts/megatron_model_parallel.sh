#!/usr/bin/env bash
# Megatron GRPO on 3 nodes of 8 GPUs with tensor parallel 4 x pipeline parallel 3: the data-parallel group is
# 24 / (4 x 3) = 2 ranks, so the mini batch of 64 x 5 = 320 sequences is 160 per rank (10 micro batches of 16)
# and the 192 x 5 = 960 sequences of a step are 480 per rank (30 log-prob micro batches of 16). Before the
# batch rules knew Megatron's layout they divided by all 24 ranks and reported FC204/FC205 here.
# expect: no errors
# expect-info: FC111
set -euo pipefail
NNODES=${NNODES:-3}
GPUS=${GPUS:-8}
TP=4
PP=3
MICRO=16

python3 -m verl.trainer.main_ppo --config-path=config \
    --config-name='ppo_megatron_trainer.yaml' \
    algorithm.adv_estimator=grpo \
    data.train_files=/data/gsm8k/train.parquet \
    data.train_batch_size=192 \
    actor_rollout_ref.model.path=moonshotai/Moonlight-16B-A3B \
    actor_rollout_ref.actor.ppo_mini_batch_size=64 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=$MICRO \
    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=$TP \
    actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=$PP \
    actor_rollout_ref.ref.megatron.tensor_model_parallel_size=$TP \
    actor_rollout_ref.ref.megatron.pipeline_model_parallel_size=$PP \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.tensor_model_parallel_size=4 \
    actor_rollout_ref.rollout.n=5 \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=$MICRO \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=$MICRO \
    actor_rollout_ref.actor.use_kl_loss=True \
    trainer.n_gpus_per_node=$GPUS \
    trainer.nnodes=$NNODES

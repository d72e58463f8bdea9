#!/usr/bin/env bash
# Submit to a running Ray cluster; the working dir and env vars travel in the runtime env.
# expect: no errors
# expect-info: FC107 trainer.nnodes
RAY_ADDRESS=${RAY_ADDRESS:-http://127.0.0.1:8265}
NNODES=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | wc -l)
ray job submit --address="${RAY_ADDRESS}" \
    --runtime-env-json='{"env_vars": {"NCCL_DEBUG": "WARN"}}' \
    --no-wait \
    -- python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    data.train_files=/data/gsm8k/train.parquet \
    data.train_batch_size=128 \
    actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct \
    actor_rollout_ref.actor.ppo_mini_batch_size=32 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 \
    actor_rollout_ref.rollout.name=sglang \
    actor_rollout_ref.rollout.n=4 \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8 \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8 \
    trainer.n_gpus_per_node=8 \
    trainer.nnodes=$NNODES

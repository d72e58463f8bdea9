#!/usr/bin/env bash
# Values only the shell knows: a command substitution, an unset variable, a file test on the cluster (each
# branch of the file test is a path checked on its own; the other two values stay unknown: FC107).
# expect: no errors
# expect-commands: 2
# expect-info: FC107 trainer.n_gpus_per_node
# expect-info: FC107 data.train_files
GPUS=$(nvidia-smi -L | wc -l)
if [ -d /mnt/fast/models ]; then
    ENGINE=sglang
else
    ENGINE=vllm
fi
python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    data.train_files=$DATA_DIR/train.parquet \
    data.train_batch_size=128 \
    actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct \
    actor_rollout_ref.actor.ppo_mini_batch_size=32 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 \
    actor_rollout_ref.rollout.name=$ENGINE \
    actor_rollout_ref.rollout.n=4 \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8 \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8 \
    trainer.n_gpus_per_node=$GPUS

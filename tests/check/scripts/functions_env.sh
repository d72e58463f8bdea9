#!/usr/bin/env bash
# Two runs from one function (a learning-rate pair), each with env-prefix settings; two commands, each checked.
# expect: no errors
# expect-commands: 2
common=(
    algorithm.adv_estimator=grpo
    data.train_files=/data/gsm8k/train.parquet
    data.train_batch_size=128
    actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct
    actor_rollout_ref.actor.ppo_mini_batch_size=32
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4
    actor_rollout_ref.rollout.name=vllm
    actor_rollout_ref.rollout.n=4
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8
    trainer.n_gpus_per_node=8
)

launch() {
    local lr=$1
    shift
    HYDRA_FULL_ERROR=1 VLLM_USE_V1=1 python3 -m verl.trainer.main_ppo "${common[@]}" \
        actor_rollout_ref.actor.optim.lr=$lr trainer.experiment_name="lr_${lr}" "$@"
}

for lr in 1e-6 3e-6; do
    launch $lr trainer.total_epochs=2
done

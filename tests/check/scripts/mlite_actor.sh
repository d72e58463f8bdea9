#!/usr/bin/env bash
# GRPO with an actor from an out-of-tree backend: a hydra.searchpath package adds the option `mlite_actor` to verl's
# `actor` group (the megatron-lite style), and the script then sets that actor's own keys (engine.tp, engine.ep,
# engine.impl_cfg.*) that neither fsdpcfg's tree nor verl 0.9.1's ppo_trainer has. verl composes them; fsdpcfg
# names the option and those keys as not checked (FC108) instead of calling them unknown (false FC101/FC102 with
# did-you-means of the rollout's mtp section, Adam's eps and veomni's param_offload), and still checks the rest.
# 4 nodes x 8 GPUs with engine.tp x engine.ep = 2 x 4: the data-parallel split is the backend's, not judged.
# expect: no errors
# expect-info: FC108
set -xeuo pipefail

NODES=${NODES:-4}
GPUS=${GPUS:-8}
TP=${TP:-2}
EP=${EP:-4}
OFFLOAD=${OFFLOAD:-True}

PLUGIN=(hydra.searchpath=[pkg://verl_mlite.config])

POLICY=(
    actor@actor_rollout_ref.actor=mlite_actor
    actor_rollout_ref.actor.optim.lr=5e-7
    actor_rollout_ref.actor.ppo_mini_batch_size=8
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1
    actor_rollout_ref.actor.use_dynamic_bsz=True
    actor_rollout_ref.actor.ppo_max_token_len_per_gpu=8192
    actor_rollout_ref.actor.engine.tp=${TP}
    actor_rollout_ref.actor.engine.ep=${EP}
    actor_rollout_ref.actor.engine.pp=1
    actor_rollout_ref.actor.engine.param_offload=${OFFLOAD}
    actor_rollout_ref.actor.engine.optimizer_offload=${OFFLOAD}
    actor_rollout_ref.actor.engine.impl_cfg.use_thd=True
    +actor_rollout_ref.actor.engine.impl_cfg.optimizer=dist_opt
    +actor_rollout_ref.actor.optim.override_optimizer_config.offload_fraction=0.25
)

GEN=(
    actor_rollout_ref.rollout.name=vllm
    actor_rollout_ref.rollout.tensor_model_parallel_size=8
    actor_rollout_ref.rollout.n=8
    actor_rollout_ref.rollout.gpu_memory_utilization=0.5
)

python3 -m verl.trainer.main_ppo \
    "${PLUGIN[@]}" \
    algorithm.adv_estimator=grpo \
    algorithm.use_kl_in_reward=False \
    data.train_files=$HOME/data/dapo/train.parquet \
    data.train_batch_size=64 \
    data.max_prompt_length=1024 \
    data.max_response_length=4096 \
    actor_rollout_ref.model.path=Qwen/Qwen3-30B-A3B \
    "${POLICY[@]}" \
    "${GEN[@]}" \
    critic.enable=False \
    trainer.logger=[console] \
    trainer.nnodes=${NODES} \
    trainer.n_gpus_per_node=${GPUS} \
    "$@"

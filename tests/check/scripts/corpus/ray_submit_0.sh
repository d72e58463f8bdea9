#!/usr/bin/env bash
# ray job submit ... -- python3 -m verl.trainer.main_ppo
RAY_ADDRESS=${RAY_ADDRESS:-http://127.0.0.1:8265}
WORKING_DIR=${WORKING_DIR:-$PWD}
ray job submit --address="${RAY_ADDRESS}" \
    --runtime-env-json='{"env_vars": {"NCCL_DEBUG": "WARN"}}' \
    --working-dir "${WORKING_DIR}" \
    -- python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    data.train_batch_size=64 \
    actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct \
    trainer.nnodes=1 \
    trainer.n_gpus_per_node=8 "$@"

#!/bin/bash
# env-prefix assignments and exported variables
export VLLM_USE_V1=1
export PROJECT=proj1
HYDRA_FULL_ERROR=1 CUDA_VISIBLE_DEVICES=0,1 python -m verl.trainer.main_ppo \
    trainer.project_name=$PROJECT trainer.n_gpus_per_node=2 \
    actor_rollout_ref.rollout.name=vllm 2>&1 | tee train_1.log

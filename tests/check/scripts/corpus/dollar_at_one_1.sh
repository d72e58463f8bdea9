#!/bin/bash
# "${@:1}" passes every argument
# oracle-args: data.train_batch_size=256 trainer.project_name=p1
python -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen3-8B "${@:1}"

#!/bin/bash
# "${@:1}" passes every argument
# oracle-args: data.train_batch_size=64 trainer.project_name=p0
python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct "${@:1}"

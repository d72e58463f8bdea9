#!/usr/bin/env bash
# Generation and evaluation with verl's other entry points, and a module verl 0.9.1 does not have.
# expect-warning: FC125
# expect-info: FC121
# expect-commands: 3
python3 -m verl.trainer.main_generation_server actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct
python3 -m verl.trainer.main_eval data.path=/data/out.parquet
python3 -m verl.trainer.main_ppo_sync algorithm.adv_estimator=grpo
python3 scripts/preprocess.py --out /data

#!/usr/bin/env bash
# Generation and evaluation with verl's other entry points, and a module verl never had (a removed one,
# main_ppo_sync, is FC708: tests/check/test_fix.py).
# expect-warning: FC125
# expect-info: FC121
# expect-commands: 3
python3 -m verl.trainer.main_generation_server actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct
python3 -m verl.trainer.main_eval data.path=/data/out.parquet
python3 -m verl.trainer.main_dpo algorithm.adv_estimator=grpo
python3 scripts/preprocess.py --out /data

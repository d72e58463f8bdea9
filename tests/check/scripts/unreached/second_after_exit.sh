#!/bin/bash
# two stages; the script exits after the first, so the second stage's trainer never runs
python3 -m verl.trainer.main_ppo data.train_batch_size=64 trainer.experiment_name=stage1
exit 0
python3 -m verl.trainer.main_ppo data.train_batch_size=64 trainer.experiment_name=stage2

#!/bin/bash
# nohup in the background, then exec
mkdir -p logs
nohup python -m verl.trainer.main_ppo trainer.experiment_name=bg1 > logs/bg.log 2>&1 &
wait
exec python -m verl.trainer.main_ppo trainer.experiment_name=fg1 data.train_batch_size=256
echo never

#!/bin/bash
# nohup in the background, then exec
mkdir -p logs
nohup python3 -m verl.trainer.main_ppo trainer.experiment_name=bg0 > logs/bg.log 2>&1 &
wait
exec python3 -m verl.trainer.main_ppo trainer.experiment_name=fg0 data.train_batch_size=64
echo never

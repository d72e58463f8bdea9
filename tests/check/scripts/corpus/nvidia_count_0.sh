#!/bin/bash
# the GPU count from nvidia-smi's output: the check cannot know it (one unknown word)
# oracle-unknown: 1
NGPU=$(nvidia-smi --list-gpus | wc -l)
python3 -m verl.trainer.main_ppo trainer.n_gpus_per_node=$NGPU data.train_batch_size=64

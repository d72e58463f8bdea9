#!/bin/bash
# the trainer runs inside a function whose call hits an arithmetic error before it: the whole call is abandoned
train() {
    local steps=$(( $1 ** -1 ))
    python3 -m verl.trainer.main_ppo data.train_batch_size=64 trainer.total_training_steps=$steps
}
train 2
echo done

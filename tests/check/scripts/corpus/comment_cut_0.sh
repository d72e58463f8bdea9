#!/bin/bash
# a command cut by `\ # comment`: bash passes ' #' and the comment's words, and ends the command there
python3 -m verl.trainer.main_ppo \
    data.train_batch_size=64 \
    actor_rollout_ref.actor.optim.lr=1e-6 \ # learning rate
    trainer.total_epochs=2

#!/bin/bash
# quoting: lists, strings with blanks, single quotes around interpolations
NAME="my run 0"
python3 -m verl.trainer.main_ppo \
    data.train_files="['/d/a.parquet','/d/b.parquet']" \
    trainer.logger='["console","wandb"]' \
    trainer.experiment_name="$NAME" \
    'actor_rollout_ref.rollout.max_num_batched_tokens=${oc.select:data.max_prompt_length}' \
    +actor_rollout_ref.model.override_config.attention_dropout=0.0

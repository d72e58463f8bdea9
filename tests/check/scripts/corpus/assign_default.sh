#!/bin/bash
# ${VAR:=default} and ${VAR-default}
: ${EPOCHS:=3}
: "${PROJECT:=verl_demo}"
EMPTY=
python3 -m verl.trainer.main_ppo trainer.total_epochs=$EPOCHS trainer.project_name=$PROJECT trainer.experiment_name=${EMPTY-unused}x

#!/bin/bash
# a guard that always fires (the script sets the value it tests): the trainer after it is never run
set -euo pipefail
MODE=debug
die() { echo "$*" >&2; exit 1; }
if [[ "$MODE" == debug ]]; then
    die "debug mode: not launching"
fi
python3 -m verl.trainer.main_ppo data.train_batch_size=64 trainer.n_gpus_per_node=8

#!/usr/bin/env bash
# Set up fsdpcfg on a fresh machine: a virtual environment in .venv with the training stack, verl 0.9.1
# (CPU-installable core), the test tools, and the offline assets. Idempotent; safe to rerun.
#   EXTRAS=train,test bash scripts/setup.sh     # choose extras (default: train,test,verl,sweep)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
EXTRAS=${EXTRAS:-train,test,verl,sweep}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
. .venv/bin/activate
export PIP_DISABLE_PIP_VERSION_CHECK=1
python -m pip install -q --upgrade pip
# torch first, pinned: the CPU wheel on this machine; a looser pin would pull a multi-GB CUDA build.
python -m pip install -q -c constraints.txt "torch==2.13.0"
python -m pip install -q -c constraints.txt -e ".[${EXTRAS}]"
# The offline assets: tiny checkpoints of real architectures, built deterministically (seconds).
python -m fsdpcfg assets build

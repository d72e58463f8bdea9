#!/usr/bin/env bash
# The GPU check: fsdpcfg's CUDA path measured in one command (benchmarks/gpu_check.py has the details).
#
#   bash scripts/gpu_check.sh RESULTS_DIR [--dry-run] [--parts a,b]   # on a machine with one CUDA GPU
#   python benchmarks/gpu_check.py prepare                             # first, where PyPI is reachable: .whl/
#
# On a machine with one CUDA GPU and its own PyTorch (Python 3.12, no package registry), it installs Hydra,
# OmegaConf and Pydantic from the wheel folder .whl/ of this checkout into a private folder, then runs, each part
# under its own time limit and all within 450 s: the native GRPO loop (trainer=gpu_1x: NCCL, bf16, FSDP2 then
# FSDP1) on the full-size Qwen2.5-0.5B-Instruct architecture with random weights, 10 steps each (step time per
# phase, tokens/s, MFU, peak CUDA memory beside fsdpcfg's estimate, actor vs rollout log-probs after the first two
# weight syncs), and `fsdpcfg doctor` on CUDA for tiny Qwen2, Llama and Mixtral. It writes RESULTS_DIR/
# gpu_check.json, gpu_check.md and gpu_check.log; a failing part is recorded there and the others still run.
#
# The one command a later session runs (tool `run`; .whl/ is git-ignored, so it travels only through carry):
#
#   run(command="bash scripts/gpu_check.sh $OUT", carry=[".whl"], timeout_s=540)
#
# and, to rerun only what failed: run(command="bash scripts/gpu_check.sh $OUT --parts grpo_fsdp", carry=[".whl"],
# timeout_s=300).
set -euo pipefail
if [ $# -lt 1 ]; then
    echo "usage: bash scripts/gpu_check.sh RESULTS_DIR [--dry-run] [--parts a,b]" >&2
    exit 2
fi
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-$(command -v python3 || command -v python)}"
RESULTS="$1"
shift
cd "$ROOT"
exec "$PY" benchmarks/gpu_check.py run "$RESULTS" "$@"

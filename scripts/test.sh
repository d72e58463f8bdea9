#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run every test, slow and distributed ones included.
#   bash scripts/test.sh                 # everything
#   bash scripts/test.sh -m "not slow"   # the quick subset
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
exec python -m pytest "$@"

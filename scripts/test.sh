#!/usr/bin/env bash
# Set up (scripts/setup.sh), lint (ruff check, ruff format --check), type-check (mypy, configured in
# pyproject.toml) and run every test, slow and distributed ones included. Any failing step fails the script.
#   bash scripts/test.sh                 # linters, then every test, on every core (pytest-xdist)
#   bash scripts/test.sh -m "not slow"   # linters, then the quick subset (arguments go to pytest; plain
#                                        # `pytest` runs that subset too: pyproject.toml's addopts)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
# Python writes each module's compiled form (.pyc) and pytest its rewritten tests: the ~100 Python processes of a
# run (workers, CLI calls, torchrun ranks) then compile fsdpcfg once, not once each (a machine may set this off).
unset PYTHONDONTWRITEBYTECODE
echo "== ruff check" >&2
ruff check .
echo "== ruff format --check" >&2
ruff format --check .
echo "== mypy" >&2
mypy
echo "== assets the end-to-end tests train from" >&2
# built once here rather than inside whichever test first asks for them (the warm-started arith model trains)
python -m fsdpcfg assets build --name tiny-qwen2-arith
echo "== pytest" >&2
exec python -m pytest -m "slow or not slow" "$@"

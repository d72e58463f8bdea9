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
echo "== ruff check" >&2
ruff check .
echo "== ruff format --check" >&2
ruff format --check .
echo "== mypy" >&2
mypy
echo "== pytest" >&2
exec python -m pytest -n auto --dist worksteal -m "slow or not slow" "$@"

#!/usr/bin/env bash
# Set everything up and run the whole test suite (what CI runs).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
# The type checker first: strict for the core (pyproject.toml [tool.mypy]); any error fails the run.
.venv/bin/python -m mypy
exec .venv/bin/python -m pytest -n 2 --dist loadgroup -q "$@"

#!/usr/bin/env bash
# Set up chunkscope in ./.venv on a fresh machine, with everything: the CPU build of torch first (an unpinned
# torch pulls gigabytes of CUDA packages), then the project with its `retrieval` extra (index, query, eval, probe,
# sweep). With --test, the `test` extra too (every extra, pytest, import-linter, pre-commit).
# (`pip install chunkscope` alone is the light install: chunk, stats, lint, compare and the explorer, no torch.)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet torch==2.13.0
if [ "${1:-}" = "--test" ]; then
    .venv/bin/python -m pip install --quiet -e ".[retrieval,test]"
    # tests/test_report.py opens `chunkscope report`'s page in a real headless Chromium (Debian's package);
    # without apt-get (or without root) those tests are skipped with the reason.
    if ! command -v chromium >/dev/null && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
        apt-get update -qq && apt-get install -y -qq chromium >/dev/null
    fi
else
    .venv/bin/python -m pip install --quiet -e ".[retrieval]"
fi
# Byte-compile the project as a regular (non-editable) install would: where PYTHONDONTWRITEBYTECODE is set,
# an editable install otherwise recompiles every module at each start (a tenth of a second of the app's).
.venv/bin/python -m compileall -q src

#!/usr/bin/env bash
# Set up everything from scratch and run the whole test suite.
# Usage: bash scripts/test.sh [pytest args]      (VENV=path to use another virtualenv)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
PYTHON="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip install --quiet --disable-pip-version-check)
# torch first and pinned: the CPU build (2.13.0) lies on this machine's disk; anything unpinned
# would download a CUDA build.
"${PIP[@]}" "torch==2.13.0"
"${PIP[@]}" -r requirements-test.txt
"${PIP[@]}" -e ".[test]"
exec "$VENV/bin/python" -m pytest "$@"

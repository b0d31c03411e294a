#!/usr/bin/env bash
# Set up the development virtualenv from scratch (idempotent): torch first and pinned, then the
# patients the tests inspect, then bnbdoctor itself, editable, with its test and static-check tools
# (the `test` and `dev` extras of pyproject.toml).
# Usage: bash scripts/setup.sh      (VENV=path to use another virtualenv, PYTHON=interpreter to create it)
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
"${PIP[@]}" -e ".[test,dev]"

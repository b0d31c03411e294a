#!/usr/bin/env bash
# Set up everything from scratch (scripts/setup.sh) and run the whole test suite.
# Usage: bash scripts/test.sh [pytest args]      (VENV=path to use another virtualenv)
#   bash scripts/test.sh -m "not slow and not network"    the fast suite (under a minute)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
VENV="$VENV" bash scripts/setup.sh
exec "$VENV/bin/python" -m pytest "$@"

#!/usr/bin/env bash
# The static checks, in this order: ruff check, ruff format --check, mypy (strict, pyproject.toml),
# lint-imports (the layer contracts in pyproject.toml). Runs them all, then exits non-zero if any
# of them found something. CI runs this before the tests (.ci/run); .pre-commit-config.yaml runs
# the same four. The tools come from the dev extra: bash scripts/setup.sh, or pip install -e '.[dev]'.
# Usage: bash scripts/check.sh      (VENV=path: whose tools to use; default .venv, else those on PATH)
set -uo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"

tool() {  # the tool from the virtualenv if it has it, else from PATH
  if [ -x "$VENV/bin/$1" ]; then
    echo "$VENV/bin/$1"
  elif command -v "$1" >/dev/null; then
    command -v "$1"
  else
    echo "scripts/check.sh: $1 is not installed (bash scripts/setup.sh, or pip install -e '.[dev]')" >&2
    return 1
  fi
}

failed=()
check() {  # check NAME TOOL ARGS...: run one check, remember it when it fails
  local name="$1" exe
  shift
  echo "== $name"
  if exe="$(tool "$1")" && "$exe" "${@:2}"; then
    return 0
  fi
  failed+=("$name")
}

check "ruff check" ruff check .
check "ruff format --check" ruff format --check --output-format concise .
check "mypy" mypy
check "lint-imports" lint-imports

if [ "${#failed[@]}" -gt 0 ]; then
  echo "scripts/check.sh: failed: $(IFS=,; echo "${failed[*]}" | sed 's/,/, /g')" >&2
  exit 1
fi
echo "scripts/check.sh: all checks passed"

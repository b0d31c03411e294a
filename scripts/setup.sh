#!/usr/bin/env bash
# Set up the development virtualenv from scratch (idempotent): torch first and pinned, then the
# patients the tests inspect, then bnbdoctor itself, editable, with its test and static-check tools
# (the `test` and `dev` extras of pyproject.toml).
# Usage: bash scripts/setup.sh      (VENV=path to use another virtualenv, PYTHON=interpreter to create it)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
# shellcheck source=scripts/lib/tool_python.sh
. scripts/lib/tool_python.sh
if [ ! -x "$VENV/bin/python" ]; then
  # bnbdoctor needs 3.10+: python3, else the newest python3.X on PATH (scripts/lib/tool_python.sh).
  if [ -z "${PYTHON:-}" ] && ! PYTHON="$(find_tool_python)"; then
    tool_python_help
    exit 2
  fi
  "$PYTHON" -m venv "$VENV"
elif ! python_fits_tool "$VENV/bin/python"; then
  echo "scripts/setup.sh: $VENV uses Python $(python_version_of "$VENV/bin/python"); bnbdoctor needs" \
    "$BNBDOCTOR_MIN_PYTHON+: remove $VENV (or set VENV=another folder) and run this again" >&2
  exit 2
fi
PIP=("$VENV/bin/python" -m pip install --quiet --disable-pip-version-check)
# torch first, pinned, and the CPU build wherever this runs: PyPI's Linux torch is the CUDA build (GBs of
# nvidia-* wheels), so on Linux (and Windows) the pin is PyTorch's CPU build, 2.13.0+cpu, from its CPU index
# (or a local wheel of it that pip's find-links already offers); on macOS PyPI's torch is the CPU build.
TORCH_VERSION=2.13.0
if [ "$(uname -s)" = "Darwin" ]; then
  torch_install=("torch==$TORCH_VERSION")
else
  torch_install=("torch==$TORCH_VERSION+cpu" --extra-index-url https://download.pytorch.org/whl/cpu --retries 1)
fi
"${PIP[@]}" "${torch_install[@]}"
"$VENV/bin/python" -c 'import torch; print("scripts/setup.sh: torch", torch.__version__ + ",", "CUDA", torch.version.cuda or "none (the CPU build)")'
"${PIP[@]}" -r requirements-test.txt
"${PIP[@]}" -e ".[test,dev,mcp]"  # mcp: tests/test_mcp.py runs the MCP server

#!/usr/bin/env bash
# Set up bnbdoctor in its own virtualenv (.venv-doctor, nothing of yours is modified) and diagnose
# the Python you use for bitsandbytes: the active virtualenv/conda env if there is one, otherwise
# python3 on PATH (override with PATIENT=/path/to/python). Extra arguments go to bnbdoctor.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
tool_venv="${BNBDOCTOR_VENV:-$here/.venv-doctor}"
if [ ! -x "$tool_venv/bin/python" ]; then
  python3 -m venv "$tool_venv"
fi
"$tool_venv/bin/python" -m pip install --quiet --disable-pip-version-check "$here"
args=()
if [ -z "${VIRTUAL_ENV:-}${CONDA_PREFIX:-}" ]; then
  args+=(--python "${PATIENT:-$(command -v python3)}")
fi
exec "$tool_venv/bin/python" -m bnbdoctor "${args[@]}" "$@"

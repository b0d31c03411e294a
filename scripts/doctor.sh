#!/usr/bin/env bash
# Install bnbdoctor into the Python you use for bitsandbytes (default: python3 on PATH, or the
# active virtualenv/conda env) and run it. Extra arguments go to bnbdoctor.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
"$PYTHON" -m pip install --quiet --disable-pip-version-check .
exec "$PYTHON" -m bnbdoctor "$@"

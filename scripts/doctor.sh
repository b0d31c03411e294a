#!/usr/bin/env bash
# Set up bnbdoctor in its own virtualenv (.venv-doctor, nothing of yours is modified) and diagnose
# the Python you use for bitsandbytes: the active virtualenv/conda env if there is one, otherwise
# python3 on PATH (override with PATIENT=/path/to/python). Extra arguments go to bnbdoctor.
#
# The Python you diagnose may be as old as 3.6; bnbdoctor itself needs 3.10+. Its interpreter is
# $BNBDOCTOR_PYTHON, python3 if new enough, the newest python3.X on PATH, or one uv fetches; with none of
# those the script says exactly what to install (scripts/lib/tool_python.sh).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
default_venv="$here/.venv-doctor"
tool_venv="${BNBDOCTOR_VENV:-$default_venv}"
# shellcheck source=scripts/lib/tool_python.sh
. "$here/scripts/lib/tool_python.sh"

if [ -x "$tool_venv/bin/python" ] && ! python_fits_tool "$tool_venv/bin/python"; then
  # Made by an earlier run with a Python too old for bnbdoctor ("requires a different Python").
  if [ "$tool_venv" != "$default_venv" ]; then
    echo "bnbdoctor: $tool_venv uses Python $(python_version_of "$tool_venv/bin/python"); bnbdoctor needs" \
      "$BNBDOCTOR_MIN_PYTHON+: point BNBDOCTOR_VENV at a new folder" >&2
    exit 2
  fi
  echo "bnbdoctor: $tool_venv was made with Python $(python_version_of "$tool_venv/bin/python"); making it again" >&2
  rm -rf "$tool_venv"
fi
if [ ! -x "$tool_venv/bin/python" ]; then
  if tool_python="$(find_tool_python)"; then
    "$tool_python" -m venv "$tool_venv"
  elif command -v uv >/dev/null 2>&1; then
    echo "bnbdoctor: no Python $BNBDOCTOR_MIN_PYTHON+ on PATH; uv provides one for bnbdoctor's own virtualenv" >&2
    uv venv --quiet --seed --python ">=$BNBDOCTOR_MIN_PYTHON" "$tool_venv"
  else
    tool_python_help
    exit 2
  fi
fi
# Install (again) only when the checkout changed since the last install: a stamp in the tool venv holding the
# names of what the wheel is built from, and any such file newer than it (an edit, a git checkout or pull, an
# added or deleted file). An unchanged re-run skips pip (~10 s) and starts the doctor at once.
stamp="$tool_venv/.bnbdoctor-installed"
sources=("$here/bnbdoctor" "$here/platform_fixtures" "$here/pyproject.toml" "$here/setup.py" "$here/MANIFEST.in")
existing=()
for source in "${sources[@]}"; do
  if [ -e "$source" ]; then existing+=("$source"); fi
done
# What the build itself writes into the checkout (the fixtures archive, the rule pages, bytecode) is not a change.
built() { find "${existing[@]}" \( -name __pycache__ -o -path "$here/bnbdoctor/data/rules" \
  -o -path "$here/bnbdoctor/data/platform_fixtures.tar.gz" \) -prune -o "$@"; }
listing() { built -print | LC_ALL=C sort | cksum; }  # the names: an added or deleted file changes it
changed() {  # whether anything the wheel is built from changed since the stamp (no find: assume it did)
  command -v find >/dev/null 2>&1 || return 0
  [ "$(cat "$stamp")" != "$(listing)" ] || [ -n "$(built ! -type d -newer "$stamp" -print -quit 2>/dev/null)" ]
}
if [ ! -f "$stamp" ] || changed; then
  listing >"$stamp.new"  # the names, and the time the install started: an edit made during it is seen next time
  "$tool_venv/bin/python" -m pip install --quiet --disable-pip-version-check "$here"
  mv "$stamp.new" "$stamp"
fi
args=()
if [ -z "${VIRTUAL_ENV:-}${CONDA_PREFIX:-}" ]; then
  args+=(--python "${PATIENT:-$(command -v python3)}")
fi
exec "$tool_venv/bin/python" -m bnbdoctor "${args[@]}" "$@"

# shellcheck shell=bash
# bnbdoctor's own interpreter for scripts/doctor.sh: sourced, defines functions, runs nothing.
#
# bnbdoctor itself needs Python >= 3.10 (pyproject.toml's requires-python); the Python it examines may be
# as old as 3.6. On Ubuntu 20.04 (3.8) or CentOS 7 (3.6) `python3` is too old to run the tool, so it is
# found, in this order: $BNBDOCTOR_PYTHON; `python3` if new enough; the newest `python3.X` on PATH that is;
# `uv` (which fetches a Python of its own). Otherwise tool_python_help says exactly what to install.
# Pure bash (builtins and the candidates only), so that it runs the same on any PATH.

BNBDOCTOR_MIN_PYTHON="3.10"
BNBDOCTOR_PYTHON_NAMES=(python3.14 python3.13 python3.12 python3.11 python3.10)

# The "X.Y" version of interpreter $1, or nothing if it does not run.
python_version_of() {
  "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null
}

# Success if interpreter $1 runs, is >= BNBDOCTOR_MIN_PYTHON and can make a virtualenv (Debian splits
# venv into python3.X-venv: without it `python3 -m venv` fails half-way).
python_fits_tool() {
  "$1" -c "import sys, venv, ensurepip; sys.exit(sys.version_info < tuple(map(int, '$BNBDOCTOR_MIN_PYTHON'.split('.'))))" \
    >/dev/null 2>&1
}

# Print the interpreter to build bnbdoctor's virtualenv with; fail (printing nothing) if there is none.
find_tool_python() {
  local candidate found
  if [ -n "${BNBDOCTOR_PYTHON:-}" ]; then
    python_fits_tool "$BNBDOCTOR_PYTHON" || return 1
    printf '%s\n' "$BNBDOCTOR_PYTHON"
    return 0
  fi
  for candidate in python3 "${BNBDOCTOR_PYTHON_NAMES[@]}"; do
    found="$(command -v "$candidate" 2>/dev/null)" || continue
    if python_fits_tool "$found"; then
      printf '%s\n' "$found"
      return 0
    fi
  done
  return 1
}

# What was found and exactly what to install, on stderr.
tool_python_help() {
  local candidate found version seen=""
  for candidate in python3 "${BNBDOCTOR_PYTHON_NAMES[@]}"; do
    found="$(command -v "$candidate" 2>/dev/null)" || continue
    version="$(python_version_of "$found")"
    seen="$seen $found (${version:-does not run})"
  done
  if [ -n "${BNBDOCTOR_PYTHON:-}" ]; then
    version="$(python_version_of "$BNBDOCTOR_PYTHON")"
    seen="$seen BNBDOCTOR_PYTHON=$BNBDOCTOR_PYTHON (${version:-does not run})"
  fi
  local line
  for line in \
    "bnbdoctor itself needs Python $BNBDOCTOR_MIN_PYTHON or newer with its venv module, and none was found." \
    "found:${seen:- no python3 on PATH}" \
    "(the Python you diagnose may be older, down to 3.6: only the tool's own interpreter must be new)" \
    "install one of these, then run this script again:" \
    "  uv (fetches its own Python, nothing else changes): curl -LsSf https://astral.sh/uv/install.sh | sh" \
    "  Ubuntu 20.04:   sudo add-apt-repository ppa:deadsnakes/ppa && sudo apt install python3.10 python3.10-venv" \
    "  Debian/Ubuntu with python3.10+ but no venv module:  sudo apt install python3-venv" \
    "  RHEL/Rocky 8+:  sudo dnf install python3.11" \
    "  conda (any OS, CentOS 7 included):  conda create -y -p ~/.bnbdoctor-python python=3.12" \
    "                  then: BNBDOCTOR_PYTHON=~/.bnbdoctor-python/bin/python bash scripts/doctor.sh" \
    "or point BNBDOCTOR_PYTHON at any Python $BNBDOCTOR_MIN_PYTHON+ you already have."; do
    printf 'bnbdoctor: %s\n' "$line" >&2
  done
}

#!/usr/bin/env bash
# The virtual environment of the Python package's tests (python/tests, run
# by scripts/test.sh): made once outside the clone with the pinned tools of
# python/requirements-test.txt from PyPI, and made again when the pins
# change; then ./python itself is installed into it on every run, so the
# tests use the clone's package as installed (without reaching PyPI: the
# build backend is pinned in the requirements). Prints the environment's
# python. Exit 3 when it cannot be made (no python3 with venv, or PyPI not
# reachable): the test command then says the tier is skipped, and why.
# AGORA_PYTHON_REQUIREMENTS names another requirements file (with
# AGORA_PYTHON_VENV another environment): python/requirements-crewai.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
requirements="${AGORA_PYTHON_REQUIREMENTS:-python/requirements-test.txt}"
venv="${AGORA_PYTHON_VENV:-$HOME/.cache/agora-python}"
if ! cmp -s "$requirements" "$venv/requirements-test.txt" 2>/dev/null || [ ! -x "$venv/bin/python" ]; then
  rm -rf "$venv"
  python3 -m venv "$venv" >&2 || { echo "python-venv: python3 -m venv failed" >&2; exit 3; }
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$requirements" >&2 || {
    echo "python-venv: pip could not install $requirements (is PyPI reachable?)" >&2
    rm -rf "$venv"
    exit 3
  }
  cp "$requirements" "$venv/requirements-test.txt"
fi
# Built from a copy, so the clone gets no build directory or egg-info.
build="$(mktemp -d)"
trap 'rm -rf "$build"' EXIT
cp -r python "$build/python"
rm -rf "$build/python/build" "$build/python/src/"*.egg-info
"$venv/bin/pip" install -q --disable-pip-version-check --no-build-isolation --no-deps --force-reinstall "$build/python" >&2 || {
  echo "python-venv: pip could not install ./python" >&2
  exit 1
}
echo "$venv/bin/python"

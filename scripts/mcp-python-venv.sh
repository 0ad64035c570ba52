#!/usr/bin/env bash
# The virtual environment of the MCP Python SDK test (tests/mcp.rs runs
# tests/mcp_python/client.py with it): made once outside the clone with the
# pinned `mcp` of tests/mcp_python/requirements.txt from PyPI, and made
# again when the pins change. Prints the environment's python. Exit 3 when
# it cannot be made (no python3 with venv, or PyPI not reachable): the test
# then says it is skipped, and why.
set -euo pipefail
cd "$(dirname "$0")/.."
requirements=tests/mcp_python/requirements.txt
venv="${AGORA_MCP_PYTHON_VENV:-$HOME/.cache/agora-mcp-python}"
if ! cmp -s "$requirements" "$venv/requirements.txt" 2>/dev/null || [ ! -x "$venv/bin/python" ]; then
  rm -rf "$venv"
  python3 -m venv "$venv" >&2 || { echo "mcp-python-venv: python3 -m venv failed" >&2; exit 3; }
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$requirements" >&2 || {
    echo "mcp-python-venv: pip could not install $requirements (is PyPI reachable?)" >&2
    rm -rf "$venv"
    exit 3
  }
  cp "$requirements" "$venv/requirements.txt"
fi
echo "$venv/bin/python"

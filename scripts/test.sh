#!/usr/bin/env bash
# The test command: installs what is missing, checks formatting and lints
# (rustfmt, clippy with warnings as errors), then runs every test in the
# workspace (unit, property, test-vector and CLI integration tests), the
# property-based API test (scripts/api-property-test.sh) and the Python
# package's tests (python/tests), and ends with one summary line over all
# test binaries.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. scripts/env.sh
# Formatting (rustfmt.toml) and lints, in the release profile everything else
# builds in, so RocksDB's build script output is shared.
cargo fmt --all -- --check
(cd fuzz && cargo fmt --all -- --check)
cargo clippy --release --workspace --all-targets --locked -- -D warnings
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
# --lib --bins --tests: the crates have no doctests, and an empty doctest run
# would be the last "test result" line printed.
cargo test --release --workspace --locked --lib --bins --tests "$@" 2>&1 | tee "$log"
# The JSON API against its OpenAPI document, property-based (schemathesis).
bash scripts/api-property-test.sh
# The Python package (python/) against real nodes, with pytest; skipped, and
# said why, when its environment cannot be made (scripts/python-venv.sh exit 3).
# CrewAI's test runs in an environment of its own (python/requirements-crewai.txt:
# crewai needs openai<3 and pydantic<2.13, the OpenAI Agents SDK newer ones).
python_tests() { # NAME REQUIREMENTS VENV PYTEST-ARGS...
  local name="$1" status=0 py
  py="$(AGORA_PYTHON_REQUIREMENTS="$2" AGORA_PYTHON_VENV="$3" bash scripts/python-venv.sh)" || status=$?
  if [ "$status" -eq 3 ]; then
    echo "$name: SKIPPED (the virtual environment could not be made; see above)"
  elif [ "$status" -ne 0 ]; then
    exit "$status"
  else
    AGORA_BIN="$CARGO_TARGET_DIR/release/agora" PYTHONDONTWRITEBYTECODE=1 "$py" -m pytest -q -p no:cacheprovider "${@:4}"
  fi
}
python_tests "python package tests" python/requirements-test.txt "$HOME/.cache/agora-python" python/tests --ignore=python/tests/test_crewai.py
python_tests "python package tests (crewai)" python/requirements-crewai.txt "$HOME/.cache/agora-python-crewai" python/tests/test_crewai.py
awk '/^test result:/ { p += $4; f += $6; i += $8 } END { printf "\nall test binaries: %d passed, %d failed, %d ignored\n%d passed, %d failed\n", p, f, i, p, f }' "$log"

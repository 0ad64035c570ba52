#!/usr/bin/env bash
# The test command: installs what is missing, then runs every test in the
# workspace (unit, property, test-vector and CLI integration tests).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. scripts/env.sh
cargo test --release --workspace --locked "$@"

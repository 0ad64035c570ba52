#!/usr/bin/env bash
# Reproduces the README's performance figures.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. scripts/env.sh
cargo run --release --locked -p agora-bench -- "$@"

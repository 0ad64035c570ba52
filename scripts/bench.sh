#!/usr/bin/env bash
# Reproduces the figures in BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. scripts/env.sh
# Built for the whole workspace, as the tests are: the same features, so
# RocksDB's C++ is compiled once for both (a `-p` build may resolve the
# features of its build dependencies differently and compile it again).
cargo build --release --locked --workspace --bins
exec "$CARGO_TARGET_DIR/release/agora-bench" "$@"

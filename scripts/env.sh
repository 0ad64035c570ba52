# Sourced by the other scripts. One cargo target directory outside the clone,
# reused across clones and runs, so RocksDB's C++ (15-35 minutes on 2 cores) is
# compiled once. Everything builds in the release profile only, for the same reason.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/agora-target}"
mkdir -p "$CARGO_TARGET_DIR"

#!/usr/bin/env bash
# The container test tier (tests/containers.rs): agora nodes in Docker
# containers, brought up by docker/swarm.sh from this build's binary: five
# nodes converge, a 2/3 partition heals, a node SIGKILLed mid-sync loses no
# acknowledged entry, a rolling restart loses nothing, a copied volume is
# proven to equivocate. When no Docker engine answers it says so and passes.
# Figures (time to converge, entries per second) are printed as measured.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
if ! command -v docker >/dev/null 2>&1 || ! docker info >/dev/null 2>&1; then
  echo "container tests: SKIPPED: no Docker engine answers \`docker info\`"
  exit 0
fi
# One at a time: each test runs a swarm of five containers (2 cores).
AGORA_CONTAINER_TESTS=1 cargo test --release --workspace --locked --test containers -- --test-threads=1 "$@"

#!/usr/bin/env bash
# The project's unsafe code under a memory checker (valgrind's memcheck):
# agora-graph's node lists (`crates/agora-graph/src/graph/links.rs`), through
# the crate's unit tests and golden scenarios, and the node's allocator hooks
# (`node/src/scratch_arena.rs`: jemalloc's arena calls) through their test,
# and the simulator's metering allocator (`simulations/src/heap.rs`) through
# its own.
# Fails on any invalid read, write or free. Installs valgrind when missing.
# The test binaries are the test command's (release profile), so after
# scripts/test.sh nothing is compiled again.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
if ! command -v valgrind >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq valgrind >/dev/null
fi
# The executables of the test targets, by package and target name.
list="$(cargo test --release --workspace --locked --lib --bins --tests --no-run --message-format=json 2>/dev/null |
  python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m.get("profile", {}).get("test"):
        source, _, frag = m["package_id"].partition("#")
        package = frag.split("@")[0] if "@" in frag else source.rstrip("/").split("/")[-1]
        print(package, m["target"]["name"], m["target"]["kind"][0], m["executable"])
')"
run() { # package target kind filter
  local exe
  exe="$(awk -v p="$1" -v t="$2" -v k="$3" '$1 == p && $2 == t && $3 == k { print $4 }' <<<"$list" | head -1)"
  if [ -z "$exe" ]; then echo "memcheck: no test binary for $1 $2 ($3)" >&2; exit 1; fi
  echo "memcheck: $1 $2 $4"
  valgrind -q --error-exitcode=99 "$exe" --test-threads=1 $4 | grep '^test result'
}
run agora-graph agora_graph lib ""
run agora-graph golden test ""
run agora-node agora-node bin scratch_arena
run agora-sim memory test an_allocation_is_its_makers
echo "memcheck: no invalid read, write or free"

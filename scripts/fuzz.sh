#!/usr/bin/env bash
# Fuzzes the decoders and the replicator (fuzz/, cargo-fuzz + libFuzzer) for a
# bounded time: builds every target once, then runs each for SECONDS (default
# 20) on a scratch copy of its checked-in corpus (fuzz/corpus/<target>/, which
# is never modified), and prints per target the executions, executions per
# second and libFuzzer's final coverage (cov: edges, ft: features). Fails if
# any target crashes; the crashing input is kept in fuzz/artifacts/<target>/.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# Needs only the stable Rust toolchain: cargo-fuzz is installed when missing,
# and RUSTC_BOOTSTRAP=1 lets stable rustc take the flags it passes. Targets
# are built without a sanitizer (the fuzzed crates have no unsafe code) and
# with debug assertions and overflow checks on. The build has its own target
# directory ($AGORA_FUZZ_TARGET, default ~/.cache/agora-fuzz-target), reused
# across clones; it depends on no crate that builds RocksDB.
set -euo pipefail
cd "$(dirname "$0")/.."

secs="${1:-20}"
shift || true
export RUSTC_BOOTSTRAP=1
CARGO_FUZZ_VERSION=0.13.2
target_dir="${AGORA_FUZZ_TARGET:-$HOME/.cache/agora-fuzz-target}"
mkdir -p "$target_dir"

# libFuzzer itself is C++ (built by libfuzzer-sys).
if ! command -v c++ >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq g++ >/dev/null
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz: installing cargo-fuzz $CARGO_FUZZ_VERSION" >&2
  cargo install cargo-fuzz --locked --version "$CARGO_FUZZ_VERSION"
fi

if [ "$#" -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets < <(sed -n 's/^name = "\([a-z_]*\)"$/\1/p' fuzz/Cargo.toml | grep -v '^agora-fuzz$')
fi

# One build of every target. fuzz/Cargo.lock pins every dependency: refuse to
# build if it would change (cargo fuzz build takes no --locked).
cargo metadata --locked --format-version 1 --manifest-path fuzz/Cargo.toml >/dev/null
(cd fuzz && cargo fuzz build --sanitizer none --debug-assertions --target-dir "$target_dir") >&2
host="$(rustc -vV | sed -n 's/^host: //p')"
bin_dir="$target_dir/$host/release"

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
mkdir -p fuzz/artifacts
failed=()
total_runs=0
printf '%-16s %8s %12s %10s %8s %8s %8s  %s\n' target seconds executions execs/s cov ft corpus result
for t in "${targets[@]}"; do
  mkdir -p "$scratch/$t" "fuzz/artifacts/$t"
  cp -r "fuzz/corpus/$t/." "$scratch/$t/" 2>/dev/null || true
  case "$t" in
    replicator | sync_wire) max_len=16384 ;;
    *) max_len=4096 ;;
  esac
  log="$scratch/$t.log"
  status=0
  "$bin_dir/$t" -max_total_time="$secs" -max_len="$max_len" -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="fuzz/artifacts/$t/" "$scratch/$t" >"$log" 2>&1 || status=$?
  runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
  rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)"
  last="$(grep -E '^#[0-9]+.* cov: ' "$log" | tail -1 || true)"
  cov="$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")"
  ft="$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")"
  corp="$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")"
  result=ok
  if [ "$status" -ne 0 ]; then
    result="CRASH (exit $status)"
    failed+=("$t")
  fi
  total_runs=$((total_runs + ${runs:-0}))
  printf '%-16s %8s %12s %10s %8s %8s %8s  %s\n' "$t" "$secs" "${runs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$result"
  if [ "$status" -ne 0 ]; then
    echo "---- $t: last lines of libFuzzer's output" >&2
    tail -40 "$log" >&2
    echo "---- crashing input kept in fuzz/artifacts/$t/; reproduce with: $bin_dir/$t fuzz/artifacts/$t/<file>" >&2
  fi
done
echo "fuzz: ${#targets[@]} targets, ${secs}s each, $total_runs executions in all"
if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz: crashed: ${failed[*]}" >&2
  exit 1
fi

#!/usr/bin/env bash
# Plays every shipped scenario over the seeds (and sizes) its results page
# names, keeps each sweep's report in data/ and its main figures in figures/,
# then writes the pages' tables from the reports (`agora sim results`).
# Usage: simulations/results/generate.sh [NAME...]   (default: every page)
# The pages' conclusions are written by hand from the tables; `agora sim
# results --check` (and simulations/tests/results.rs) fails when a table no
# longer matches its report.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/env.sh
agora="$CARGO_TARGET_DIR/release/agora"
out=simulations/results
mkdir -p "$out/data" "$out/figures"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# name | sweep arguments | figures kept (sweep or first run's), space-separated
plan() {
  cat <<'PLAN'
adversarial|--seeds 1..5|runs/seed-1/run-timeline runs/seed-1/run-fork-detection
debate-partition|--seeds 1..5|runs/seed-1/run-timeline
seed-call-frames|--seeds 1..5|runs/seed-1/run-timeline
seed-event-sourcing|--seeds 1..5|runs/seed-1/run-timeline
seed-memory-taxonomy|--seeds 1..5|runs/seed-1/run-timeline
seed-typed-edges|--seeds 1..5|runs/seed-1/run-timeline
swarm-100-adversarial|--seeds 1..3|runs/seed-1/run-timeline sweep-fork-detection
fanout|--sizes 10,30,100,300 --seeds 1..3|sweep-spread sweep-bandwidth
fanout-10|--sizes 10,30,100 --seeds 1..3|sweep-spread sweep-bandwidth
scale-1000|--seeds 1..2|runs/seed-1/run-timeline
key-recovery|--seeds 1..5|runs/seed-1/run-timeline
PLAN
}

want=("$@")
plan | while IFS='|' read -r name args figures; do
  if [ ${#want[@]} -gt 0 ] && [[ ! " ${want[*]} " =~ " $name " ]]; then continue; fi
  echo "== $name: agora sim sweep simulations/scenarios/$name.toml $args" >&2
  # shellcheck disable=SC2086
  "$agora" sim sweep "simulations/scenarios/$name.toml" $args --out "$work/$name" > "$work/$name.log" || {
    code=$?
    # 3: some run broke an invariant; the page's table says so.
    [ "$code" -eq 3 ] || { cat "$work/$name.log" >&2; exit "$code"; }
  }
  cp "$work/$name/sweep.json" "$out/data/$name.json"
  for f in $figures; do
    cp "$work/$name/$f.png" "$out/figures/$name-$(basename "$f").png"
  done
done
"$agora" sim results "$out"

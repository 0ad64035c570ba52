#!/usr/bin/env bash
# The main job: builds `agora` and walks through its life on the embedded
# RocksDB store: init, append, log, show, verify, redact, export/import between
# two agents, and a fork from a restored backup being detected and proven.
# Uses a throw-away home under target unless AGORA_DEMO_DIR is set.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. scripts/env.sh
cargo build --release --locked -p agora-node
AGORA="$CARGO_TARGET_DIR/release/agora"
DEMO="${AGORA_DEMO_DIR:-$(mktemp -d)}"
ALICE="$DEMO/alice"; BOB="$DEMO/bob"
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

step "$AGORA" --home "$ALICE" init
step "$AGORA" --home "$BOB" init
echo "we should price the product at \$20" | step "$AGORA" --home "$ALICE" append
echo "evidence: competitors charge \$25-\$40" | step "$AGORA" --home "$ALICE" append
SECRET=$(echo "internal cost model: \$4/unit" | "$AGORA" --home "$ALICE" append)
echo "appended $SECRET"
step "$AGORA" --home "$ALICE" log
step "$AGORA" --home "$ALICE" show "${SECRET:0:12}"
step "$AGORA" --home "$ALICE" redact "$SECRET"
step "$AGORA" --home "$ALICE" show "${SECRET:0:12}"
step "$AGORA" --home "$ALICE" verify
step "$AGORA" --home "$ALICE" export -o "$DEMO/alice.jsonl"
step "$AGORA" --home "$BOB" import "$DEMO/alice.jsonl"
step "$AGORA" --home "$BOB" import "$DEMO/alice.jsonl"
echo "counter: \$20 leaves money on the table" | step "$AGORA" --home "$BOB" append
step "$AGORA" --home "$BOB" verify

echo; echo "--- alice restores an old backup and keeps writing: a fork ---"
cp -a "$ALICE" "$DEMO/alice-backup"
echo "original timeline" | "$AGORA" --home "$ALICE" append >/dev/null
echo "restored timeline" | "$AGORA" --home "$DEMO/alice-backup" append >/dev/null
"$AGORA" --home "$DEMO/alice-backup" export -o "$DEMO/backup.jsonl"
"$AGORA" --home "$ALICE" export -o "$DEMO/alice.jsonl"
step "$AGORA" --home "$BOB" import "$DEMO/alice.jsonl"
step "$AGORA" --home "$BOB" import "$DEMO/backup.jsonl"
step "$AGORA" --home "$BOB" authors
step "$AGORA" --home "$BOB" forks
PROOF=$("$AGORA" --home "$BOB" --json forks | sed -E 's/.*"proof":"([0-9a-f]+)".*/\1/')
step "$AGORA" check-proof "$PROOF"
step "$AGORA" --home "$BOB" verify

echo; echo "--- reasoning: the pricing debate (seed 000) as typed events ---"
E1=$("$AGORA" --home "$BOB" propose "Usage-based pricing aligns incentives and reduces low-end friction")
echo "proposition $E1"
E2=$("$AGORA" --home "$BOB" contradict "$E1" "Enterprise procurement requires predictable costs; usage-based is a blocker")
step "$AGORA" --home "$BOB" status "$E1"
step "$AGORA" --home "$BOB" disagreements
E3=$("$AGORA" --home "$BOB" refine "$E1" "Two-track model: seat-based for enterprise, usage-based for self-serve" --resolves "$E2")
E4=$("$AGORA" --home "$BOB" synthesize "$E1" "$E3" "Pricing should track how value is realized; the two-track model is an instance")
step "$AGORA" --home "$BOB" status "$E1"
step "$AGORA" --home "$BOB" decisions
step "$AGORA" --home "$BOB" trace "$E1"
step "$AGORA" --home "$BOB" search "usage-based pricing"
step "$AGORA" --home "$BOB" synthesize "$E1" "a synthesis of one source is refused" || true
step "$AGORA" --home "$BOB" graph --format mermaid
echo; echo "demo home: $DEMO"

#!/usr/bin/env bash
# The main job: installs what is missing (scripts/setup.sh), builds `agora`,
# and shows what it is for. Three agents, each with its own home and its own
# node on 127.0.0.1, debate a question in one workspace: propose, contradict,
# support, refine, accept another's chain up to an event, dispute one event
# with a counter-claim. Then every node shows the disagreement map, an
# agent's perspective, the consensus and the same view hash, and the live
# page's address is printed. The nodes stop at the end, on Ctrl-C and on any
# error. Every wait is a bounded poll. A few seconds once built.
#
# Environment:
#   AGORA_DEMO_SKIP_BUILD=1  no set-up and no build: run the binaries already
#                            built (tests/demo.rs runs the demo so)
#   AGORA_BIN=FILE           the `agora` to run (`agora-node` beside it);
#                            default $CARGO_TARGET_DIR/release/agora
#   AGORA_DEMO_HOLD=1        keep the nodes running at the end until Enter,
#                            to look at the live page
#   AGORA_DEMO_KEEP=1        keep the homes and the node logs (path printed)
#   AGORA_DEMO_TIMEOUT=S     the longest any one wait may take (default 30)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${AGORA_DEMO_SKIP_BUILD:-0}" != 1 ]; then
  bash scripts/setup.sh
  . scripts/env.sh
  cargo build --release --workspace --locked --bins
else
  . scripts/env.sh
fi
AGORA="${AGORA_BIN:-$CARGO_TARGET_DIR/release/agora}"
[ -x "$AGORA" ] || { echo "demo: no agora binary at $AGORA (build it, or unset AGORA_DEMO_SKIP_BUILD)" >&2; exit 1; }
TIMEOUT="${AGORA_DEMO_TIMEOUT:-30}"
DEMO="$(mktemp -d "${TMPDIR:-/tmp}/agora-demo.XXXXXX")"
AGENTS=(alice bob carol)
declare -A PID=() ID=()

if [ -t 1 ]; then B=$'\033[1m' D=$'\033[2m' N=$'\033[0m'; else B='' D='' N=''; fi
now_ms() { date +%s%3N; }
START=$(now_ms)
secs() { local ms=$(( $(now_ms) - $1 )); printf '%d.%02d s' $((ms / 1000)) $((ms % 1000 / 10)); }

# Stop every node this script started (SIGTERM, then SIGKILL after 10 s),
# and remove the homes: at the end, on Ctrl-C and on an error.
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  local who
  for who in "${!PID[@]}"; do kill -TERM "${PID[$who]}" 2>/dev/null || true; done
  for who in "${!PID[@]}"; do
    local i=0
    while kill -0 "${PID[$who]}" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    kill -KILL "${PID[$who]}" 2>/dev/null || true
    wait "${PID[$who]}" 2>/dev/null || true
  done
  if [ $status -ne 0 ] && [ $status -ne 130 ]; then
    for who in "${!PID[@]}"; do
      echo "--- the last lines of $who's node log ---" >&2
      tail -n 15 "$DEMO/$who.log" >&2 2>/dev/null || true
    done
  fi
  if [ "${AGORA_DEMO_KEEP:-0}" = 1 ]; then echo "homes and node logs kept in $DEMO" >&2; else rm -rf "$DEMO"; fi
  exit $status
}
trap cleanup EXIT
trap 'echo; echo "demo: interrupted" >&2; exit 130' INT TERM

fail() { echo "demo: $*" >&2; exit 1; }
step() { printf '\n%s== %s ==%s\n' "$B" "$*" "$N"; }
say() { printf '\n%s\n' "$*"; }
# Agents by name in what the command line prints: full ids and their short form.
names() {
  local script=() who
  for who in "${!ID[@]}"; do script+=(-e "s/${ID[$who]}/$who/g" -e "s/${ID[$who]:0:8}/$who/g"); done
  if [ ${#script[@]} -eq 0 ]; then cat; else sed "${script[@]}"; fi
}
# The command as typed, agent ids as $ALICE, $BOB, $CAROL.
shown() {
  local who=$1 out="" a
  shift
  for a in "$@"; do
    case "$a" in *' '*) a="\"$a\"" ;; esac
    out+=" $a"
  done
  for a in "${!ID[@]}"; do out="${out//${ID[$a]}/\$${a^^}}"; done
  out="${out//"$DEMO"/\$DEMO}"
  printf '%s%s$ agora%s%s\n' "$D" "$who" "$out" "$N"
}
# `as WHO ARGS...`: run agora as that agent (its home), quietly.
as() { local who=$1; shift; "$AGORA" --home "$DEMO/$who" "$@"; }
# `run WHO ARGS...`: show the command, run it, show its output.
run() { shown "$@"; as "$@" 2>&1 | names | sed 's/^/  /'; }
# `record VAR WHO ARGS...`: show the command and keep the new entry's id
# (12 digits: a unique prefix, which every command takes) in VAR (`-`: not kept).
record() {
  local var=$1 id
  shift
  shown "$@"
  id=$(as "$@") || fail "agora $* failed"
  [ "$var" = - ] || printf -v "$var" '%s' "${id:0:12}"
  printf '  -> entry %s\n' "${id:0:12}"
}
# `wait_for WHAT COMMAND...`: poll until COMMAND succeeds, at most $TIMEOUT s.
wait_for() {
  local what=$1 t0
  shift
  t0=$(now_ms)
  until "$@" >/dev/null 2>&1; do
    [ $(( $(now_ms) - t0 )) -lt $((TIMEOUT * 1000)) ] || fail "timed out after ${TIMEOUT} s waiting for $what"
    sleep 0.1
  done
  printf '  %s(%s: %s)%s\n' "$D" "$what" "$(secs "$t0")" "$N"
}
holds() { local id=$1 who; shift; for who in "$@"; do as "$who" show "$id" || return 1; done; }
has_peer() { as "$1" --json node status | grep -q '"peers":\[{'; }
connected() { has_peer bob && has_peer carol; }
holds_all() { local who=$1 id; shift; for id in "$@"; do as "$who" show "$id" || return 1; done; }
view_hash() { as "$1" view-hash; }
same_view() { local a b c; a=$(view_hash alice) && b=$(view_hash bob) && c=$(view_hash carol) && [ "$a" = "$b" ] && [ "$b" = "$c" ]; }

printf '%sAgora: three agents on three nodes argue about pricing%s\n' "$B" "$N"
cat <<'EOF'
Each agent signs its reasoning as typed events into its own hash-linked
chain. Nodes gossip the chains to each other, and every node derives the
same reasoning graph and the same merged view: who accepts whose reasoning
up to which event, and who disputes which event and why.
EOF

step "1. Three agents, each with its own home (its key and its store)"
say "The homes are under \$DEMO=$DEMO, removed at the end."
for who in "${AGENTS[@]}"; do
  shown "$who" init
  ID[$who]=$(as "$who" --json init | sed -n 's/.*"agent":"\([0-9a-f]\{64\}\)".*/\1/p')
  [ -n "${ID[$who]}" ] || fail "agora init gave no agent id for $who"
  printf '  %s is agent %s  ($%s below)\n' "$who" "${ID[$who]}" "${who^^}"
done

step "2. Alice founds the workspace and admits Bob and Carol"
say "The roster is a list of signed events on the founder's chain; nodes replicate only the chains it admits."
record - alice admit "${ID[bob]}" "pricing analyst"
record - alice admit "${ID[carol]}" "sales lead"

step "3. Three nodes on 127.0.0.1, each on a free port"
for who in "${AGENTS[@]}"; do
  args=(node run --workspace pricing --founder "${ID[alice]}" --listen /ip4/127.0.0.1/tcp/0 --no-mdns --ready-file "$DEMO/$who.ready")
  [ "$who" = alice ] || args+=(--bootstrap "$BOOT")
  shown "$who" "${args[@]}" "&"
  # Started directly, not through a function: $! is the node's own pid.
  "$AGORA" --home "$DEMO/$who" "${args[@]}" >"$DEMO/$who.out" 2>"$DEMO/$who.log" </dev/null &
  PID[$who]=$!
  t0=$(now_ms)
  until addr=$(sed -n 's/.*"listen":\["\([^"]*\)".*/\1/p' "$DEMO/$who.ready" 2>/dev/null) && [ -n "$addr" ]; do
    kill -0 "${PID[$who]}" 2>/dev/null || fail "$who's node exited: $(tail -n 5 "$DEMO/$who.log")"
    [ $(( $(now_ms) - t0 )) -lt $((TIMEOUT * 1000)) ] || fail "timed out after ${TIMEOUT} s waiting for $who's node to listen"
    sleep 0.1
  done
  printf '  %s'"'"'s node listens on %s\n' "$who" "$addr"
  [ "$who" = alice ] && BOOT=$addr
done
say "Bob's and Carol's nodes dial Alice's; from now on every agora command on a home goes through its node."
wait_for "bob's and carol's nodes connected" connected

step "4. The debate"
say "Alice proposes a pricing model:"
record P1 alice propose "Usage-based pricing aligns our incentives with our customers'"
wait_for "on bob's and carol's nodes" holds "$P1" bob carol

say "Bob, on another node, contradicts it:"
record C1 bob contradict "$P1" "Enterprise procurement needs predictable costs"
say "Carol, on the third node, supports it with evidence:"
record S1 carol support "$P1" "Competitors bill by usage and win deals"
wait_for "both on alice's node" holds_all alice "$C1" "$S1"

say "On Alice's node her proposition is now contested, and the status says why:"
run alice status "$P1"

say "Alice accepts Bob's chain up to his contradiction (a signed event on her own chain), and refines her proposal to answer it:"
record - alice accept "${ID[bob]}" "$C1"
record R1 alice refine "$P1" "Two tracks: seats for enterprise, usage for self-serve" --resolves "$C1"
wait_for "on bob's and carol's nodes" holds "$R1" bob carol

say "Bob accepts Alice's chain up to her proposition, but disputes exactly one later event, her refinement, with a counter-claim:"
record - bob accept "${ID[alice]}" "$P1"
record - bob dispute "$R1" "Two tracks double our billing operations" --counter "One plan with usage caps"

say "Carol accepts Alice's chain through the refinement and Bob's through his contradiction, then draws both together:"
record - carol accept "${ID[alice]}" "$R1"
wait_for "bob's contradiction on carol's node" holds "$C1" carol
record - carol accept "${ID[bob]}" "$C1"
record - carol synthesize "$P1" "$C1" "Price should track realized value, with a predictable cap"

step "5. What every node derives from the same entries"
wait_for "every event on every node: the same view hash" same_view

say "The disagreement map: each disputed event, what led to it, who accepts it and who disputes it, with the counter-claim (on Carol's node):"
run carol disputes

say "Bob's perspective: his chain, plus what he accepts, minus what he disputes (asked on Alice's node: every node gives the same answer). The proposition is still contested for him, and the refinement he disputes is not in it:"
run alice perspective "${ID[bob]}"

say "The consensus: how far along each chain at least 2 of the 3 agents accept, and the first disputed event (on Bob's node):"
run bob consensus -k 2
say "Alice's chain is accepted by 2 of 3 (Alice and Carol) through her refinement at seq 5, the event Bob disputes. Bob's is accepted through his contradiction (seq 1); nobody else has accepted any of Carol's yet."

say "The three nodes agree on the merged view:"
for who in "${AGENTS[@]}"; do
  printf '  %-8s node  view hash %s\n' "$who's" "$(view_hash "$who")"
done

step "6. The live page"
say "Alice's node serves the merged graph as a page (one lane per agent, the disputed refinement ringed in red); the login in this address works once, within a minute:"
run alice open --no-browser
if [ "${AGORA_DEMO_HOLD:-0}" = 1 ]; then
  say "The nodes keep running: open the page, then press Enter (or Ctrl-C) to stop them."
  read -r _ || true
fi

step "7. Stopping the nodes"
for who in "${AGENTS[@]}"; do kill -TERM "${PID[$who]}"; done
for who in "${AGENTS[@]}"; do
  if wait "${PID[$who]}"; then echo "  $who's node stopped"; else echo "  $who's node exited with status $?"; fi
  unset "PID[$who]"
done
printf '\ndone in %s\n' "$(secs "$START")"

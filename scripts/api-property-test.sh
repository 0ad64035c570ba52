#!/usr/bin/env bash
# The property-based API test: a real `agora node run` on 127.0.0.1, and
# schemathesis (from PyPI, installed into a virtual environment outside the
# clone) generating inputs for every operation of its OpenAPI document
# (/v1/openapi.json), valid and invalid (`--mode all`: schemathesis's
# positive and negative data, and its coverage phase's edge cases). Fails on
# any 5xx, any status the document does not list, any response, error
# answers included, that breaks its schema (errors: the one error object),
# its content type or its documented headers (a 405's `Allow`), an input
# that breaks the schema (a text over its `maxLength`, a field too many, a
# wrong type) answered with anything but a 4xx, a method the route does not
# take answered with anything but 405 and `Allow`, and a request without the
# token answered with anything but 401. Run by scripts/test.sh after the
# cargo tests (it uses their build).
#   AGORA_API_EXAMPLES=N   test cases per operation (default 25)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
bin="$CARGO_TARGET_DIR/release/agora"
[ -x "$bin" ] || cargo build --release --workspace --locked --bin agora
venv="${AGORA_SCHEMATHESIS_VENV:-$HOME/.cache/agora-schemathesis}"
if [ ! -x "$venv/bin/schemathesis" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "schemathesis>=4.32,<5"
fi

home="$(mktemp -d)"
node_pid=""
cleanup() {
  [ -n "$node_pid" ] && kill "$node_pid" 2>/dev/null && wait "$node_pid" 2>/dev/null
  rm -rf "$home"
}
trap cleanup EXIT
"$bin" --home "$home" init >/dev/null
"$bin" --home "$home" node run --listen /ip4/127.0.0.1/tcp/0 --no-mdns --workspace api-property-test \
  --ready-file "$home/ready.json" >"$home/node.log" 2>&1 &
node_pid=$!
for _ in $(seq 1 300); do
  [ -s "$home/ready.json" ] && [ -s "$home/node.json" ] && break
  kill -0 "$node_pid" 2>/dev/null || { cat "$home/node.log" >&2; echo "api-property-test: the node exited" >&2; exit 1; }
  sleep 0.1
done
[ -s "$home/node.json" ] || { echo "api-property-test: the node did not start within 30 s" >&2; exit 1; }
read -r control token < <(python3 -c 'import json,sys; n=json.load(open(sys.argv[1])); print(n["control"], n["token"])' "$home/node.json")

# From the node's temporary home: schemathesis writes its state into the
# working directory, and reads its configuration there. The token goes
# through the environment and that file, never a command line (which every
# local user can read).
cd "$home"
export AGORA_API_TOKEN="$token"
printf '%s\n' 'headers = { Authorization = "Bearer ${AGORA_API_TOKEN}" }' > schemathesis.toml
"$venv/bin/schemathesis" run "http://$control/v1/openapi.json" \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance,negative_data_rejection,unsupported_method,allow_header_conformance,ignored_auth \
  --mode all --max-examples "${AGORA_API_EXAMPLES:-25}" --seed 1 --workers 1 --no-color \
  --suppress-health-check too_slow
echo "api property test: passed (schemathesis, every operation of /v1/openapi.json)"

#!/usr/bin/env bash
# Instructions per `tools/call` of one toolsmith server process (`fleet_replica memory`, state
# in memory, answered in place: MCP 2025-11-25 with no session), counted by callgrind: the
# server runs under valgrind, one client warms it up for a second, the counters are zeroed,
# then one client calls for SECONDS; the user-space instructions of every thread of the
# server, divided by the calls the client made. Needs valgrind (callgrind_control).
#   bash scripts/bench-server-instructions.sh [SECONDS] [TOOL...]   # default 5, add search_web
# The count includes what the server's runtime does between calls, spread over the calls made:
# compare builds on the same machine, run after run.
# AUTH=1 makes the server an OAuth resource server (`--auth`, the test authorization server
# that scripts/test.sh installs into target/oauth/) and sends a bearer token with every call;
# without AUTH no token is sent.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-5}
shift || true
tools=("$@")
[ ${#tools[@]} -eq 0 ] && tools=(add search_web)
# BIN=dir measures the fleet_replica and fleet_load already built there (to compare builds).
if [ -z "${BIN:-}" ]; then
  cargo build --release --locked --features mcp,redis,mcp-auth --example fleet_replica --example fleet_load >&2
fi
bin=${BIN:-target/release/examples}
work=$(mktemp -d)
server=""
issuer_pid=""
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null
  [ -n "$issuer_pid" ] && kill "$issuer_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

auth=()
token=()
if [ -n "${AUTH:-}" ]; then
  NODE_PATH=target/oauth/node_modules node tests/oauth/server.js >"$work/issuer" 2>/dev/null &
  issuer_pid=$!
  for _ in $(seq 1 100); do [ -s "$work/issuer" ] && break; sleep 0.1; done
  issuer=$(head -n 1 "$work/issuer")
  auth=(--auth "$issuer")
fi
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
valgrind --tool=callgrind --callgrind-out-file="$work/cg.%p" "$bin/fleet_replica" memory "127.0.0.1:$port" /dev/null "${auth[@]}" \
  >"$work/url" 2>"$work/valgrind.log" &
server=$!
for _ in $(seq 1 600); do
  url=$(head -n 1 "$work/url" 2>/dev/null || true)
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { echo "the server did not start" >&2; exit 1; }
if [ -n "${AUTH:-}" ]; then
  token=(--token "$(python3 - "$issuer" "$url" <<'PY'
import json, sys, urllib.parse, urllib.request
issuer, resource = sys.argv[1], sys.argv[2]
form = urllib.parse.urlencode({"grant_type": "client_credentials", "sub": "bench", "aud": resource}).encode()
print(json.load(urllib.request.urlopen(f"{issuer}/token", form))["access_token"])
PY
)")
fi

printf '%-12s %14s %10s\n' tool instructions/call calls
for tool in "${tools[@]}"; do
  "$bin/fleet_load" --urls "$url" --tool "$tool" --clients 1 --seconds 1 "${token[@]}" >/dev/null
  callgrind_control -z "$server" >/dev/null
  result=$("$bin/fleet_load" --urls "$url" --tool "$tool" --clients 1 --seconds "$seconds" "${token[@]}")
  rm -f "$work"/cg.*.*
  callgrind_control -d "$server" >/dev/null
  sleep 1
  total=0
  for dump in "$work"/cg.*.*; do
    n=$(callgrind_annotate "$dump" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')
    total=$((total + ${n:-0}))
  done
  calls=$(python3 -c 'import json,sys; r = json.loads(sys.argv[1]); print(r["calls"])' "$result")
  printf '%-12s %14d %10d\n' "$tool" $((total / calls)) "$calls"
done

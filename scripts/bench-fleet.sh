#!/usr/bin/env bash
# Load figures for MCP over streamable HTTP on loopback (docs/performance.md, "MCP over HTTP"):
# calls per second and p50/p99 latency of `tools/call` for a trivial tool (`add`) and
# `search_web`, at 1, 16 and 64 concurrent clients, for
#   - a bare rmcp server with rmcp's own #[tool] macro (bench-fleet/, a crate of its own),
#   - a tower-mcp server with its ToolBuilder and schema validation on (bench-fleet/tower-mcp/,
#     a crate of its own too),
#   - one toolsmith process with its state in memory (examples/fleet_replica.rs),
#   - three toolsmith processes sharing their state in one Redis, called round-robin;
# then the memory one open 2025-11-25 session costs each server.
# With `auth`: one toolsmith process as an OAuth resource server (every request's JWT checked,
# a verified token kept until it expires) against the same process without authorization,
# measured interleaved, off then on, three rounds (needs the test authorization server that
# scripts/test.sh installs into target/oauth/).
#
# Usage: bash scripts/bench-fleet.sh [seconds per measurement, default 5] [calls|sessions|auth]
# (the second argument measures only that part; calls and sessions by default)
# Needs redis-server (scripts/test.sh installs it). Every server listens on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
per=${1:-5}
part=${2:-all}
cargo build --release --locked --features mcp,redis,mcp-auth --example fleet_replica --example fleet_load >&2
if [ "$part" != auth ]; then
  cargo build --release --manifest-path bench-fleet/Cargo.toml --target-dir target/bench-fleet >&2
  cargo build --release --manifest-path bench-fleet/tower-mcp/Cargo.toml --target-dir target/bench-fleet >&2
fi
bin=target/release/examples
bare_bin=target/bench-fleet/release/bare_rmcp
tower_bin=target/bench-fleet/release/tower_mcp
work=$(mktemp -d)
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }

# Starts a server in the background; sets $url to the first line it prints, $pid to it.
serve() {
  local out="$work/out.$RANDOM"
  "$@" >"$out" 2>/dev/null &
  pid=$!
  pids+=("$pid")
  for _ in $(seq 1 200); do
    url=$(head -n 1 "$out" 2>/dev/null || true)
    [ -n "$url" ] && return 0
    sleep 0.05
  done
  echo "a server did not start: $*" >&2
  exit 1
}

redis_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no >/dev/null &
pids+=("$!")
for _ in $(seq 1 100); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break; sleep 0.05; done
redis="redis://127.0.0.1:$redis_port/"

if [ "$part" = auth ]; then
  [ -d target/oauth/node_modules/oauth2-mock-server ] || { echo "run scripts/test.sh first: it installs the authorization server into target/oauth" >&2; exit 1; }
  NODE_PATH=target/oauth/node_modules serve node tests/oauth/server.js; issuer=$url
  port=$(free_port)
  serve "$bin/fleet_replica" memory "127.0.0.1:$port" /dev/null --auth "$issuer"; on=$url
  serve "$bin/fleet_replica" memory 127.0.0.1:0 /dev/null; off=$url
  token=$(python3 - "$issuer" "$on" <<'PY'
import json, sys, urllib.parse, urllib.request
issuer, resource = sys.argv[1], sys.argv[2]
form = urllib.parse.urlencode({"grant_type": "client_credentials", "sub": "bench", "aud": resource}).encode()
print(json.load(urllib.request.urlopen(f"{issuer}/token", form))["access_token"])
PY
)
  echo "| tool | clients | round | authorization off | authorization on | on / off |"
  echo "|---|---:|---:|---|---|---:|"
  for clients in 1 16 64; do
    for round in 1 2 3; do
      off_r=$("$bin/fleet_load" --urls "$off" --tool add --clients "$clients" --seconds "$per")
      on_r=$("$bin/fleet_load" --urls "$on" --tool add --clients "$clients" --seconds "$per" --token "$token")
      python3 - "$clients" "$round" "$off_r" "$on_r" <<'PY'
import json, sys
clients, round_, off, on = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
cell = lambda r: f"{r['calls_per_s']:.0f}/s, p50 {r['p50_ms']:.2f} ms, p99 {r['p99_ms']:.2f} ms" + (f", {r['errors']} errors" if r["errors"] else "")
print(f"| `add` | {clients} | {round_} | {cell(off)} | {cell(on)} | {on['calls_per_s'] / off['calls_per_s']:.3f} |")
PY
    done
  done
  exit 0
fi

serve "$bare_bin" 127.0.0.1:0; bare=$url
serve "$tower_bin" 127.0.0.1:0; tower=$url
serve "$bin/fleet_replica" memory 127.0.0.1:0 /dev/null; one=$url
three=""
for _ in 1 2 3; do
  serve "$bin/fleet_replica" "$redis" 127.0.0.1:0 /dev/null
  three="${three:+$three,}$url"
done

if [ "$part" != sessions ]; then
  echo "| tool | clients | bare rmcp, 1 process | tower-mcp, 1 process | toolsmith, 1 process | toolsmith, 3 processes + Redis |"
  echo "|---|---:|---|---|---|---|"
  for tool in add search_web; do
    for clients in 1 16 64; do
      row="| \`$tool\` | $clients"
      for urls in "$bare" "$tower" "$one" "$three"; do
        result=$("$bin/fleet_load" --urls "$urls" --tool "$tool" --clients "$clients" --seconds "$per")
        row="$row | $(python3 - "$result" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
errors = f", {r['errors']} errors" if r["errors"] else ""
print(f"{r['calls_per_s']:.0f}/s, p50 {r['p50_ms']:.2f} ms, p99 {r['p99_ms']:.2f} ms{errors}")
PY
)"
      done
      echo "$row |"
    done
  done
fi

[ "$part" = calls ] && exit 0
# Memory per open session: the server's resident memory before and after 1,000 sessions.
rss_kib() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }
echo
echo "| server | resident memory, idle | with 1,000 open sessions | per session |"
echo "|---|---:|---:|---:|"
for server in bare tower-mcp toolsmith; do
  case $server in
    bare) serve "$bare_bin" 127.0.0.1:0 --sessions ;;
    tower-mcp) serve "$tower_bin" 127.0.0.1:0 --sessions ;;
    *) serve "$bin/fleet_replica" memory 127.0.0.1:0 /dev/null --sessions ;;
  esac
  target=$pid
  "$bin/fleet_load" --urls "$url" --sessions 1 >/dev/null 2>&1 & warm=$!
  sleep 0.5; kill "$warm" 2>/dev/null || true
  before=$(rss_kib "$target")
  out="$work/sessions.$server"
  "$bin/fleet_load" --urls "$url" --sessions 1000 >"$out" 2>&1 &
  holder=$!
  pids+=("$holder")
  for _ in $(seq 1 600); do grep -q sessions "$out" 2>/dev/null && break; sleep 0.1; done
  after=$(rss_kib "$target")
  kill "$holder" 2>/dev/null || true
  echo "| $server | $((before / 1024)) MiB | $((after / 1024)) MiB | $(( (after - before) / 1000 )) KiB |"
done

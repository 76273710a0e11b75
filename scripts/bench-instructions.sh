#!/usr/bin/env bash
# Instructions per call of each path of benches/call.rs, counted by callgrind: the difference
# between a run of 2,000 calls and one of 1,000, divided by 1,000, so that start-up and the
# first calls' caches cancel out. Repeatable to the instruction for the same binary.
# Needs valgrind. Usage: bash scripts/bench-instructions.sh [path...]
set -euo pipefail
cd "$(dirname "$0")/.."

paths=("$@")
if [ ${#paths[@]} -eq 0 ]; then
  paths=(floor call_into call_into_neutralize call_then_to_json call_into_value async_then_to_json one_violation
    four_violations idempotent_first idempotent_replay)
fi

bench=$(cargo bench --bench call --no-run --message-format=json 2>/dev/null \
  | python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "call" and m.get("executable"):
        print(m["executable"])')

count() {
  local out
  out=$(mktemp)
  TOOLSMITH_COUNT="$1:$2" valgrind --tool=callgrind --callgrind-out-file="$out" "$bench" \
    >/dev/null 2>&1
  callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }'
  rm -f "$out"
}

printf '%-22s %12s\n' path instructions/call
for path in "${paths[@]}"; do
  a=$(count "$path" 1000)
  b=$(count "$path" 2000)
  printf '%-22s %12d\n' "$path" $(((b - a) / 1000))
done

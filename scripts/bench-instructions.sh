#!/usr/bin/env bash
# Instructions per call of each path of benches/call.rs, counted by callgrind: the difference
# between a run of 2,000 calls and one of 1,000, divided by 1,000, so that start-up and the
# first calls' caches cancel out. Repeatable to the instruction for the same binary.
# With --streaming, the reads of benches/streaming.rs instead (500 and 1,000 reads of its
# document: whole, and streamed in 16- and 64-byte pieces). Those reads allocate blocks of
# every size, and glibc's allocator costs a few percent more or less from one process to the
# next (the heap's layout follows the hash tables' random seeds): each count is the median of
# three runs.
# Needs valgrind. Usage: bash scripts/bench-instructions.sh [--streaming] [path...]
set -euo pipefail
cd "$(dirname "$0")/.."

target=call
small=1000
runs=1
if [ "${1:-}" = --streaming ]; then
  target=streaming
  small=500
  runs=3
  shift
fi
paths=("$@")
if [ ${#paths[@]} -eq 0 ]; then
  if [ "$target" = streaming ]; then
    paths=(whole streamed_16 streamed_64)
  else
    paths=(floor call_into call_into_neutralize call_then_to_json call_into_value async_then_to_json
      one_violation four_violations idempotent_first idempotent_replay)
  fi
fi

bench=$(cargo bench --bench "$target" --no-run --message-format=json 2>/dev/null \
  | TARGET="$target" python3 -c 'import json,os,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == os.environ["TARGET"] and m.get("executable"):
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
  counts=()
  for _ in $(seq "$runs"); do
    a=$(count "$path" "$small")
    b=$(count "$path" $((2 * small)))
    counts+=($(((b - a) / small)))
  done
  median=$(printf '%s\n' "${counts[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  printf '%-22s %12d\n' "$path" "$median"
done

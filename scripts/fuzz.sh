#!/usr/bin/env bash
# Runs the fuzz targets (fuzz/fuzz_targets) with cargo-fuzz and libFuzzer.
#   bash scripts/fuzz.sh [RUNS]      # each target for RUNS executions (default 10,000,000)
# TARGETS="a b" picks targets; MAX_LEN sets the longest input tried (default 65,536 bytes);
# SANITIZER=none builds without AddressSanitizer (several times faster; the crates forbid
# unsafe code, so what it adds is a check of the dependencies' unsafe code).
# Installs cargo-fuzz from crates.io when missing. cargo-fuzz passes nightly-only flags to
# rustc; RUSTC_BOOTSTRAP=1 lets the stable toolchain take them. Each target's corpus and any
# crash inputs stay under fuzz/ (ignored by git). Prints, per target, the executions, the
# time, the peak memory and whether it crashed.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-10000000}"
if ! command -v cargo-fuzz >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi
export RUSTC_BOOTSTRAP=1
status=0
for target in ${TARGETS:-call_text mcp_line output_text ordinary_text stream_args}; do
  mkdir -p "fuzz/corpus/$target"
  log="target/fuzz-$target.log"
  mkdir -p target
  echo "== $target: $runs runs"
  start=$(date +%s)
  if /usr/bin/time -v cargo fuzz run --release -s "${SANITIZER:-address}" "$target" -- \
      -runs="$runs" -max_len="${MAX_LEN:-65536}" -rss_limit_mb=2048 -print_final_stats=1 \
      >"$log" 2>&1; then
    result="no crash"
  else
    result="FAILED (see $log and fuzz/artifacts/$target)"
    status=1
  fi
  end=$(date +%s)
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  peak=$(grep -o 'stat::peak_rss_mb: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  echo "$target: $execs executions in $((end - start)) s, peak RSS ${peak} MB, $result"
done
exit $status

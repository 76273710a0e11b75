#!/usr/bin/env bash
# The whole test suite, as CI runs it: formatting, lints, every test and doc test.
# Needs only the Rust toolchain (cargo, rustfmt, clippy); run from anywhere in the checkout.
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in rustfmt clippy-driver; do
  if ! command -v "$tool" >/dev/null 2>&1 && ! rustup which "$tool" >/dev/null 2>&1; then
    echo "missing $tool: install it with \`rustup component add ${tool%-driver}\`" >&2
    exit 1
  fi
done

echo "== cargo fmt --check"
cargo fmt --all --check

echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== cargo doc"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked

mkdir -p target
log=target/test-output.log
: > "$log"

echo "== cargo test"
cargo test --workspace --all-targets --locked 2>&1 | tee -a "$log"

echo "== doc tests"
cargo test --workspace --doc --locked 2>&1 | tee -a "$log"

# One closing line for the whole run, summed over every test binary and doc-test crate.
awk '/^test result:/ { passed += $4; failed += $6 } END { printf "%d passed, %d failed\n", passed, failed }' "$log"

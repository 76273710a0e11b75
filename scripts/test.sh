#!/usr/bin/env bash
# The whole test suite, as CI runs it: formatting, lints, every test and doc test.
# Needs only the Rust toolchain (cargo, rustfmt, clippy); run from anywhere in the checkout.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all --check

echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== cargo test"
cargo test --workspace --all-targets --locked

echo "== doc tests"
cargo test --workspace --doc --locked

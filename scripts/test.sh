#!/usr/bin/env bash
# The whole test suite, as CI runs it: formatting, lints, every test and doc test.
# Needs the Rust toolchain (cargo, rustfmt, clippy; cargo-nextest where it is installed, which
# runs the tests side by side), python3, node and npm; installs the Python
# oracles into target/oracles/ from PyPI, redis-server from Debian, an OAuth authorization server
# into target/oauth/, a Restate server into target/restate/ and Node 22 with the MCP conformance
# suite into target/conformance/ from npm on first run. Run from anywhere in the checkout.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each step's heading says when it started, in seconds since the run began: where a slow run
# spent its time.
step() {
  printf '== %s (at %d s)\n' "$1" "$SECONDS"
}

for tool in rustfmt clippy-driver; do
  if ! command -v "$tool" >/dev/null 2>&1 && ! rustup which "$tool" >/dev/null 2>&1; then
    echo "missing $tool: install it with \`rustup component add ${tool%-driver}\`" >&2
    exit 1
  fi
done

# Python oracles (provider SDKs) in a virtualenv under target/, made once and reused.
venv=target/oracles/venv
requirements=tests/oracles/requirements.txt
if ! cmp -s "$requirements" "$venv/requirements.txt" 2>/dev/null; then
  step "installing the Python oracles into $venv"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
  cp "$requirements" "$venv/requirements.txt"
fi
TOOLSMITH_ORACLES="$(pwd)/$venv/bin/python"
export TOOLSMITH_ORACLES

# A real Redis for the idempotency tests (they start their own servers on free ports).
if ! command -v redis-server >/dev/null 2>&1; then
  step "installing redis-server"
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq redis-server >/dev/null; else sudo apt-get update -qq && sudo apt-get install -y -qq redis-server >/dev/null; fi
fi
export TOOLSMITH_REQUIRE_REDIS=1

# An OAuth authorization server for the MCP authorization tests (oauth2-mock-server, pinned in
# tests/oauth/), installed under target/oauth/ on first run; the tests start it on free ports.
oauth=target/oauth
if ! cmp -s tests/oauth/package-lock.json "$oauth/package-lock.json" 2>/dev/null \
  || [ ! -d "$oauth/node_modules/oauth2-mock-server" ]; then
  step "installing the test authorization server into $oauth"
  rm -rf "$oauth"
  mkdir -p "$oauth"
  cp tests/oauth/package.json tests/oauth/package-lock.json "$oauth/"
  (cd "$oauth" && npm ci --no-audit --no-fund --loglevel=error)
fi
export TOOLSMITH_REQUIRE_OAUTH=1

# A Restate server for the durable-engine tests (the npm package @restatedev/restate-server,
# pinned in tests/restate/), installed under target/restate/ on first run; the tests start it
# on free ports on 127.0.0.1. Install scripts are not run: the server is a prebuilt binary.
restate=target/restate
if ! cmp -s tests/restate/package-lock.json "$restate/package-lock.json" 2>/dev/null \
  || [ ! -d "$restate/node_modules/@restatedev/restate-server-linux-x64" ]; then
  step "installing the Restate server into $restate"
  rm -rf "$restate"
  mkdir -p "$restate"
  cp tests/restate/package.json tests/restate/package-lock.json "$restate/"
  (cd "$restate" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
fi
TOOLSMITH_RESTATE_SERVER="$(pwd)/$restate/node_modules/@restatedev/restate-server-linux-x64/bin/restate-server"
export TOOLSMITH_RESTATE_SERVER
export TOOLSMITH_REQUIRE_RESTATE=1

# One build of each crate, no incremental caches: a run builds everything once, and the caches
# would double the disk it needs.
export CARGO_INCREMENTAL=0

step "cargo fmt --check"
cargo fmt --all --check

# Reads the sources only: a broken layering fails in seconds, before any build.
step "module layers (no import cycles, every import points down)"
bash scripts/layers.sh

step "cargo clippy"
cargo clippy --workspace --all-targets --all-features --locked -- -D warnings

step "cargo doc"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --all-features --locked

mkdir -p target
log=target/test-output.log
: > "$log"

step "cargo build --examples (the MCP client test runs the mcp_server example)"
cargo build --workspace --examples --all-features --locked

# With cargo-nextest, tests run side by side (.config/nextest.toml), and the compile-fail and
# compile-pass cases (tests/ui.rs) start now, in the background, with the default features as
# a user's crate has them: trybuild builds a crate of its own with the package's dependencies,
# minutes of compiling that fill the cores the feature-set checks below leave idle. (Their
# expected errors are the same with every feature; without nextest they run with all of them.)
ui=
if cargo nextest --version >/dev/null 2>&1; then
  step "the compile-fail and compile-pass cases, in the background"
  ui_log=target/test-output-ui.log
  cargo nextest run --profile ci --locked --test ui >"$ui_log" 2>&1 &
  ui=$!
  trap '[ -z "$ui" ] || kill "$ui" 2>/dev/null || true' EXIT
fi

step "each feature set builds without a warning, as a user's build would"
for features in "" testing redis mcp mcp-auth tokens mcp-client async-openai anyhow restate sandbox otel "testing redis mcp tokens"; do
  printf '   features "%s" (at %d s)\n' "$features" "$SECONDS"
  out=$(cargo check --lib -p toolsmith --no-default-features --features "$features" --locked --color never 2>&1) || { echo "$out"; exit 1; }
  if grep -q '^warning' <<<"$out"; then
    echo "warnings with features \"$features\":"; echo "$out"; exit 1
  fi
done

step "cargo test"
if [ -n "$ui" ]; then
  # The slowest tests first; the benches (criterion's own harness, each benchmark run once
  # as a test) after them.
  cargo nextest run --profile ci --workspace --lib --bins --tests --examples --all-features \
    --locked -E 'not binary(ui)' 2>&1 | tee -a "$log"
  cargo test --workspace --bench '*' --all-features --locked 2>&1 | tee -a "$log"
  step "the compile-fail and compile-pass cases, finished"
  status=0
  wait "$ui" || status=$?
  ui=
  tee -a "$log" <"$ui_log"
  [ "$status" = 0 ] || exit "$status"
else
  cargo test --workspace --all-targets --all-features --locked 2>&1 | tee -a "$log"
fi

step "doc tests"
cargo test --workspace --doc --all-features --locked 2>&1 | tee -a "$log"

step "the exported bytes with the default features, as recorded with all of them"
cargo test --locked --test tool_choice 2>&1 | tee -a "$log"

step "MCP conformance suite, 2025-11-25 and 2026-07-28 (scripts/conformance.sh)"
TOOLSMITH_CONFORMANCE_ALL_FEATURES=1 bash scripts/conformance.sh 2025-11-25 2026-07-28

step "benchmarks compile (they are timed by hand: see docs/performance.md)"
# In the test profile the tests were built in: whether they compile is what CI checks, and an
# optimized build of every dependency again would add minutes and gigabytes for nothing.
cargo build --workspace --benches --all-features --locked

step "every crate packages and builds from its packaged sources"
# Cargo verifies each package against the others through a temporary local registry, whose
# sources it unpacks under $CARGO_HOME/registry/src/-<hash>/ and whose builds it keeps in
# target/debug: both are reused for the same version number, as registry sources never
# change. Left from an earlier run they are the old code, so remove them (and this
# checkout's own builds with them, whose tests have run).
rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/toolsmith-* target/package \
  target/debug/.fingerprint/toolsmith-* target/debug/deps/libtoolsmith_* target/debug/deps/toolsmith_*
cargo package --workspace --locked
rm -rf target/package

step "fuzz targets compile (they are run by scripts/fuzz.sh)"
# Not --locked: fuzz/ is its own workspace, and its lock file gains the entries a change to
# the crates it builds needs (existing versions stay as they are).
cargo check --manifest-path fuzz/Cargo.toml --bins --target-dir target/fuzz-check

step "the load benchmark's baselines compile, rmcp and tower-mcp (run by scripts/bench-fleet.sh)"
# Its own workspace too (bench-fleet/), built beside the fuzz targets to share their builds.
cargo check --manifest-path bench-fleet/Cargo.toml --target-dir target/fuzz-check
cargo check --manifest-path bench-fleet/tower-mcp/Cargo.toml --target-dir target/fuzz-check

# One closing line for the whole run, summed over every test binary and doc-test crate:
# `cargo test` closes each binary with a `test result:` line, nextest the whole run with a
# `Summary` line (`N tests run: N passed, M failed, K skipped`).
awk '/^test result:/ { passed += $4; failed += $6 }
  /^ *Summary \[/ { for (i = 1; i < NF; i++) { if ($(i + 1) ~ /^passed/) passed += $i; if ($(i + 1) ~ /^failed/) failed += $i } }
  END { printf "%d passed, %d failed\n", passed, failed }' "$log"
step "done"

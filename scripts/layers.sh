#!/usr/bin/env bash
# Checks that toolsmith-core's modules import one way: no import cycles, no import of a higher
# floor (docs/architecture.md). Installs cargo-modules into target/tools/ on first run.
set -euo pipefail
cd "$(dirname "$0")/.."

version=0.27.0 # the last release that builds with rustc 1.95
tools="$(pwd)/target/tools"
if ! "$tools/bin/cargo-modules" --version 2>/dev/null | grep -q " $version"; then
  echo "== installing cargo-modules $version into $tools"
  cargo install --quiet --locked --root "$tools" cargo-modules --version "$version"
fi

"$tools/bin/cargo-modules" dependencies -p toolsmith-core --lib --all-features \
  --no-externs --no-sysroot --no-fns --no-types --no-traits --no-owns --layout dot \
  | python3 scripts/layers.py

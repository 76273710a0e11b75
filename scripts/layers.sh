#!/usr/bin/env bash
# Checks that the crates' modules import one way: no import cycles (toolsmith-core and
# toolsmith-macros), no path through a crate's root, and in toolsmith-core no import of a
# higher floor (docs/architecture.md). Reads the sources with python3; needs nothing built.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 scripts/test_modgraph.py
python3 scripts/layers.py

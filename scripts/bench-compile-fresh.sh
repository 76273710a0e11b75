#!/usr/bin/env bash
# Compile time of a fresh one-tool crate from clean: the same tool written with toolsmith's
# `#[tool]` (default features) and with rmcp's `#[tool]` (its default features), both in the
# dev profile, each build from an empty target directory with the crates already downloaded,
# the two interleaved RUNS times (3 by default). Prints each build's wall time and the median
# ratio.
#
#   bash scripts/bench-compile-fresh.sh
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bench="$root/target/compile-bench/fresh"
runs=${RUNS:-3}
mkdir -p "$bench/toolsmith/src" "$bench/rmcp/src"

cat > "$bench/toolsmith/Cargo.toml" <<EOF
[package]
name = "fresh_toolsmith"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
toolsmith = { path = "$root" }

[workspace]
EOF
cat > "$bench/toolsmith/src/main.rs" <<'EOF'
use toolsmith::{tool, Dialect, Toolbox};

/// Adds two integers. Read-only. Not for other arithmetic.
#[tool(effect = "read")]
fn add(
    /// The first integer.
    left: u32,
    /// The second integer.
    right: u32,
) -> u64 {
    u64::from(left) + u64::from(right)
}

fn main() {
    let toolbox = Toolbox::new().with(Add);
    match toolbox.export(Dialect::Anthropic { strict: false }) {
        Ok(tools) => println!("{tools}"),
        Err(err) => eprintln!("{err}"),
    }
}
EOF

cat > "$bench/rmcp/Cargo.toml" <<EOF
[package]
name = "fresh_rmcp"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
rmcp = "3.11"
serde = { version = "1", features = ["derive"] }
serde_json = "1"
schemars = "1"

[workspace]
EOF
cat > "$bench/rmcp/src/main.rs" <<'EOF'
use rmcp::handler::server::wrapper::Parameters;
use rmcp::{tool, tool_router};
use serde::Deserialize;

struct Server;

#[derive(Deserialize, schemars::JsonSchema)]
struct AddParameters {
    /// The first integer.
    left: u32,
    /// The second integer.
    right: u32,
}

#[tool_router(server_handler)]
impl Server {
    /// Adds two integers. Read-only. Not for other arithmetic.
    #[tool]
    fn add(&self, Parameters(AddParameters { left, right }): Parameters<AddParameters>) -> String {
        (u64::from(left) + u64::from(right)).to_string()
    }
}

fn main() {
    let tools = Server::tool_router().list_all();
    println!("{}", serde_json::to_string(&tools).unwrap_or_default());
}
EOF

# Downloads and the lock files first, outside the timings.
for kind in toolsmith rmcp; do
  (cd "$bench/$kind" && cargo fetch --quiet)
done

build() {
  local kind=$1
  rm -rf "$bench/$kind/target"
  local start end
  start=$(date +%s.%N)
  (cd "$bench/$kind" && CARGO_TARGET_DIR="$bench/$kind/target" cargo build --quiet --offline)
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}

declare -a ts rm
for i in $(seq "$runs"); do
  t=$(build toolsmith); r=$(build rmcp)
  ts+=("$t"); rm+=("$r")
  printf 'run %d: toolsmith %.1f s, rmcp %.1f s\n' "$i" "$t" "$r"
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
mt=$(median "${ts[@]}"); mr=$(median "${rm[@]}")
printf 'median: toolsmith %.1f s, rmcp %.1f s, ratio %.2fx\n' "$mt" "$mr" "$(echo "$mt / $mr" | bc -l)"

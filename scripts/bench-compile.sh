#!/usr/bin/env bash
# Compile-time benchmark: N tools written with `#[tool]` against the same N tools written by
# hand (serde + schemars derives and a `match` dispatcher), for N = 50 and 200.
#
#   bash scripts/bench-compile.sh            # N = 50 and 200, 5 builds each
#   RUNS=3 SIZES="50" bash scripts/bench-compile.sh
#   COUNT=1 SIZES="50" bash scripts/bench-compile.sh   # instructions instead of seconds
#
# Each crate is generated under target/compile-bench/, its dependencies are built once in a
# shared target directory, then the crate alone is rebuilt RUNS times (dev profile, after
# touching its source); the median build time is reported with the ratio #[tool] / hand.
# With COUNT=1, one rebuild of each crate runs its rustc under valgrind's callgrind
# (a target directory of its own) and the instructions it executed are reported: unlike
# the wall time, the count repeats to within a few parts in a thousand on a busy machine.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bench="$root/target/compile-bench"
runs=${RUNS:-5}
sizes=${SIZES:-"50 200"}
export CARGO_TARGET_DIR="$bench/target"
mkdir -p "$bench"

# The tools of both crates: three parameters each (a bounded string, a bounded integer with a
# default, an optional enum), a doc comment on the tool and on every parameter.
generate() {
  local kind=$1 n=$2 dir=$3
  mkdir -p "$dir/src"
  if [ "$kind" = macro ]; then
    cat > "$dir/Cargo.toml" <<EOF
[package]
name = "bench_macro_$n"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
toolsmith = { path = "$root" }
serde = { version = "1", features = ["derive"] }
schemars = "1"
EOF
  else
    cat > "$dir/Cargo.toml" <<EOF
[package]
name = "bench_hand_$n"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
serde = { version = "1", features = ["derive"] }
serde_json = "1"
schemars = "1"
EOF
  fi
  # Its own workspace, so the benchmark is not taken for a member of toolsmith's.
  printf '\n[workspace]\n' >> "$dir/Cargo.toml"
  {
    echo "#![allow(dead_code)]"
    echo "use serde::{Deserialize, Serialize};"
    echo "use schemars::JsonSchema;"
    echo
    echo "/// A recent time window."
    echo "#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema)]"
    echo "#[serde(rename_all = \"lowercase\")]"
    echo "pub enum Window { /// The last day.
D1, /// The last week.
W1, /// The last month.
M1 }"
    echo
    echo "/// What a search would run."
    echo "#[derive(Debug, Serialize, JsonSchema)]"
    echo "pub struct Plan { /// The keywords.
pub query: String, /// How many results.
pub num_results: u8, /// The window.
pub window: Option<Window> }"
    for i in $(seq 1 "$n"); do
      if [ "$kind" = macro ]; then
        cat <<EOF

/// Search source $i for real-time information. Read-only. Not for private documents.
#[toolsmith::tool(effect = "read")]
pub fn search_source_$i(
    /// Search keywords in natural language; never a URL or SQL.
    #[arg(length(min = 2, max = 300))]
    query: String,
    /// How many results to return.
    #[arg(range(min = 1, max = 10), default = 5)]
    num_results: u8,
    /// Only results from this recent window; omit for no limit.
    window: Option<Window>,
) -> Plan {
    Plan { query, num_results, window }
}
EOF
      else
        cat <<EOF

/// Arguments of search_source_$i.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchSource${i}Args {
    /// Search keywords in natural language; never a URL or SQL.
    #[schemars(length(min = 2, max = 300))]
    pub query: String,
    /// How many results to return.
    #[schemars(range(min = 1, max = 10))]
    #[serde(default)]
    pub num_results: Option<u8>,
    /// Only results from this recent window; omit for no limit.
    #[serde(default)]
    pub window: Option<Window>,
}

/// Search source $i for real-time information. Read-only. Not for private documents.
pub fn search_source_$i(query: String, num_results: u8, window: Option<Window>) -> Plan {
    Plan { query, num_results, window }
}
EOF
      fi
    done
    if [ "$kind" = macro ]; then
      echo
      echo "pub fn toolbox() -> toolsmith::Toolbox {"
      echo "    toolsmith::Toolbox::new()"
      for i in $(seq 1 "$n"); do echo "        .with(SearchSource$i)"; done
      echo "}"
    else
      echo
      echo "pub fn schemas() -> Vec<(&'static str, schemars::Schema)> {"
      echo "    vec!["
      for i in $(seq 1 "$n"); do echo "        (\"search_source_$i\", schemars::schema_for!(SearchSource${i}Args)),"; done
      echo "    ]"
      echo "}"
      echo
      echo "pub fn dispatch(name: &str, arguments: &str) -> Result<String, String> {"
      echo "    match name {"
      for i in $(seq 1 "$n"); do
        echo "        \"search_source_$i\" => {"
        echo "            let a: SearchSource${i}Args = serde_json::from_str(arguments).map_err(|e| e.to_string())?;"
        echo "            serde_json::to_string(&search_source_$i(a.query, a.num_results.unwrap_or(5), a.window)).map_err(|e| e.to_string())"
        echo "        }"
      done
      echo "        other => Err(format!(\"unknown tool {other}\")),"
      echo "    }"
      echo "}"
    fi
  } > "$dir/src/lib.rs"
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

build_times() {
  local dir=$1
  (cd "$dir" && cargo build --quiet) # dependencies, once
  for _ in $(seq 1 "$runs"); do
    touch "$dir/src/lib.rs"
    local start end
    start=$(date +%s.%N)
    (cd "$dir" && cargo build --quiet)
    end=$(date +%s.%N)
    awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f\n", b - a }'
  done
}

# The instructions rustc executes for one rebuild of the crate in `$1` after touching its
# source, counted by callgrind through a RUSTC_WRAPPER that wraps only the benchmark's crate.
count_instructions() {
  local dir=$1 wrapper="$bench/count-rustc.sh" out="$bench/count.out" log="$bench/count.log"
  {
    echo '#!/usr/bin/env bash'
    echo 'rustc="$1"; shift'
    echo 'case " $* " in'
    echo "  *\" --crate-name bench_\"*) [ -n \"\${COUNT_NOW:-}\" ] && exec valgrind --tool=callgrind --callgrind-out-file=\"$out\" \"\$rustc\" \"\$@\" 2>\"$log\" ;;"
    echo 'esac'
    echo 'exec "$rustc" "$@"'
  } > "$wrapper"
  chmod +x "$wrapper"
  export CARGO_TARGET_DIR="$bench/target-count"
  (cd "$dir" && RUSTC_WRAPPER="$wrapper" cargo build --quiet) # dependencies, once
  touch "$dir/src/lib.rs"
  (cd "$dir" && COUNT_NOW=1 RUSTC_WRAPPER="$wrapper" cargo build --quiet)
  awk '/Collected/ { print $4 }' "$log"
}

if [ "${COUNT:-0}" = 1 ]; then
  command -v valgrind > /dev/null || { echo "COUNT=1 needs valgrind" >&2; exit 1; }
  printf '%-6s %16s %16s %8s\n' "tools" "#[tool] (instr)" "by hand (instr)" "ratio"
  for n in $sizes; do
    generate macro "$n" "$bench/macro-$n"
    generate hand "$n" "$bench/hand-$n"
    macro=$(count_instructions "$bench/macro-$n")
    hand=$(count_instructions "$bench/hand-$n")
    printf '%-6s %16s %16s %7.3fx\n' "$n" "$macro" "$hand" "$(awk -v m="$macro" -v h="$hand" 'BEGIN { print m / h }')"
  done
  exit 0
fi

printf '%-6s %14s %14s %8s %8s\n' "tools" "#[tool] (s)" "by hand (s)" "ratio" "target"
for n in $sizes; do
  generate macro "$n" "$bench/macro-$n"
  generate hand "$n" "$bench/hand-$n"
  macro=$(build_times "$bench/macro-$n" | median)
  hand=$(build_times "$bench/hand-$n" | median)
  ratio=$(awk -v m="$macro" -v h="$hand" 'BEGIN { printf "%.3f", m / h }')
  verdict=$(awk -v r="$ratio" 'BEGIN { print (r <= 1.15) ? "ok" : "MISSED" }')
  printf '%-6s %14.2f %14.2f %7.3fx %7.2fx %s\n' "$n" "$macro" "$hand" "$ratio" 1.15 "$verdict"
done

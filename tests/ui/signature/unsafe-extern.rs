// A tool is a plain safe Rust function: `unsafe fn` and an `extern` ABI are refused, each on its keyword.
use toolsmith::tool;

/// Reads a counter. Read-only. Not for writes.
#[tool(effect = "read")]
unsafe fn read_counter() -> u32 {
    1
}

/// Reads a gauge. Read-only. Not for writes.
#[tool(effect = "read")]
extern "C" fn read_gauge() -> u32 {
    2
}

fn main() {}

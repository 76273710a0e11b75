// Values of `#[tool]` keys that cannot work, each reported on the value with what would.
use toolsmith::tool;

/// Reads a counter. Read-only. Not for writes.
#[tool(effect = "read", timeout = "soon", concurrency = 0)]
fn read_counter() -> u32 {
    1
}

/// Reads a gauge. Read-only. Not for writes.
#[tool(effect = "read", limits(max_bytes = 0, max_depth = 4, max_depth = 8))]
fn read_gauge() -> u32 {
    2
}

/// Reads a meter. Read-only. Not for writes.
#[tool(effect = "read", allow(tool_name), deny(tool_name))]
fn read_meter() -> u32 {
    3
}

/// Reads a dial. Read-only. Not for writes.
#[tool(effect = "delete")]
fn read_dial() -> u32 {
    4
}

/// Reads a level. Read-only. Not for writes.
#[tool(effect = "read", invalid_example(arguments = r#"{}"#, field = "/x"))]
fn read_level() -> u32 {
    5
}

fn main() {}

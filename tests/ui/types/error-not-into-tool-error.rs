// A `Result` whose error does not convert into `ToolError` is reported on the return type.
use toolsmith::tool;

struct Opaque;

/// Fails.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
fn fail(
    /// Anything.
    n: u32,
) -> Result<u32, Opaque> {
    if n > 0 { Ok(n) } else { Err(Opaque) }
}

fn main() {}

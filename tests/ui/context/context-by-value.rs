// The context taken by value is reported on its type.
use toolsmith::{tool, ToolContext};

/// Greets.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
fn greet(
    ctx: ToolContext,
    /// Who to greet.
    name: String,
) -> String {
    let _ = ctx;
    name
}

fn main() {}

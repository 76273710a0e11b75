// The context in any position but the first is reported on that parameter.
use toolsmith::{tool, ToolContext};

/// Greets.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
fn greet(
    /// Who to greet.
    name: String,
    ctx: &ToolContext,
) -> String {
    let _ = ctx;
    name
}

fn main() {}

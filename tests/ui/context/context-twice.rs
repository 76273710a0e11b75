// A second context parameter is reported on its type.
use toolsmith::{tool, ToolContext};

/// Greets.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
fn greet(ctx: &ToolContext, other: &ToolContext) -> String {
    let _ = (ctx, other);
    String::new()
}

fn main() {}

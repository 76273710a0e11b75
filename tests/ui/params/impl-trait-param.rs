// An `impl Trait` parameter is reported on its type.
use toolsmith::tool;

/// Greets.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
fn greet(
    /// Who to greet.
    name: impl Into<String>,
) -> String {
    name.into()
}

fn main() {}

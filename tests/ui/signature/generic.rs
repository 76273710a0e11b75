// A generic tool is reported on its generics.
use toolsmith::tool;

/// Echoes.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
fn echo<T: serde::Serialize>(
    /// The value.
    value: String,
) -> String {
    value
}

fn main() {}

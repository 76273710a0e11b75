// A destructuring pattern is reported on the pattern.
use toolsmith::tool;

/// Adds.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
fn add(
    /// The two addends.
    (a, b): (i64, i64),
) -> i64 {
    a + b
}

fn main() {}

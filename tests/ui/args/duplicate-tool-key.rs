// A `#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]` key given twice is reported on the second occurrence.
use toolsmith::tool;

/// Counts.
#[tool(name = "count", name = "count_again", effect = "read", allow(description_scope, tool_name, unbounded_string))]
fn count(
    /// How many.
    n: u32,
) -> u32 {
    n
}

fn main() {}

// A key given twice is reported on the second occurrence.
use toolsmith::tool;

/// Counts.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
fn count(
    /// How many.
    #[arg(range(min = 1), range(max = 10))]
    n: u32,
) -> u32 {
    n
}

fn main() {}

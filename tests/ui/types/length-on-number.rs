// `length` on a number is reported on the `length` key.
use toolsmith::tool;

/// Counts.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
fn count(
    /// How many.
    #[arg(length(max = 3))]
    n: u32,
) -> u32 {
    n
}

fn main() {}

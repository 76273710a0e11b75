// A `#[tool]` key given twice is reported on the second occurrence.
use toolsmith::tool;

/// Counts.
#[tool(name = "count", name = "count_again")]
fn count(
    /// How many.
    n: u32,
) -> u32 {
    n
}

fn main() {}

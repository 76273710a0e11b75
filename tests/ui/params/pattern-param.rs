// A destructuring pattern is reported on the pattern.
use toolsmith::tool;

/// Adds.
#[tool]
fn add(
    /// The two addends.
    (a, b): (i64, i64),
) -> i64 {
    a + b
}

fn main() {}

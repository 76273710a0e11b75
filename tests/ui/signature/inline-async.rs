// `inline` is for synchronous tools: an async tool already runs in place.
use toolsmith::tool;

/// Adds two integers. Pure, no side effects. Not for floats.
#[tool(effect = "read", inline)]
async fn add(
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
) -> i64 {
    a + b
}

fn main() {}

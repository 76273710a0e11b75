// An unknown key inside `length(...)` is reported on that key.
use toolsmith::tool;

/// Searches.
#[tool]
fn search(
    /// What to look for.
    #[arg(length(minimum = 2))]
    query: String,
) -> String {
    query
}

fn main() {}

// An unknown `#[tool]` key is reported on the key, with the keys that exist.
use toolsmith::tool;

/// Searches.
#[tool(nmae = "find")]
fn search(
    /// What to look for.
    query: String,
) -> String {
    query
}

fn main() {}

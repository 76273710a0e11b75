// Fails: `unbounded_string` on a `String` parameter with no maximum length, pattern or format.
use toolsmith::tool;

/// Searches notes. Read-only. Not for shared drives.
#[tool(effect = "read")]
fn search_notes(
    /// Keywords.
    query: String,
) -> usize {
    query.len()
}

fn main() {}

// Fails: `unbounded_string` on a `String` parameter with no maximum length, pattern or format (warn by default;
// denied here).
use toolsmith::tool;

/// Searches notes. Read-only. Not for shared drives.
#[tool(effect = "read", deny(unbounded_string))]
fn search_notes(
    /// Keywords.
    query: String,
) -> usize {
    query.len()
}

fn main() {}

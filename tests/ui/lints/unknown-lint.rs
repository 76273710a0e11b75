// An unknown lint name in `allow(...)` is reported on the name.
use toolsmith::tool;

/// Searches notes. Read-only. Not for shared drives.
#[tool(effect = "read", allow(unbounded_strings))]
fn search_notes(
    /// Keywords.
    query: String,
) -> usize {
    query.len()
}

fn main() {}

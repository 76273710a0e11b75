// Compiles: `unbounded_string` allowed on the tool.
use toolsmith::{Toolbox, tool};

/// Searches notes. Read-only. Not for shared drives.
#[tool(effect = "read", allow(unbounded_string))]
fn search_notes(
    /// Keywords.
    query: String,
) -> usize {
    query.len()
}

fn main() {
    assert_eq!(Toolbox::new().with(SearchNotes).len(), 1);
}

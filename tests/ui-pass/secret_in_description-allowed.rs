// Compiles: `secret_in_description` allowed on the tool.
use toolsmith::{Toolbox, tool};

/// Searches notes in postgres://app:pw@db/notes. Read-only. Not for shared drives.
#[tool(effect = "read", allow(secret_in_description))]
fn search_notes(
    /// Keywords.
    #[arg(length(max = 100))]
    query: String,
) -> usize {
    query.len()
}

fn main() {
    assert_eq!(Toolbox::new().with(SearchNotes).len(), 1);
}

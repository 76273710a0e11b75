// Compiles: `description_scope` allowed on the tool.
use toolsmith::{Toolbox, tool};

/// Searches notes.
#[tool(effect = "read", allow(description_scope))]
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

// Compiles: `description_length` allowed on the tool.
use toolsmith::{Toolbox, tool};

/// Searches notes.
#[tool(effect = "read", description = "  ", allow(description_scope, description_length))]
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

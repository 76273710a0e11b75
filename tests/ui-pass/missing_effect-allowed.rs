// Compiles: `missing_effect` allowed on the tool.
use toolsmith::{Toolbox, tool};

/// Searches notes. Read-only. Not for shared drives.
#[tool(allow(missing_effect))]
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

// Compiles: `missing_docs` allowed on the tool.
use toolsmith::{Toolbox, tool};

#[tool(effect = "read", allow(missing_docs))]
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

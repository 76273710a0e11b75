// Compiles: a lint allowed on one parameter only.
use toolsmith::{Toolbox, tool};

/// Searches notes. Read-only. Not for shared drives.
#[tool(effect = "read")]
fn search_notes(
    /// Keywords.
    #[arg(allow(unbounded_string))]
    query: String,
    /// The notebook.
    #[arg(length(max = 50))]
    notebook: String,
) -> usize {
    query.len() + notebook.len()
}

fn main() {
    let toolbox = Toolbox::new().with(SearchNotes);
    assert!(toolbox.lint().is_empty(), "{:?}", toolbox.lint());
}

// Compiles: a list bounded by a `limit` parameter, a page, and `unbounded_list` allowed.
#![deny(deprecated)]
use toolsmith::output::Page;
use toolsmith::{Toolbox, tool};

/// Lists the notes in a folder. Read-only. Not for deleted notes.
#[tool(effect = "read")]
fn list_notes(
    /// The folder.
    #[arg(length(max = 100))]
    folder: String,
    /// How many notes at most.
    #[arg(range(min = 1, max = 50))]
    limit: usize,
) -> Vec<String> {
    vec![folder; limit]
}

/// Lists the folders, a page at a time. Read-only. Not for notes.
#[tool(effect = "read")]
fn list_folders() -> Page<String> {
    Page::last(vec!["inbox".to_owned()])
}

/// Lists the three note colours. Read-only. Not for notes.
#[tool(effect = "read", allow(unbounded_list))]
fn list_colours() -> Vec<&'static str> {
    vec!["red", "green", "blue"]
}

fn main() {
    let toolbox = Toolbox::new().with(ListNotes).with(ListFolders).with(ListColours);
    assert!(toolbox.lint().iter().all(|f| f.lint != "unbounded_list"));
}

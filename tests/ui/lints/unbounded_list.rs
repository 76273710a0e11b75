// Fails: `unbounded_list` on a tool that returns a list with no parameter that bounds it (warn by default; denied here).
use toolsmith::tool;

/// Lists the notes in a folder. Read-only. Not for deleted notes.
#[tool(effect = "read", deny(unbounded_list))]
fn list_notes(
    /// The folder.
    #[arg(length(max = 100))]
    folder: String,
) -> Vec<String> {
    vec![folder]
}

fn main() {}

// Fails: `secret_in_description` on a connection string in a description.
use toolsmith::tool;

/// Searches notes in postgres://app:pw@db/notes. Read-only. Not for shared drives.
#[tool(effect = "read")]
fn search_notes(
    /// Keywords.
    #[arg(length(max = 100))]
    query: String,
) -> usize {
    query.len()
}

fn main() {}

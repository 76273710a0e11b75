// Fails: `description_length` on a description that is empty after trimming (warn by default; denied here).
use toolsmith::tool;

/// Searches notes.
#[tool(effect = "read", description = "  ", allow(description_scope), deny(description_length))]
fn search_notes(
    /// Keywords.
    #[arg(length(max = 100))]
    query: String,
) -> usize {
    query.len()
}

fn main() {}

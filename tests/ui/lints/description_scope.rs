// Fails: `description_scope` on a description that says neither whether the tool writes nor when not to use it (warn by default; denied here).
use toolsmith::tool;

/// Searches notes.
#[tool(effect = "read", deny(description_scope))]
fn search_notes(
    /// Keywords.
    #[arg(length(max = 100))]
    query: String,
) -> usize {
    query.len()
}

fn main() {}

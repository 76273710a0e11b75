// Fails: `missing_effect` on a tool that declares no effect (warn by default; denied here).
use toolsmith::tool;

/// Searches notes. Read-only. Not for shared drives.
#[tool(deny(missing_effect))]
fn search_notes(
    /// Keywords.
    #[arg(length(max = 100))]
    query: String,
) -> usize {
    query.len()
}

fn main() {}

// A `warn` lint is a real compiler warning (shown here because `main` fails to compile).
use toolsmith::tool;

/// Searches notes.
#[tool(effect = "read")]
fn search_notes(
    /// Keywords.
    #[arg(length(max = 100))]
    query: String,
) -> usize {
    query.len()
}

fn main() {
    __FAIL__;
}

// A misspelled `#[arg]` key is one error: the parameter's lints (here `unbounded_string`, which
// the misspelled `length` would have satisfied) are not reported on top of it.
use toolsmith::tool;

/// Searches notes. Read-only. Not for shared drives.
#[tool(effect = "read")]
fn search_notes(
    /// What to look for.
    #[arg(lenght(max = 100))]
    query: String,
) -> String {
    query
}

fn main() {}

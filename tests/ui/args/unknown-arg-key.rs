// An unknown `#[arg]` key is reported on the key, with the keys that exist.
use toolsmith::tool;

/// Searches.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
fn search(
    /// What to look for.
    #[arg(lenght(min = 2))]
    query: String,
) -> String {
    query
}

fn main() {}

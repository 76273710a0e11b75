// An unknown key inside `length(...)` is reported on that key.
use toolsmith::tool;

/// Searches.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
fn search(
    /// What to look for.
    #[arg(length(minimum = 2))]
    query: String,
) -> String {
    query
}

fn main() {}

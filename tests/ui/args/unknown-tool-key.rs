// An unknown `#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]` key is reported on the key, with the keys that exist.
use toolsmith::tool;

/// Searches.
#[tool(nmae = "find", effect = "read", allow(description_scope, tool_name, unbounded_string))]
fn search(
    /// What to look for.
    query: String,
) -> String {
    query
}

fn main() {}

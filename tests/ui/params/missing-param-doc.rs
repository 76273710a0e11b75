// A parameter without a doc comment (and no `description`) is reported on its name.
use toolsmith::tool;

/// Searches.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
fn search(query: String) -> String {
    query
}

fn main() {}

// A tool without a doc comment (and no `description`) is reported on the function's name.
use toolsmith::tool;

#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
fn search(
    /// What to look for.
    query: String,
) -> String {
    query
}

fn main() {}

// An invalid tool still defines its function and its unit struct: only the real mistake
// (the missing parameter doc) is reported, not errors where the tool is used.
use toolsmith::{tool, Toolbox};

/// Searches.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
fn search(query: String) -> String {
    query
}

fn main() {
    let _ = search(String::from("direct call still type-checks"));
    let _toolbox = Toolbox::new().with(Search);
}

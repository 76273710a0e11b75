// A parameter without a doc comment (and no `description`) is reported on its name.
use toolsmith::tool;

/// Searches.
#[tool]
fn search(query: String) -> String {
    query
}

fn main() {}

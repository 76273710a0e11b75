// A tool without a doc comment (and no `description`) is reported on the function's name.
use toolsmith::tool;

#[tool]
fn search(
    /// What to look for.
    query: String,
) -> String {
    query
}

fn main() {}

// Fails: `missing_docs` on a tool without a doc comment.
use toolsmith::tool;

#[tool(effect = "read")]
fn search_notes(
    /// Keywords.
    #[arg(length(max = 100))]
    query: String,
) -> usize {
    query.len()
}

fn main() {}

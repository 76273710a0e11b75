// An unknown `#[arg]` key is reported on the key, with the keys that exist.
use toolsmith::tool;

/// Searches.
#[tool]
fn search(
    /// What to look for.
    #[arg(lenght(min = 2))]
    query: String,
) -> String {
    query
}

fn main() {}

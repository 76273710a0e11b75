// A crate that allows rustc's deprecation warnings still sees toolsmith's lints: each is muted
// by its own `allow`, not by `allow(deprecated)`. (`deny(warnings)` makes the warning fail the
// build, so that this case shows it.)
#![allow(deprecated)]
#![deny(warnings)]

use toolsmith::tool;

/// Searches the notes. Read-only.
#[tool(effect = "read")]
fn search_notes(
    /// Keywords.
    #[arg(length(max = 100))]
    query: String,
) -> usize {
    query.len()
}

fn main() {}

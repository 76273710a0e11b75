// An `impl Trait` parameter is reported on its type.
use toolsmith::tool;

/// Greets.
#[tool]
fn greet(
    /// Who to greet.
    name: impl Into<String>,
) -> String {
    name.into()
}

fn main() {}

// A generic tool is reported on its generics.
use toolsmith::tool;

/// Echoes.
#[tool]
fn echo<T: serde::Serialize>(
    /// The value.
    value: String,
) -> String {
    value
}

fn main() {}

// Fails: `open_map` on an open map parameter (warn by default; denied here).
use toolsmith::tool;

/// Sets labels on a note. Writes data. Not for tags.
#[tool(effect = "write", deny(open_map))]
fn set_labels(
    /// The labels.
    labels: std::collections::HashMap<String, u32>,
) -> usize {
    labels.len()
}

fn main() {}

// Compiles: `open_map` allowed on the tool.
use toolsmith::{Toolbox, tool};

/// Sets labels on a note. Writes data. Not for tags.
#[tool(effect = "write", allow(open_map))]
fn set_labels(
    /// The labels.
    labels: std::collections::HashMap<String, u32>,
) -> usize {
    labels.len()
}

fn main() {
    assert_eq!(Toolbox::new().with(SetLabels).len(), 1);
}

// Compiles: `destructive_without_environment` allowed on the tool.
use toolsmith::{Toolbox, tool};

/// Deletes a note. Irreversible. Not for archiving.
#[tool(effect = "destructive", allow(destructive_without_environment))]
fn delete_note(
    /// The note id.
    id: u64,
) -> u64 {
    id
}

fn main() {
    assert_eq!(Toolbox::new().with(DeleteNote).len(), 1);
}

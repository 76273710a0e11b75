// Fails: `destructive_without_environment` on a destructive tool without an `environment` enum or declared approval.
use toolsmith::tool;

/// Deletes a note. Irreversible. Not for archiving.
#[tool(effect = "destructive")]
fn delete_note(
    /// The note id.
    id: u64,
) -> u64 {
    id
}

fn main() {}

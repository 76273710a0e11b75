// Fails: `destructive_without_environment` on a tool named like a destructive action whose
// calls would run without approval (declared a write, no `environment` enum, no approval).
use toolsmith::tool;

/// Deletes a note. Irreversible. Not for archiving.
#[tool(effect = "write")]
fn delete_note(
    /// The note id.
    id: u64,
) -> u64 {
    id
}

fn main() {}

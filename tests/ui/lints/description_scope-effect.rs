// Fails: `description_scope` on a description that says when not to use the tool but not what it does to data; the suggestion fits the declared effect (warn by default; denied here).
use toolsmith::tool;

/// Removes a note. Not for notes in the trash.
#[tool(effect = "destructive", requires_approval, deny(description_scope))]
fn remove_note(
    /// The note's id.
    id: u64,
) -> u64 {
    id
}

/// Adds a tag to a note. Not for notebooks.
#[tool(effect = "write", deny(description_scope))]
fn tag_note(
    /// The note's id.
    id: u64,
) -> u64 {
    id
}

fn main() {}

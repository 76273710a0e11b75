// Fails: `self_declared_permission` on a parameter by which the model grants itself rights.
use toolsmith::tool;

/// Gets a report. Read-only. Not for drafts.
#[tool(effect = "read")]
fn get_report(
    /// The report id.
    id: u64,
    /// Whether the caller is an administrator.
    is_admin: bool,
) -> u64 {
    if is_admin { id } else { 0 }
}

fn main() {}

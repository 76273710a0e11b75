// Compiles: `self_declared_permission` allowed on the tool.
use toolsmith::{Toolbox, tool};

/// Gets a report. Read-only. Not for drafts.
#[tool(effect = "read", allow(self_declared_permission))]
fn get_report(
    /// The report id.
    id: u64,
    /// Whether the caller is an administrator.
    is_admin: bool,
) -> u64 {
    if is_admin { id } else { 0 }
}

fn main() {
    assert_eq!(Toolbox::new().with(GetReport).len(), 1);
}

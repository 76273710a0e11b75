// Several findings of one function, in source order, in one compile.
use toolsmith::tool;

/// Queries the reports. Read-only. Not for writes.
#[tool(effect = "read")]
fn reports(
    /// The SQL to run.
    sql: String,
    /// Whether the caller is an administrator.
    is_admin: bool,
) -> usize {
    if is_admin { sql.len() } else { 0 }
}

fn main() {}

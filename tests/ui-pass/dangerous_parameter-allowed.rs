// Compiles: `dangerous_parameter` allowed on the tool.
use toolsmith::{Toolbox, tool};

/// Queries the reports. Read-only. Not for writes.
#[tool(effect = "read", allow(dangerous_parameter))]
fn query_reports(
    /// The SQL to run.
    #[arg(length(max = 2000))]
    sql: String,
) -> usize {
    sql.len()
}

fn main() {
    assert_eq!(Toolbox::new().with(QueryReports).len(), 1);
}

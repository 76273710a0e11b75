// Fails: `dangerous_parameter` on a parameter that carries a query to execute (warn by default; denied here).
use toolsmith::tool;

/// Queries the reports. Read-only. Not for writes.
#[tool(effect = "read", deny(dangerous_parameter))]
fn query_reports(
    /// The SQL to run.
    #[arg(length(max = 2000))]
    sql: String,
) -> usize {
    sql.len()
}

fn main() {}

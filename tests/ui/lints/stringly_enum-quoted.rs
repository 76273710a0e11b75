// Fails: `stringly_enum` on a string parameter whose doc quotes its values (warn by default; denied here).
use toolsmith::tool;

/// Lists tickets. Read-only. Not for archived tickets.
#[tool(effect = "read", deny(stringly_enum))]
fn list_tickets(
    /// The priority, `low`, `medium` or `high`.
    #[arg(length(max = 10))]
    priority: String,
) -> usize {
    priority.len()
}

fn main() {}

// Compiles: `stringly_enum` allowed on the tool.
use toolsmith::{Toolbox, tool};

/// Lists tickets. Read-only. Not for archived tickets.
#[tool(effect = "read", allow(stringly_enum))]
fn list_tickets(
    /// The priority: one of low, medium, high.
    #[arg(length(max = 10))]
    priority: String,
) -> usize {
    priority.len()
}

fn main() {
    assert_eq!(Toolbox::new().with(ListTickets).len(), 1);
}

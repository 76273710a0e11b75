// A scope is one OAuth scope token, checked where it is written.
use toolsmith::tool;

/// Closes a ticket. Writes the ticket. Not for reopening tickets.
#[tool(effect = "write", scopes = ["tickets write", ""])]
fn close_ticket(
    /// The ticket.
    #[arg(range(max = 1000))]
    id: u64,
) -> u64 {
    id
}

fn main() {}

// A `Result` whose error is a `String`: reported on the error type, with what to write instead.
use toolsmith::tool;

/// Gets a ticket. Read-only. Not for closed tickets.
#[tool(effect = "read")]
fn get_ticket(
    /// The ticket.
    id: u64,
) -> Result<u64, String> {
    if id == 0 {
        return Err("no such ticket".into());
    }
    Ok(id)
}

fn main() {}

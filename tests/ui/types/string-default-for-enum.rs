// A string default for an enum parameter: the error says to write the value in Rust.
use toolsmith::tool;

/// Which tickets to list.
#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
enum StatusFilter {
    /// Every ticket.
    Any,
    /// Open tickets only.
    Open,
}

/// Lists tickets. Read-only. Not for archived tickets.
#[tool(effect = "read")]
fn list_tickets(
    /// Which tickets.
    #[arg(default = "any")]
    status: StatusFilter,
) -> usize {
    matches!(status, StatusFilter::Open).into()
}

fn main() {}

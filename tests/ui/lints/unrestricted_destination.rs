// Fails: `unrestricted_destination` on a destination parameter with no pattern, format or enum (warn by default; denied here).
use toolsmith::tool;

/// Sends a report. Writes data. Not for internal users.
#[tool(effect = "write", deny(unrestricted_destination))]
fn send_report(
    /// Where to post it.
    #[arg(length(max = 200))]
    webhook_url: String,
) -> usize {
    webhook_url.len()
}

fn main() {}

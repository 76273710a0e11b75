// Compiles: `unrestricted_destination` allowed on the tool.
use toolsmith::{Toolbox, tool};

/// Sends a report. Writes data. Not for internal users.
#[tool(effect = "write", allow(unrestricted_destination))]
fn send_report(
    /// Where to post it.
    #[arg(length(max = 200))]
    webhook_url: String,
) -> usize {
    webhook_url.len()
}

fn main() {
    assert_eq!(Toolbox::new().with(SendReport).len(), 1);
}

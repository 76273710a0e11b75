// Constraints that contradict themselves or each other, each reported where it is written.
use toolsmith::{tool, ToolContext};

/// Sends a note. Writes data. Not for bulk mail.
#[tool(effect = "write")]
fn send_note(
    #[arg(length(max = 10))] ctx: &ToolContext,
    /// Where to send it.
    #[arg(email, url)]
    to: String,
    /// The text.
    #[arg(length(min = 10, max = 2))]
    text: String,
    /// How many copies.
    #[arg(range(min = 5, max = 1))]
    copies: u32,
    /// The priority.
    #[arg(range(min = "high"))]
    priority: u32,
    /// The delay.
    #[arg(range())]
    delay: u32,
    /// Whether to track it.
    #[arg(email = true, length(max = 100))]
    track: String,
    /// A second recipient.
    #[arg(rename = "to", length(max = 100))]
    cc: String,
    /// A reference.
    #[arg(pattern = "^[a-z(+$")]
    reference: String,
) -> usize {
    let _ = (ctx, copies, priority, delay, track, cc, reference);
    to.len() + text.len()
}

fn main() {}

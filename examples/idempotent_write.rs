//! A write tool called twice with the same arguments (a retry after a lost response): the
//! second call returns the first ticket, marked as a replay, and no second ticket is made.
//!
//! Run with `cargo run --example idempotent_write`.

mod telemetry;

use std::sync::atomic::{AtomicU32, Ordering};

use toolsmith::{ToolContext, ToolError, Toolbox, tool};

static NEXT_TICKET: AtomicU32 = AtomicU32::new(1000);

/// Create a support ticket. Writes data. Not for incidents; page the on-call instead.
#[tool(effect = "write")]
async fn create_ticket(
    ctx: &ToolContext,
    /// The ticket's title.
    #[arg(length(min = 3, max = 120))]
    title: String,
) -> Result<String, ToolError> {
    // A real ticket system would get `ctx.idempotency_key()` too, to deduplicate on its side.
    let key = ctx.idempotency_key().unwrap_or("none");
    let id = NEXT_TICKET.fetch_add(1, Ordering::SeqCst);
    println!("  (creating ticket T-{id} for {title:?}, key {key})");
    Ok(format!("T-{id}"))
}

#[tokio::main]
async fn main() {
    let _telemetry = telemetry::export();
    let toolbox = Toolbox::new().with(CreateTicket);
    // Derived keys are scoped to the run: a retry inside it replays.
    let ctx = ToolContext::new().with_run_id("run_1");
    let arguments = r#"{"title": "VPN drops every hour"}"#;

    println!("first call:");
    let first = toolbox.call("create_ticket", arguments, &ctx).await;
    println!("  {}", first.to_json());

    println!("retry with the same arguments:");
    let retry = toolbox.call("create_ticket", arguments, &ctx).await;
    println!("  {}", retry.to_json());

    assert!(retry.is_replay());
    assert_eq!(first.data().map(|d| d.get()), retry.data().map(|d| d.get()));
    println!(
        "one ticket, {}",
        if retry.is_replay() {
            "the retry was a replay"
        } else {
            "?"
        }
    );
}

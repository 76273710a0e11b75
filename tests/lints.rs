//! Generated code passes strict lints in user crates: missing docs, unused qualifications,
//! clippy pedantic.
#![deny(warnings, missing_docs, unused_qualifications, clippy::pedantic)]

use toolsmith::{ToolContext, ToolError, tool};

/// Adds two integers. Pure, no side effects. Not for floating-point numbers.
#[tool(effect = "read")]
#[must_use]
pub fn add(
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
) -> i64 {
    a.saturating_add(b)
}

/// Greets someone. Read-only. Not for group messages.
///
/// # Errors
///
/// When the name is empty after trimming.
#[tool(effect = "read")]
pub async fn greet(
    ctx: &ToolContext,
    /// Who to greet.
    #[arg(length(max = 20), default = "world")]
    name: String,
) -> Result<String, ToolError> {
    let _ = ctx.trace_id();
    tokio::task::yield_now().await;
    if name.trim().is_empty() {
        return Err(ToolError::invalid_arguments("`name` is blank; send a name"));
    }
    Ok(format!("hello, {name}"))
}

#[test]
fn generated_items_are_documented_and_lint_clean() {
    let toolbox = toolsmith::Toolbox::new().with(Add).with(Greet);
    assert_eq!(toolbox.len(), 2);
}

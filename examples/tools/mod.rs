//! The quickstart's tools, shared by the examples.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolsmith::{ToolContext, ToolError, Toolbox, tool};

/// A recent time window.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DateRestrict {
    /// The last day.
    D1,
    /// The last week.
    W1,
    /// The last month.
    M1,
}

/// One search hit.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Hit {
    /// The page's title.
    title: String,
    /// The page's address.
    url: String,
}

/// What a search found.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SearchResults {
    /// The hits, best first.
    hits: Vec<Hit>,
}

/// Search the web for real-time information. Read-only.
///
/// Use for news, documentation and fact checks. Not for private internal documents.
#[tool(effect = "read", open_world)]
pub async fn search_web(
    ctx: &ToolContext,
    /// Search keywords in natural language; never a URL or SQL.
    #[arg(length(min = 2, max = 300))]
    query: String,
    /// How many results to return.
    #[arg(range(min = 1, max = 10), default = 5)]
    num_results: u8,
    /// Only results from this recent window; omit for no limit.
    date_restrict: Option<DateRestrict>,
) -> Result<SearchResults, ToolError> {
    if ctx.is_cancelled() {
        return Err(ToolError::cancelled("The search was cancelled."));
    }
    let window = date_restrict.map_or_else(|| "any time".to_owned(), |d| format!("{d:?}"));
    let hits = (1..=num_results)
        .map(|i| Hit {
            title: format!("Result {i} for {query:?} ({window})"),
            url: format!("https://example.com/{i}"),
        })
        .collect();
    Ok(SearchResults { hits })
}

/// Add two integers. Pure; no side effects. Not for floating-point numbers.
// Cheap and synchronous: it runs in place instead of on the blocking pool.
#[tool(effect = "read", inline)]
pub fn add(
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
) -> i64 {
    a.saturating_add(b)
}

/// An email address.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct EmailAddress(#[schemars(email)] pub String);

/// Create a calendar event for the signed-in user. Writes data. Not for recurring events.
#[tool(
    name = "calendar.create_event",
    title = "Create event",
    effect = "write"
)]
pub async fn create_event(
    ctx: &ToolContext,
    /// The event's title, shown in the calendar.
    #[arg(length(min = 1, max = 120))]
    title: String,
    /// Who to invite: email addresses.
    #[arg(length(max = 20))]
    attendees: Vec<EmailAddress>,
    /// Where to send the confirmation.
    #[arg(email)]
    notify: Option<String>,
) -> Result<String, ToolError> {
    let who = ctx
        .principal()
        .ok_or_else(|| ToolError::permission_denied("Sign in before creating events."))?;
    Ok(format!(
        "created {title:?} for {who} with attendees [{}]{}",
        attendees
            .iter()
            .map(|a| a.0.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        notify
            .map(|n| format!(", confirmation to {n}"))
            .unwrap_or_default()
    ))
}

/// The three tools in one toolbox.
pub fn toolbox() -> Toolbox {
    Toolbox::new().with(SearchWeb).with(Add).with(CreateEvent)
}

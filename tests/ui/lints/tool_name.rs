// Fails: `tool_name` on a tool name that does not start with a verb.
use toolsmith::tool;

/// Reports the weather. Read-only. Not for forecasts.
#[tool(effect = "read")]
fn weather_report(
    /// The city.
    #[arg(length(max = 100))]
    city: String,
) -> usize {
    city.len()
}

fn main() {}

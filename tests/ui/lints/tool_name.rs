// Fails: `tool_name` on a vague name, made only of generic words (warn by default; denied here).
use toolsmith::tool;

/// Fetches the weather for a city. Read-only. Not for forecasts.
#[tool(effect = "read", deny(tool_name))]
fn get_data(
    /// The city.
    #[arg(length(max = 100))]
    city: String,
) -> usize {
    city.len()
}

fn main() {}

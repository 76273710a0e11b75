// A parameter documented both in its own doc comment and under `# Arguments` is an error on
// the section's line: one of the two texts would be lost.
use toolsmith::tool;

/// Looks a city's weather up. Read-only. Not for forecasts.
///
/// # Arguments
///
/// * `city` - The city, for example "Oslo".
#[tool(effect = "read")]
fn weather(
    /// The city.
    #[arg(length(max = 80))]
    city: String,
) -> String {
    city
}

fn main() {}

// An `# Arguments` item naming no parameter is an error on its line (a renamed or removed
// parameter whose docs were left behind).
use toolsmith::tool;

/// Looks a city's weather up. Read-only. Not for forecasts.
///
/// # Arguments
///
/// * `town` - The city, for example "Oslo".
#[tool(effect = "read")]
fn weather(#[arg(length(max = 80))] city: String) -> String {
    city
}

fn main() {}

// Compiles: `tool_name` allowed on the tool.
use toolsmith::{Toolbox, tool};

/// Reports the weather. Read-only. Not for forecasts.
#[tool(effect = "read", allow(tool_name))]
fn weather_report(
    /// The city.
    #[arg(length(max = 100))]
    city: String,
) -> usize {
    city.len()
}

fn main() {
    assert_eq!(Toolbox::new().with(WeatherReport).len(), 1);
}

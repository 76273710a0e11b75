// Examples and versions are checked where they are written: an example is a JSON object of
// arguments, an invalid one names where it is refused, and a version is a semantic version.
use toolsmith::tool;

/// Reads a counter. Read-only. Not for writes.
#[tool(effect = "read", version = "2", example = r#"{"name": "a""#, example = "[1, 2]")]
fn read_counter(
    /// The counter.
    #[arg(length(max = 20))]
    name: String,
) -> String {
    name
}

/// Reads a gauge. Read-only. Not for writes.
#[tool(
    effect = "read",
    invalid_example(arguments = r#"{"name": ""}"#),
    invalid_example(arguments = r#"{"name": ""}"#, error = "name")
)]
fn read_gauge(
    /// The gauge.
    #[arg(length(min = 1, max = 20))]
    name: String,
) -> String {
    name
}

fn main() {}

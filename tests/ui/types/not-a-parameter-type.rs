// A parameter type without `Deserialize` and `JsonSchema` is reported on the type.
use toolsmith::tool;

struct Point {
    x: f64,
}

/// Measures.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
fn measure(
    /// The point.
    point: Point,
) -> f64 {
    point.x
}

fn main() {}

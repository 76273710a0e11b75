// A borrowed parameter is reported on its type, with the owned type to use.
use toolsmith::tool;

/// Greets.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
fn greet(
    /// Who to greet.
    name: &str,
) -> String {
    name.to_owned()
}

fn main() {}

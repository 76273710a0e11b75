// `self` is reported on the receiver.
use toolsmith::tool;

struct Engine;

impl Engine {
    /// Searches.
    #[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
    fn search(
        &self,
        /// What to look for.
        query: String,
    ) -> String {
        query
    }
}

fn main() {}

// `self` is reported on the receiver.
use toolsmith::tool;

struct Engine;

impl Engine {
    /// Searches.
    #[tool]
    fn search(
        &self,
        /// What to look for.
        query: String,
    ) -> String {
        query
    }
}

fn main() {}

// Several mistakes in one function are all reported in one compile, each on its token.
use toolsmith::{tool, ToolContext};

#[tool(nmae = "x", effect = "read", allow(description_scope, tool_name, unbounded_string))]
fn search(
    /// What to look for.
    #[arg(lenght(min = 2))]
    query: String,
    ctx: &ToolContext,
    limit: u32,
) -> String {
    let _ = (ctx, limit);
    query
}

fn main() {}

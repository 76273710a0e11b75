// A text constraint on a number is reported on the parameter's type.
use toolsmith::tool;

/// Reads a page. Read-only. Not for writes.
#[tool(effect = "read")]
fn read_page(
    /// The page number.
    #[arg(pattern = "^[0-9]+$")]
    page: u32,
) -> u32 {
    page
}

fn main() {}

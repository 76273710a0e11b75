// A return type that is not `Serialize` is reported on that type.
use toolsmith::{ToolError, tool};

struct Report {
    pages: u32,
}

/// Builds a report. Read-only. Not for drafts.
#[tool(effect = "read")]
fn build_report(
    /// Pages.
    #[arg(range(max = 100))]
    pages: u32,
) -> Result<Report, ToolError> {
    Ok(Report { pages })
}

fn main() {}

// An `# Arguments` item on a tool whose parameters are all the program's (here, none) names
// no parameter: the message says the tool takes none the model fills.
use toolsmith::tool;

/// Reads the clock. Read-only. Not for timers.
///
/// # Arguments
///
/// * `zone` - The time zone.
#[tool(effect = "read")]
fn read_clock() -> u64 {
    0
}

fn main() {}

// `range` on a string is reported on the parameter's type, naming it, and not hidden behind the
// missing bound it was meant to be (`unbounded_string` is not reported for it).
use toolsmith::tool;

/// Looks up a postal code. Read-only. Not for street addresses.
#[tool(effect = "read")]
fn look_up_postal_code(
    /// The postal code.
    #[arg(range(min = 1000, max = 9999))]
    zip: String,
) -> String {
    zip
}

fn main() {}

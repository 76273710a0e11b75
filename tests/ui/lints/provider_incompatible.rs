// Fails: `provider_incompatible` on a tuple and on a map with integer keys, found from the
// parameters' tokens at compile time (warn by default; denied here).
use std::collections::HashMap;

use toolsmith::tool;

/// Plots points. Read-only. Not for 3D data.
#[tool(effect = "read", deny(provider_incompatible), allow(open_map))]
fn plot_points(
    /// The points, as (x, y).
    points: Vec<(f64, f64)>,
    /// Labels by point number.
    labels: HashMap<u32, String>,
) -> usize {
    points.len() + labels.len()
}

fn main() {}

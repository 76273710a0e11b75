// A tool name no provider accepts is a compile error on the name, so registering the tool never fails on it.
use toolsmith::tool;

/// Reads a counter. Read-only. Not for writes.
#[tool(name = "read counter", effect = "read")]
fn read_counter() -> u32 {
    1
}

/// Reads a gauge. Read-only. Not for writes.
#[tool(name = "", effect = "read")]
fn read_gauge() -> u32 {
    2
}

/// Reads a meter. Read-only. Not for writes.
#[tool(
    name = "metrics.read_the_meter_of_the_building_that_the_user_asked_about_today",
    effect = "read"
)]
fn read_meter() -> u32 {
    3
}

/// Reads the temperature. Read-only. Not for writes.
#[tool(effect = "read")]
fn température() -> u32 {
    4
}

fn main() {}

//! The thermostat of the streaming example and of the streamed-arguments tests: one
//! definition, so that what the example shows is what the tests hold.

use std::sync::atomic::{AtomicU32, Ordering};

use toolsmith::tool;

/// How many times the thermostat was set.
pub static SET: AtomicU32 = AtomicU32::new(0);

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Room {
    Kitchen,
    Bedroom,
    Office,
}

/// Sets a room's thermostat. Writes the device's setting. Not for reading it.
#[tool(name = "thermostat.set", effect = "write")]
pub fn set_thermostat(
    /// The room.
    room: Room,
    /// Degrees Celsius.
    #[arg(range(min = 5, max = 30))]
    celsius: u32,
    /// A note for the household, if any.
    #[arg(length(max = 40))]
    note: Option<String>,
) -> String {
    SET.fetch_add(1, Ordering::SeqCst);
    let _ = (room, note);
    format!("set to {celsius} °C")
}

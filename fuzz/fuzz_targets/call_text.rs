//! Text arguments, as a model writes them, into tools of several shapes through
//! `Toolbox::call`: no input may panic, every refusal is `invalid_arguments` with at least one
//! field, and no answer grows with the input beyond the echo caps.
#![no_main]

use std::collections::BTreeMap;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use toolsmith::{ToolContext, Toolbox, tool};

/// Echoes flat scalars. Pure, no side effects.
#[tool(effect = "read", inline, allow(description_scope))]
fn echo_flat(
    /// A word.
    #[arg(length(min = 1, max = 30), pattern = "^[a-z]+$")]
    word: String,
    /// A count.
    #[arg(range(min = -5, max = 500))]
    count: i64,
    /// An id.
    id: Option<u64>,
    /// A ratio.
    ratio: Option<f32>,
) -> String {
    format!("{word} {count} {id:?} {ratio:?}")
}

/// A shape.
#[derive(Debug, Deserialize, JsonSchema)]
pub enum Shape {
    /// Nothing.
    Empty,
    /// A circle.
    Circle(f64),
    /// A rectangle.
    Rect {
        /// Width.
        w: u8,
        /// Height.
        h: u8,
    },
}

/// A point.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Point {
    /// Across.
    x: i32,
    /// Down.
    y: i32,
}

/// Draws shapes at points. Pure, no side effects.
#[tool(effect = "read", allow(description_scope, open_map))]
async fn draw_shapes(
    /// Where.
    points: Vec<Point>,
    /// What.
    shape: Option<Shape>,
    /// Labels.
    labels: Option<BTreeMap<String, u16>>,
) -> usize {
    let sum: i64 = points.iter().map(|p| i64::from(p.x) + i64::from(p.y)).sum();
    usize::from(sum != 0) + usize::from(shape.is_some()) + labels.map_or(0, |l| l.len())
}

/// A note checked by the full validator.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Note {
    /// The title.
    #[schemars(length(min = 1, max = 40))]
    title: String,
    /// Tags.
    #[schemars(length(max = 5))]
    tags: Vec<String>,
}

/// Files a note. Pure, no side effects.
#[tool(effect = "read", allow(description_scope))]
async fn file_note(
    /// The note.
    note: Note,
    /// Any documents.
    extra: Option<Vec<Value>>,
) -> usize {
    note.title.len() + note.tags.len() + extra.map_or(0, |e| e.len())
}

struct World {
    rt: tokio::runtime::Runtime,
    toolbox: Toolbox,
    ctx: ToolContext,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| World {
        rt: tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime"),
        toolbox: Toolbox::new()
            .with(EchoFlat)
            .with(DrawShapes)
            .with(FileNote),
        ctx: ToolContext::new(),
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let world = world();
    let name = ["echo_flat", "draw_shapes", "file_note"][usize::from(which) % 3];
    let outcome = world
        .rt
        .block_on(world.toolbox.call(name, text, &world.ctx));
    if let Some(err) = outcome.error() {
        assert_eq!(err.code().as_str(), "invalid_arguments", "{err}");
        assert!(!err.fields().is_empty());
        // At most 21 fields, each quoting at most the echo cap of the input.
        assert!(
            outcome.to_json().len() < 32 * 1024,
            "{} bytes",
            outcome.to_json().len()
        );
    }
    // The same document as a parsed value, when serde_json reads it.
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        let again = world
            .rt
            .block_on(world.toolbox.call(name, &value, &world.ctx));
        if let Some(err) = again.error() {
            assert_eq!(err.code().as_str(), "invalid_arguments", "{err}");
        }
    }
});

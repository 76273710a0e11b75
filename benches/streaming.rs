//! Arguments checked while they stream: one call's arguments (about 2 KiB) pushed in pieces of
//! 16 bytes through `ArgumentStream`, against reading the whole text once as a call does
//! (`ToolDefinition::canonical_arguments`), and the same stream through 64-byte pieces; and a
//! Gemini call whose arguments come as 800 `partialArgs` (about 12 KiB) through a toolbox's
//! `call_stream`.
//!
//! `cargo bench --bench streaming`.
//!
//! With `TOOLSMITH_COUNT=<path>:<n>` set (`whole`, `streamed_16` or `streamed_64`), the
//! benchmark instead reads the document `n` times that way and exits, for
//! `scripts/bench-instructions.sh --streaming`, which counts the instructions with callgrind.

use std::hint::black_box;

use criterion::{Criterion, Throughput};
use serde_json::json;
use toolsmith::provider::ArgumentStream;
use toolsmith::{Dialect, Tool, Toolbox, tool};

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Stop {
    /// The stop's name.
    #[schemars(length(min = 1, max = 60))]
    name: String,
    /// Minutes spent there.
    #[schemars(range(min = 0, max = 600))]
    minutes: u32,
}

/// Plans a trip. Writes a plan. Not for booking.
#[tool(effect = "write")]
fn plan_trip(
    /// The trip's title.
    #[arg(length(min = 1, max = 80))]
    title: String,
    /// The stops, in order.
    #[arg(length(max = 40))]
    stops: Vec<Stop>,
    /// Whether the trip may change.
    flexible: bool,
) -> usize {
    let _ = (title, flexible);
    stops.len()
}

/// Tags notes. Writes the notes' tags. Not for removing tags.
#[tool(effect = "write")]
fn tag_notes(
    /// The tags, one per note.
    #[arg(length(max = 1000))]
    tags: Vec<String>,
) -> usize {
    tags.len()
}

/// Reads `text` once as a call would, or streamed in pieces of `piece` bytes.
fn read(def: &toolsmith::ToolDefinition, text: &str, piece: Option<usize>) -> bool {
    let Some(piece) = piece else {
        return def.canonical_arguments(black_box(text)).is_ok();
    };
    let mut args = ArgumentStream::new(def);
    for p in text.as_bytes().chunks(piece) {
        let _ = args.push(black_box(std::str::from_utf8(p).unwrap_or_default()));
    }
    args.finish().is_ok()
}

fn main() {
    let stops: Vec<_> = (0..40)
        .map(|i| json!({"name": format!("Stop number {i} on the coast road"), "minutes": i * 7}))
        .collect();
    let text =
        json!({"title": "A week along the coast", "stops": stops, "flexible": true}).to_string();
    let def = PlanTrip.definition();
    if let Ok(spec) = std::env::var("TOOLSMITH_COUNT") {
        let (path, n) = spec.split_once(':').expect("TOOLSMITH_COUNT=<path>:<n>");
        let piece = match path {
            "whole" => None,
            "streamed_16" => Some(16),
            "streamed_64" => Some(64),
            other => panic!("no path {other}"),
        };
        let n: usize = n.parse().expect("a number of reads");
        let ok = (0..n).filter(|_| read(def, &text, piece)).count();
        assert_eq!(ok, n, "the document reads");
        return;
    }
    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("streaming");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function("whole_call_read", |b| {
        b.iter(|| def.canonical_arguments(black_box(text.as_str())).is_ok());
    });
    for piece in [16usize, 64] {
        let pieces: Vec<&str> = text
            .as_bytes()
            .chunks(piece)
            .map(|c| std::str::from_utf8(c).unwrap_or_default())
            .collect();
        group.bench_function(format!("streamed_{piece}_byte_pieces"), |b| {
            b.iter(|| {
                let mut args = ArgumentStream::new(def);
                for p in &pieces {
                    let _ = args.push(black_box(p));
                }
                args.finish().is_ok()
            });
        });
    }
    // Gemini: 800 values by path, each checked once whole; the whole-call check runs again
    // only when the arguments have doubled.
    let toolbox = Toolbox::new().with(TagNotes);
    let provider = toolbox.provider(Dialect::Gemini);
    let mut parts = vec![
        json!({"candidates": [{"content": {"parts": [{"functionCall": {"name": "tag_notes", "id": "g1", "partialArgs": [], "willContinue": true}}]}}]}),
    ];
    for i in 0..800 {
        parts.push(json!({"candidates": [{"content": {"parts": [{"functionCall": {"partialArgs": [{"jsonPath": format!("$.tags[{i}]"), "stringValue": format!("tag-{i:05}")}], "willContinue": true}}]}}]}));
    }
    parts.push(json!({"candidates": [{"content": {"parts": [{"functionCall": {}}]}}]}));
    group.finish();
    let mut group = c.benchmark_group("streaming_gemini");
    group.bench_function("gemini_800_parts", |b| {
        b.iter(|| {
            let mut stream = provider.call_stream();
            let mut done = 0;
            for part in &parts {
                done += stream.push(black_box(part)).len();
            }
            done + stream.finish().len()
        });
    });
    group.finish();
    c.final_summary();
    println!("document: {} bytes", text.len());
}

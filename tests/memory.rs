//! Peak memory of one call, for every input shape a hostile model can send: at most 4× the
//! argument text plus a constant set by the limits on values ([`InputLimits`]).
//!
//! Each shape runs in a child process (this test binary, filtered to the ignored `child`
//! test), which builds its input, resets the kernel's peak-RSS mark (`/proc/self/clear_refs`),
//! makes the call and reports its peak RSS above the baseline. Linux only.

use std::process::Command;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolsmith::{ToolContext, Toolbox, tool};

/// The constant part of the bound: what the default limits let one call build whatever the
/// text's size (100,000 parsed values of a `serde_json::Value` tree, the validator's state).
const CONSTANT: u64 = 16 << 20;

/// Sums integers. Pure, no side effects.
#[tool(effect = "read", allow(description_scope))]
async fn sum(
    /// The numbers.
    numbers: Vec<Vec<i64>>,
) -> i64 {
    numbers.iter().flatten().fold(0, |a, b| a.wrapping_add(*b))
}

/// Stores a text. Pure, no side effects.
#[tool(effect = "read", allow(description_scope, unbounded_string))]
async fn store_text(
    /// The text.
    text: String,
) -> usize {
    text.len()
}

/// Takes any documents. Pure, no side effects.
#[tool(effect = "read", allow(description_scope))]
async fn take(
    /// The documents.
    docs: Vec<Value>,
) -> usize {
    docs.len()
}

/// A titled list.
#[derive(Deserialize, JsonSchema)]
pub struct Titled {
    /// The title.
    #[schemars(length(min = 1, max = 100))]
    title: String,
    /// The items.
    items: Vec<Vec<String>>,
}

/// Files a titled list (checked by the full validator). Pure, no side effects.
#[tool(effect = "read", allow(description_scope))]
async fn file(
    /// The list.
    list: Titled,
) -> usize {
    list.title.len() + list.items.len()
}

/// The shapes: a tool, and the arguments' text for a size in bytes.
fn shape(name: &str, size: usize) -> (&'static str, String) {
    match name {
        // Many unknown keys.
        "unknown_keys" => {
            let mut text = String::from(r#"{"numbers":[],"#);
            let mut i = 0;
            while text.len() < size {
                text.push_str(&format!(r#""k{i}":0,"#));
                i += 1;
            }
            text.push_str(r#""end":0}"#);
            ("sum", text)
        }
        // Many valid small values, spread over arrays of 10,000.
        "valid_items" => {
            let mut rows = Vec::new();
            let mut len = 0;
            while len < size {
                let row: Vec<String> = (0..10_000).map(|i| (i % 10).to_string()).collect();
                let row = format!("[{}]", row.join(","));
                len += row.len() + 1;
                rows.push(row);
            }
            ("sum", format!(r#"{{"numbers":[{}]}}"#, rows.join(",")))
        }
        // The same through the full validator.
        "valid_items_validated" => {
            let mut rows = Vec::new();
            let mut len = 0;
            while len < size {
                let row = vec![r#""a""#; 10_000].join(",");
                len += row.len() + 3;
                rows.push(format!("[{row}]"));
            }
            (
                "file",
                format!(r#"{{"list":{{"title":"t","items":[{}]}}}}"#, rows.join(",")),
            )
        }
        // Deep nesting, as far as the text allows.
        "deep" => {
            let depth = size / 2;
            (
                "take",
                format!(r#"{{"docs":[{}{}]}}"#, "[".repeat(depth), "]".repeat(depth)),
            )
        }
        // One long string.
        "long_string" => (
            "store_text",
            format!(r#"{{"text":"{}"}}"#, "x".repeat(size)),
        ),
        other => panic!("unknown shape {other}"),
    }
}

fn status(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches(" kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .expect("a /proc/self/status field")
        * 1024
}

/// Runs one shape in this process and prints its numbers; run by [`peak_memory_is_bounded`].
#[test]
#[ignore = "run in a child process by peak_memory_is_bounded"]
fn child() {
    let Ok(spec) = std::env::var("TOOLSMITH_MEMORY_SHAPE") else {
        return;
    };
    let mut parts = spec.split(',');
    let (name, size, form) = (
        parts.next().unwrap(),
        parts.next().unwrap().parse::<usize>().unwrap(),
        parts.next().unwrap(),
    );
    let toolbox = Toolbox::new()
        .with(Sum)
        .with(StoreText)
        .with(Take)
        .with(File);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ctx = ToolContext::new();
    // Warm up: definitions, validators and the runtime are built once per process.
    for (tool, args) in [
        ("sum", json!({"numbers": [[1]]})),
        ("store_text", json!({"text": "x"})),
        ("take", json!({"docs": []})),
        ("file", json!({"list": {"title": "t", "items": [["a"]]}})),
    ] {
        assert!(rt.block_on(toolbox.call(tool, &args, &ctx)).is_success());
        let text = args.to_string();
        assert!(
            rt.block_on(toolbox.call(tool, text.as_str(), &ctx))
                .is_success()
        );
        let bad = r#"{"x": 1, "x": 2}"#;
        assert!(rt.block_on(toolbox.call(tool, bad, &ctx)).error().is_some());
    }
    let (tool, text) = shape(name, size);
    // The parsed form, as a host hands it in (the deep one built directly: serde_json's
    // reader stops at 128 levels).
    let value: Option<Value> = (form == "value").then(|| {
        if name == "deep" {
            let mut doc = Value::Array(Vec::new());
            for _ in 0..size / 2 {
                doc = Value::Array(vec![doc]);
            }
            let mut args = serde_json::Map::new();
            args.insert("docs".to_owned(), Value::Array(vec![doc]));
            Value::Object(args)
        } else {
            serde_json::from_str(&text).unwrap()
        }
    });
    std::fs::write("/proc/self/clear_refs", "5").expect("reset the peak RSS mark");
    let before = status("VmRSS:");
    let outcome = match &value {
        Some(value) => rt.block_on(toolbox.call(tool, value, &ctx)),
        None => rt.block_on(toolbox.call(tool, text.as_str(), &ctx)),
    };
    let peak = status("VmHWM:");
    let status = if outcome.is_success() {
        "accepted"
    } else {
        "refused"
    };
    println!(
        "MEMORY {name} {form} {} {} {status}",
        text.len(),
        peak.saturating_sub(before)
    );
    std::mem::forget(value);
}

#[test]
fn peak_memory_is_bounded() {
    if !std::path::Path::new("/proc/self/clear_refs").exists() {
        eprintln!("no /proc/self/clear_refs: peak memory is measured on Linux only");
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let mut rows = Vec::new();
    for name in [
        "unknown_keys",
        "valid_items",
        "valid_items_validated",
        "deep",
        "long_string",
    ] {
        // Within every default limit, within the byte limit, and eleven times over it.
        for size in [150_000, 1_000_000, 11_000_000] {
            for form in ["text", "value"] {
                let out = Command::new(&exe)
                    .args([
                        "--ignored",
                        "--exact",
                        "child",
                        "--nocapture",
                        "--test-threads=1",
                    ])
                    .env("TOOLSMITH_MEMORY_SHAPE", format!("{name},{size},{form}"))
                    .output()
                    .unwrap();
                let stdout = String::from_utf8_lossy(&out.stdout);
                let line = stdout
                    .lines()
                    .find_map(|l| l.find("MEMORY ").map(|at| &l[at..]))
                    .unwrap_or_else(|| {
                        panic!(
                            "{name} {size} {form}: no result\n{stdout}\n{}",
                            String::from_utf8_lossy(&out.stderr)
                        )
                    });
                let fields: Vec<&str> = line.split_whitespace().collect();
                let text: u64 = fields[3].parse().unwrap();
                let added: u64 = fields[4].parse().unwrap();
                let bound = 4 * text + CONSTANT;
                eprintln!(
                    "{name:>22} {form:>5} text {:>6} KiB  added {:>6} KiB  ({:.1}x text)  {}",
                    text / 1024,
                    added / 1024,
                    added as f64 / text as f64,
                    fields[5]
                );
                assert!(
                    added <= bound,
                    "{name} ({form}, {text} bytes): {added} bytes added, over 4 x text + {CONSTANT}"
                );
                rows.push((name, form, text, added));
            }
        }
    }
    assert_eq!(rows.len(), 30);
}

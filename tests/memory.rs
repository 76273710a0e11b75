//! Peak memory of one call, for every input shape a hostile model can send: at most 4× the
//! argument text plus a constant set by the limits on values ([`InputLimits`]).
//!
//! Each shape runs in a child process (this test binary, filtered to the ignored `child`
//! test), which builds its input, resets the kernel's peak-RSS mark (`/proc/self/clear_refs`),
//! makes the call and reports its peak RSS above the baseline. Linux only.

use std::alloc::{GlobalAlloc, Layout, System};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

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

/// The heap this test process holds, and the most it held since the mark was reset: the
/// stream test counts bytes allocated rather than resident pages, which an allocator reuses.
struct Counting;

static HELD: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed to the system allocator unchanged; the counters only add up
// the sizes it was asked for.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc` is passed on as it is.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            let now = HELD.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        HELD.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract for `dealloc` is passed on as it is.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

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

/// One streamed response of 256 OpenAI Chat calls open at once, their pieces interleaved, each
/// call inside every limit of its tool; `shape` is what each call's arguments hold.
fn stream_events(shape: &str, per_call: usize) -> Vec<String> {
    let calls = 256;
    let body = |i: usize| -> String {
        match shape {
            "numbers" => {
                let mut text = String::from(r#"{"docs":["#);
                while text.len() < per_call {
                    text.push_str("0,");
                }
                text.push_str("0]}");
                text
            }
            _ => {
                // Objects of 900 short keys each (under the 1,000-key limit).
                let mut text = String::from(r#"{"docs":[{"#);
                let mut k = 0;
                while text.len() < per_call {
                    if k > 0 && k % 900 == 0 {
                        text.push_str(r#""e":0},{"#);
                    }
                    text.push_str(&format!(r#""{k}":0,"#));
                    k += 1;
                }
                text.push_str(r#""e":0}]}"#);
                let _ = i;
                text
            }
        }
    };
    let tool = "take";
    let texts: Vec<String> = (0..calls).map(body).collect();
    let mut events = Vec::new();
    for i in 0..calls {
        events.push(json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "id": format!("call_{i}"), "type": "function", "function": {"name": tool, "arguments": ""}}]}}]}).to_string());
    }
    let piece = 1024;
    let mut at = 0;
    while texts.iter().any(|t| at < t.len()) {
        for (i, text) in texts.iter().enumerate() {
            if at < text.len() {
                let end = (at + piece).min(text.len());
                events.push(json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "function": {"arguments": &text[at..end]}}]}}]}).to_string());
            }
        }
        at += piece;
    }
    events.push(
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}).to_string(),
    );
    events
}

/// Runs one stream in this process and prints its numbers; run by
/// [`stream_memory_is_bounded`].
#[test]
#[ignore = "run in a child process by stream_memory_is_bounded"]
fn stream_child() {
    let Ok(spec) = std::env::var("TOOLSMITH_STREAM_SHAPE") else {
        return;
    };
    let (shape, per_call) = spec.split_once(',').unwrap();
    let per_call: usize = per_call.parse().unwrap();
    let toolbox = Toolbox::new().with(Sum).with(Take);
    let provider = toolbox.provider(toolsmith::Dialect::OpenAiChat { strict: false });
    // Warm up.
    let mut warm = provider.call_stream();
    for event in stream_events(shape, 64).iter().take(300) {
        warm.push_text(event);
    }
    drop(warm.finish());
    let events = stream_events(shape, per_call);
    let total: usize = events.iter().map(String::len).sum();
    let before = HELD.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let mut stream = provider.call_stream();
    let (last, events) = events.split_last().unwrap();
    for event in events {
        let out = stream.push_text(event);
        assert!(out.is_empty(), "no call ends before the finish_reason");
    }
    let peak = PEAK.load(Ordering::Relaxed);
    let done = stream.push_text(last);
    println!(
        "STREAM {shape} {per_call} {total} {} {}",
        peak.saturating_sub(before),
        done.len()
    );
}

#[test]
fn stream_memory_is_bounded() {
    let exe = std::env::current_exe().unwrap();
    // 16 KiB a call is 4 MiB in all, the stream's default; 160 KiB a call goes past it.
    for shape in ["numbers", "keys"] {
        for per_call in [16_000, 160_000] {
            let out = Command::new(&exe)
                .args([
                    "--ignored",
                    "--exact",
                    "stream_child",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env("TOOLSMITH_STREAM_SHAPE", format!("{shape},{per_call}"))
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            let line = stdout
                .lines()
                .find_map(|l| l.find("STREAM ").map(|at| &l[at..]))
                .unwrap_or_else(|| {
                    panic!(
                        "{shape} {per_call}: no result\n{stdout}\n{}",
                        String::from_utf8_lossy(&out.stderr)
                    )
                });
            let fields: Vec<&str> = line.split_whitespace().collect();
            let added: u64 = fields[4].parse().unwrap();
            let calls: usize = fields[5].parse().unwrap();
            eprintln!(
                "stream {shape:>8} {:>4} KiB a call: held {:>6} KiB",
                per_call / 1024,
                added / 1024
            );
            assert_eq!(calls, 256, "every call is answered");
            // Six times the stream's 4 MiB, and a constant for the open calls' parsers.
            let bound = 6 * (4 << 20) + (8 << 20);
            assert!(
                added <= bound,
                "{shape} {per_call}: {added} bytes held, over the documented bound {bound}"
            );
        }
    }
}

//! Streamed arguments in every provider's stream form, cut at places the input picks: no input
//! may panic, and a text stream's verdict is the whole read's (accepted with the same
//! arguments, or refused) however the text is split. Gemini's arguments come by path, from
//! lines of the input, and a call it assembles must be one a whole read gives the same answer.
//! `STREAM_FORM=0`, `1`, `2` or `3` fuzzes one form alone.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use toolsmith::{Dialect, Tool, Toolbox, tool};

/// Stores free-form data. Writes a record. Not for reading one.
#[tool(
    effect = "write",
    allow(description_scope, open_map),
    limits(max_depth = 6, max_items = 8, max_members = 6, max_nodes = 60, max_bytes = 4096)
)]
fn store(
    /// The data.
    data: Value,
    /// A label.
    #[arg(length(max = 12))]
    label: Option<String>,
) -> String {
    let _ = label;
    data.to_string()
}

/// A room.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Room {
    /// The kitchen.
    Kitchen,
    /// The office.
    Office,
}

/// Sets a thermostat. Writes the device's setting. Not for reading it.
#[tool(effect = "write", allow(description_scope))]
fn set_temperature(
    /// The room.
    room: Room,
    /// Degrees Celsius.
    #[arg(range(min = 5, max = 30))]
    celsius: u32,
    /// A ratio.
    share: Option<f64>,
) -> String {
    let _ = (room, share);
    celsius.to_string()
}

fn events(dialect: Dialect, name: &str, pieces: &[&str]) -> Vec<Value> {
    let mut out = Vec::new();
    match dialect {
        Dialect::OpenAiChat { .. } => {
            out.push(json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": name, "arguments": ""}}]}}]}));
            for piece in pieces {
                out.push(json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}}]}));
            }
            out.push(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}));
        }
        Dialect::OpenAiResponses { .. } => {
            out.push(json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": name, "arguments": ""}}));
            for piece in pieces {
                out.push(json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 0, "delta": piece}));
            }
            out.push(json!({"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 0, "name": name, "arguments": pieces.concat()}));
        }
        _ => {
            out.push(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": name, "input": {}}}));
            for piece in pieces {
                out.push(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": piece}}));
            }
            out.push(json!({"type": "content_block_stop", "index": 0}));
        }
    }
    out
}

/// Gemini parts from lines `path=value` (`value` JSON, or a string continued when it ends
/// with `+`).
fn gemini_events(name: &str, text: &str) -> Vec<Value> {
    let mut out = vec![json!({"candidates": [{"content": {"parts": [{"functionCall": {"name": name, "id": "g1", "partialArgs": [], "willContinue": true}}]}}]})];
    for line in text.lines() {
        let (path, value) = line.split_once('=').unwrap_or((line, "null"));
        let (value, more) = match value.strip_suffix('+') {
            Some(v) => (v, true),
            None => (value, false),
        };
        let mut arg = json!({"jsonPath": path, "willContinue": more});
        match serde_json::from_str::<Value>(value) {
            Ok(Value::Number(n)) => arg["numberValue"] = Value::Number(n),
            Ok(Value::Bool(b)) => arg["boolValue"] = Value::Bool(b),
            Ok(Value::Null) => arg["nullValue"] = json!("NULL_VALUE"),
            _ => arg["stringValue"] = json!(value),
        }
        out.push(json!({"candidates": [{"content": {"parts": [{"functionCall": {"partialArgs": [arg], "willContinue": true}}]}}]}));
    }
    out.push(json!({"candidates": [{"content": {"parts": [{"functionCall": {}}]}}]}));
    out
}

fuzz_target!(|data: &[u8]| {
    static TOOLBOX: std::sync::OnceLock<Toolbox> = std::sync::OnceLock::new();
    let toolbox = TOOLBOX.get_or_init(|| Toolbox::new().with(Store).with(SetTemperature));
    let [form, which, cuts @ ..] = data else {
        return;
    };
    let (cuts, text) = cuts.split_at(cuts.len().min(4));
    let Ok(text) = std::str::from_utf8(text) else {
        return;
    };
    let (name, tool): (&str, &dyn Tool) = if which % 2 == 0 {
        ("store", &Store)
    } else {
        ("set_temperature", &SetTemperature)
    };
    // `STREAM_FORM=0..3` fuzzes one form alone (Chat, Responses, Anthropic, Gemini).
    static FORM: std::sync::OnceLock<Option<u8>> = std::sync::OnceLock::new();
    let form = FORM
        .get_or_init(|| std::env::var("STREAM_FORM").ok().and_then(|f| f.parse().ok()))
        .unwrap_or(*form);
    let dialect = match form % 4 {
        0 => Dialect::OpenAiChat { strict: false },
        1 => Dialect::OpenAiResponses { strict: false },
        2 => Dialect::Anthropic { strict: false },
        _ => Dialect::Gemini,
    };
    let events = if dialect == Dialect::Gemini {
        gemini_events(name, text)
    } else {
        let mut at: Vec<usize> = cuts
            .iter()
            .map(|c| usize::from(*c) * text.len() / 256)
            .filter(|&c| text.is_char_boundary(c))
            .collect();
        at.extend([0, text.len()]);
        at.sort_unstable();
        at.dedup();
        let pieces: Vec<&str> = at.windows(2).map(|w| &text[w[0]..w[1]]).collect();
        events(dialect, name, &pieces)
    };
    let mut stream = toolbox.provider(dialect).call_stream();
    let mut out = Vec::new();
    for event in &events {
        out.extend(stream.push(event));
    }
    out.extend(stream.finish());
    assert_eq!(out.len(), 1, "one call, one answer");
    let streamed = match out.remove(0) {
        Ok(call) => tool
            .definition()
            .canonical_arguments(call.arguments.clone())
            .ok(),
        Err(err) => {
            assert!(!err.error.message().is_empty());
            None
        }
    };
    if dialect != Dialect::Gemini {
        let whole = if text.trim().is_empty() {
            tool.definition().canonical_arguments("{}").ok()
        } else {
            tool.definition().canonical_arguments(text).ok()
        };
        assert_eq!(streamed, whole, "the stream's verdict is the whole read's");
    }
});

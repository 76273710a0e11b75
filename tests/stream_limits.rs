//! Every input limit holds while arguments stream, in every provider's stream form, and a
//! stream's verdict is the whole read's for every split of the same text: concatenated
//! documents, repeated keys, long numbers, deep and wide documents. The fields a stream
//! reader takes from its events are checked, never appended.

use serde_json::{Value, json};
use toolsmith::provider::{ArgumentChange, ArgumentStream, StreamedCallError};
use toolsmith::{Dialect, Tool, ToolCall, ToolContext, Toolbox, tool};

/// Stores free-form data. Writes a record. Not for reading one.
#[tool(
    effect = "write",
    limits(
        max_depth = 6,
        max_items = 8,
        max_members = 6,
        max_nodes = 60,
        max_bytes = 2048
    )
)]
fn store(
    /// The data.
    data: Value,
) -> String {
    data.to_string()
}

/// Sets a thermostat. Writes the device's setting. Not for reading it.
#[tool(effect = "write")]
fn set_temperature(
    /// Degrees Celsius.
    #[arg(range(min = 5, max = 30))]
    celsius: u32,
) -> String {
    format!("set to {celsius}")
}

/// Records a measurement. Writes a record. Not for reading one.
#[tool(effect = "write")]
fn record(
    /// The value, as written.
    value: f64,
) -> String {
    value.to_string()
}

const DIALECTS: [Dialect; 4] = [
    Dialect::OpenAiChat { strict: false },
    Dialect::OpenAiResponses { strict: false },
    Dialect::Anthropic { strict: false },
    Dialect::Gemini,
];

/// The events that stream one call of `name` whose arguments' text is `pieces` joined.
fn events(dialect: Dialect, name: &str, pieces: &[&str]) -> Vec<Value> {
    let mut out = Vec::new();
    match dialect {
        Dialect::OpenAiChat { .. } => {
            out.push(json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": name, "arguments": ""}}]}}]}));
            for piece in pieces {
                out.push(json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}}]}));
            }
            out.push(
                json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
            );
        }
        Dialect::OpenAiResponses { .. } => {
            out.push(json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": name, "arguments": ""}}));
            for piece in pieces {
                out.push(json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 0, "delta": piece}));
            }
            out.push(json!({"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 0, "name": name, "arguments": pieces.concat()}));
        }
        Dialect::Anthropic { .. } => {
            out.push(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": name, "input": {}}}));
            for piece in pieces {
                out.push(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": piece}}));
            }
            out.push(json!({"type": "content_block_stop", "index": 0}));
        }
        _ => unreachable!("Gemini streams by path"),
    }
    out
}

/// Gemini's parts for arguments `doc`, each leaf by its JSON Path (strings in two pieces).
fn gemini_events(name: &str, doc: &Value) -> Vec<Value> {
    fn leaves(at: &str, value: &Value, out: &mut Vec<Value>) {
        match value {
            Value::Object(map) if !map.is_empty() => {
                for (k, v) in map {
                    leaves(&format!("{at}.{k}"), v, out);
                }
            }
            Value::Array(items) if !items.is_empty() => {
                for (i, v) in items.iter().enumerate() {
                    leaves(&format!("{at}[{i}]"), v, out);
                }
            }
            Value::String(s) => {
                let half = s
                    .char_indices()
                    .nth(s.chars().count() / 2)
                    .map_or(s.len(), |(i, _)| i);
                out.push(json!({"jsonPath": at, "stringValue": &s[..half], "willContinue": true}));
                out.push(json!({"jsonPath": at, "stringValue": &s[half..]}));
            }
            Value::Number(n) => out.push(json!({"jsonPath": at, "numberValue": n})),
            Value::Bool(b) => out.push(json!({"jsonPath": at, "boolValue": b})),
            _ => out.push(json!({"jsonPath": at, "nullValue": "NULL_VALUE"})),
        }
    }
    let mut args = Vec::new();
    leaves("$", doc, &mut args);
    let mut out = vec![
        json!({"candidates": [{"content": {"parts": [{"functionCall": {"name": name, "id": "g1", "partialArgs": [], "willContinue": true}}]}}]}),
    ];
    for arg in args {
        out.push(json!({"candidates": [{"content": {"parts": [{"functionCall": {"partialArgs": [arg], "willContinue": true}}]}}]}));
    }
    out.push(json!({"candidates": [{"content": {"parts": [{"functionCall": {}}]}}]}));
    out
}

/// What a stream makes of `events`: the one call, read as a whole call is, or its error.
fn streamed(toolbox: &Toolbox, dialect: Dialect, events: &[Value]) -> Result<Value, String> {
    let mut stream = toolbox.provider(dialect).call_stream();
    let mut out: Vec<Result<ToolCall, StreamedCallError>> = Vec::new();
    for event in events {
        out.extend(stream.push(event));
    }
    out.extend(stream.finish());
    assert_eq!(out.len(), 1, "one call: {out:?}");
    match out.remove(0) {
        Ok(call) => {
            let tool = toolbox.get(&call.name).expect("a known tool");
            tool.definition()
                .canonical_arguments(call.arguments.clone())
                .map_err(|e| e.code().as_str().to_owned())
        }
        Err(err) => Err(err.error.code().as_str().to_owned()),
    }
}

/// The whole read of `text` for `tool`.
fn whole(tool: &dyn Tool, text: &str) -> Result<Value, String> {
    tool.definition()
        .canonical_arguments(text)
        .map_err(|e| e.code().as_str().to_owned())
}

/// `text` split at every place (char boundaries) into two pieces, and into one piece a
/// character.
fn splits(text: &str) -> Vec<Vec<&str>> {
    let mut out = vec![vec![text]];
    for (i, _) in text.char_indices().skip(1) {
        out.push(vec![&text[..i], &text[i..]]);
    }
    out.push(
        text.char_indices()
            .map(|(i, c)| &text[i..i + c.len_utf8()])
            .collect(),
    );
    out
}

#[test]
fn every_limit_holds_in_every_stream_form() {
    let toolbox = Toolbox::new().with(Store);
    let deep = format!("{{\"data\": {}1{}}}", "[".repeat(6), "]".repeat(6));
    let cases: [(&str, String); 5] = [
        ("max_depth", deep),
        (
            "max_items",
            format!("{{\"data\": [{}]}}", ["1"; 9].join(",")),
        ),
        (
            "max_members",
            format!(
                "{{\"data\": {{{}}}}}",
                (0..7)
                    .map(|i| format!("\"k{i}\": {i}"))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        ),
        (
            "max_nodes",
            format!(
                "{{\"data\": [{}]}}",
                (0..8)
                    .map(|_| "[1,2,3,4,5,6,7]")
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        ),
        (
            "max_bytes",
            format!("{{\"data\": \"{}\"}}", "x".repeat(2100)),
        ),
    ];
    for (limit, text) in &cases {
        let expected = whole(&Store, text);
        assert_eq!(expected, Err("invalid_arguments".to_owned()), "{limit}");
        for dialect in DIALECTS {
            let events = match dialect {
                Dialect::Gemini => gemini_events("store", &serde_json::from_str(text).unwrap()),
                _ => events(
                    dialect,
                    "store",
                    &[&text[..text.len() / 2], &text[text.len() / 2..]],
                ),
            };
            let mut stream = toolbox.provider(dialect).call_stream();
            let mut out = Vec::new();
            for event in &events {
                out.extend(stream.push(event));
            }
            out.extend(stream.finish());
            let err = out.remove(0).expect_err(limit);
            assert!(
                err.error.to_string().contains(limit)
                    || err
                        .error
                        .fields()
                        .iter()
                        .any(|f| f.to_string().contains(limit)),
                "{dialect:?} {limit}: {}",
                err.error
            );
        }
    }
}

#[test]
fn a_stream_gives_the_whole_reads_verdict_for_every_split() {
    let toolbox = Toolbox::new().with(Store).with(SetTemperature).with(Record);
    let long_number = format!("{{\"value\": 0.{}1}}", "0".repeat(5000));
    let cases: Vec<(&dyn Tool, &str, String)> = vec![
        (
            &SetTemperature,
            "set_temperature",
            "{\"celsius\":20}".to_owned(),
        ),
        (
            &SetTemperature,
            "set_temperature",
            "{\"celsius\":20}{\"celsius\":25}".to_owned(),
        ),
        (
            &SetTemperature,
            "set_temperature",
            "{\"celsius\":20} ".to_owned(),
        ),
        (
            &SetTemperature,
            "set_temperature",
            "{\"celsius\":1,\"celsius\":20}".to_owned(),
        ),
        (
            &SetTemperature,
            "set_temperature",
            "{\"celsius\":95}".to_owned(),
        ),
        (
            &Store,
            "store",
            "{\"data\": {\"a\": 1, \"a\": 2}}".to_owned(),
        ),
        (
            &Store,
            "store",
            "{\"data\": [1, {\"b\": [true, null]}], \"x\": 1}".to_owned(),
        ),
        (
            &Store,
            "store",
            "{\"data\": \"\\ud83d\\ude00 \\u00e9\"}".to_owned(),
        ),
        (&Record, "record", long_number),
    ];
    for (tool, name, text) in &cases {
        let expected = whole(*tool, text);
        for dialect in &DIALECTS[..3] {
            let all = splits(text);
            // Every two-piece split of short texts; a few of a long one.
            let chosen: Vec<&Vec<&str>> = if text.len() > 200 {
                all.iter().step_by(997).collect()
            } else {
                all.iter().collect()
            };
            for pieces in chosen {
                let got = streamed(&toolbox, *dialect, &events(*dialect, name, pieces));
                assert_eq!(
                    got,
                    expected,
                    "{dialect:?} {text:.80} split {:?}",
                    pieces.len()
                );
            }
        }
    }
}

#[tokio::test]
async fn concatenated_documents_never_run_whatever_the_split() {
    let toolbox = Toolbox::new().with(SetTemperature);
    let provider = toolbox.provider(Dialect::OpenAiChat { strict: true });
    let mut stream = provider.call_stream();
    let chunk = |args: &str| json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "set_temperature", "arguments": args}}]}}]});
    assert!(
        stream.push(&chunk("{\"celsius\":20}")).is_empty(),
        "not out before the choice ends"
    );
    let refused = stream.push(&chunk("{\"celsius\":25}"));
    assert_eq!(refused.len(), 1);
    assert_eq!(
        refused[0].as_ref().unwrap_err().error.code().as_str(),
        "invalid_arguments"
    );
    assert!(stream.finish().is_empty());
}

#[test]
fn the_closing_events_fields_are_checked_not_appended() {
    let toolbox = Toolbox::new().with(SetTemperature);
    let dialect = Dialect::OpenAiResponses { strict: true };
    // `.done` carries the name (OpenAI's event schema lists it): the call is not renamed.
    let ok = streamed(
        &toolbox,
        dialect,
        &events(dialect, "set_temperature", &["{\"celsius\"", ": 21}"]),
    );
    assert_eq!(ok, Ok(json!({"celsius": 21})));
    // `.done` arguments other than the pieces checked: refused, never run unchecked.
    let mut evs = events(dialect, "set_temperature", &["{\"celsius\": 21}"]);
    let last = evs.len() - 1;
    evs[last]["arguments"] = json!("{\"celsius\": 99}");
    assert_eq!(
        streamed(&toolbox, dialect, &evs),
        Err("invalid_arguments".to_owned())
    );
    // With no pieces, `.done`'s arguments are read as pieces are: checked.
    let evs = vec![
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "set_temperature", "arguments": ""}}),
        json!({"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 0, "arguments": "{\"celsius\": 99}"}),
    ];
    assert_eq!(
        streamed(&toolbox, dialect, &evs),
        Err("invalid_arguments".to_owned())
    );
    // A name that changes mid-stream breaks the call.
    let mut evs = events(dialect, "set_temperature", &["{\"celsius\": 21}"]);
    evs[last]["name"] = json!("delete_everything");
    assert_eq!(
        streamed(&toolbox, dialect, &evs),
        Err("invalid_arguments".to_owned())
    );
}

#[test]
fn gemini_paths_are_held_to_the_limits() {
    // 100,000 levels deep, under the byte limit: refused, without building anything deep.
    let path = format!("${}", ".a".repeat(100_000));
    let part = |args: Value, more: bool| json!({"candidates": [{"content": {"parts": [{"functionCall": {"name": "store", "id": "g1", "partialArgs": args, "willContinue": more}}]}}]});
    for toolbox in [Toolbox::new().with(Store), Toolbox::new()] {
        let mut stream = toolbox.provider(Dialect::Gemini).call_stream();
        let mut out = stream.push(&part(json!([{"jsonPath": path, "numberValue": 1}]), false));
        out.extend(stream.finish());
        assert!(out[0].is_err(), "refused");
    }
    // Growing indices: refused at the item limit, not grown.
    let toolbox = Toolbox::new().with(Store);
    let mut stream = toolbox.provider(Dialect::Gemini).call_stream();
    let mut out = Vec::new();
    out.extend(stream.push(&part(json!([]), true)));
    for k in 0..400u64 {
        let arg = json!([{"jsonPath": format!("$.data[{}]", 1024 * k), "numberValue": k}]);
        out.extend(stream.push(&json!({"candidates": [{"content": {"parts": [{"functionCall": {"partialArgs": arg, "willContinue": true}}]}}]})));
    }
    out.extend(stream.finish());
    let err = out.remove(0).unwrap_err();
    assert!(
        err.error.fields()[0].to_string().contains("max_items"),
        "{}",
        err.error
    );
    // A valid streamed call keeps working, many parts long, and equals the whole read.
    let doc = json!({"data": {"tags": ["a", "b"], "n": 3, "ok": true, "note": "héllo"}});
    let got = streamed(&toolbox, Dialect::Gemini, &gemini_events("store", &doc));
    assert_eq!(got, whole(&Store, &doc.to_string()));
}

#[test]
fn changes_rebuild_the_partial_view_piece_by_piece() {
    let text =
        "{\"data\": {\"list\": [1, \"two\", {\"x\": null}], \"s\": \"a\\u00e9\\n\", \"t\": true}}";
    for pieces in splits(text) {
        let mut args = ArgumentStream::new(Store.definition()).with_changes();
        let mut view = json!({});
        for piece in pieces {
            args.push(piece).unwrap();
            for change in args.changes() {
                match change {
                    ArgumentChange::Set { pointer, value } => {
                        set(&mut view, pointer, value.clone());
                    }
                    ArgumentChange::Append { pointer, text } => {
                        let slot = view.pointer_mut(pointer).expect("a string to append to");
                        let grown = format!("{}{text}", slot.as_str().unwrap());
                        *slot = Value::String(grown);
                    }
                    _ => unreachable!(),
                }
            }
            assert_eq!(view, args.partial());
        }
        assert_eq!(view, serde_json::from_str::<Value>(text).unwrap());
    }

    fn set(doc: &mut Value, pointer: &str, value: Value) {
        let Some((parent, last)) = pointer.rsplit_once('/') else {
            *doc = value;
            return;
        };
        match doc.pointer_mut(parent).unwrap() {
            Value::Object(map) => {
                map.insert(last.replace("~1", "/").replace("~0", "~"), value);
            }
            Value::Array(items) => items.push(value),
            _ => unreachable!(),
        }
    }
}

#[tokio::test]
async fn a_refused_stream_runs_nothing() {
    let toolbox = Toolbox::new().with(SetTemperature);
    let provider = toolbox.provider(Dialect::Anthropic { strict: false });
    let events = events(
        Dialect::Anthropic { strict: false },
        "set_temperature",
        &["{\"celsius\":20", "}{\"celsius\":25}"],
    );
    let mut stream = provider.call_stream();
    let mut out = Vec::new();
    for event in &events {
        out.extend(stream.push(event));
    }
    let err = out.remove(0).unwrap_err();
    let outcome = provider.run(&err.call, &ToolContext::new()).await;
    assert!(
        !outcome.is_success(),
        "its text is refused by the whole read too"
    );
}

//! What a hostile or careless caller sends, through `Toolbox::call`, `respond` and the provider
//! dialects: integers are never rounded, repeated keys are refused at every depth, every
//! input has a limit, deep values cannot overflow a stack, and quotes of the input are short.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolsmith::InputLimits;
use toolsmith::{Dialect, Tool, ToolCall, ToolContext, Toolbox, tool};

/// Echoes a 64-bit id. Read-only.
#[tool(effect = "read", allow(description_scope))]
fn echo_i64(
    /// The id.
    id: i64,
) -> i64 {
    id
}

/// Echoes an unsigned 64-bit id. Read-only.
#[tool(effect = "read", inline, allow(description_scope))]
fn echo_u64(
    /// The id.
    id: u64,
) -> u64 {
    id
}

/// Echoes a small number. Read-only.
#[tool(effect = "read", allow(description_scope))]
async fn echo_i8(
    /// The number.
    n: i8,
    /// A ratio, any number.
    ratio: Option<f64>,
) -> (i8, Option<f64>) {
    (n, ratio)
}

/// A point.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Point {
    /// Across.
    x: i64,
    /// Down.
    y: i64,
}

/// Moves to a point. Read-only.
#[tool(effect = "read", allow(description_scope))]
async fn move_to(
    /// Where.
    point: Point,
    /// Labels by name.
    labels: Option<std::collections::BTreeMap<String, String>>,
) -> String {
    format!("{},{} {}", point.x, point.y, labels.map_or(0, |l| l.len()))
}

/// A note whose title has a length checked inside its own type (the full validator runs).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Note {
    /// The title.
    #[schemars(length(min = 1, max = 40))]
    title: String,
    /// The count.
    count: u32,
}

/// Files a note. Read-only.
#[tool(effect = "read", allow(description_scope))]
async fn file_note(
    /// The note.
    note: Note,
) -> String {
    format!("{} x{}", note.note_title(), note.count)
}

impl Note {
    fn note_title(&self) -> &str {
        &self.title
    }
}

/// Takes any JSON document. Read-only.
#[tool(
    effect = "read",
    allow(description_scope, open_map),
    limits(max_depth = 8, max_items = 5)
)]
async fn take_json(
    /// The documents.
    doc: Vec<Value>,
) -> usize {
    doc.len()
}

fn toolbox() -> Toolbox {
    Toolbox::new()
        .with(EchoI64)
        .with(EchoU64)
        .with(EchoI8)
        .with(MoveTo)
        .with(FileNote)
        .with(TakeJson)
}

async fn call<'a>(
    toolbox: &'a Toolbox,
    name: &str,
    args: impl Into<toolsmith::Arguments<'a>>,
) -> Value {
    let ctx = ToolContext::new();
    let out = toolbox.call(name, args.into(), &ctx).await;
    serde_json::from_str(&out.to_json()).unwrap()
}

fn refused_at(out: &Value, pointer: &str) -> String {
    assert_eq!(out["status"], "error", "{out}");
    assert_eq!(out["error"]["code"], "invalid_arguments", "{out}");
    let field = &out["error"]["fields"][0];
    assert_eq!(field["pointer"], pointer, "{out}");
    field["message"].as_str().unwrap().to_owned()
}

// ---------------------------------------------------------------------------------------------
// Exact numbers

#[tokio::test]
async fn integers_in_text_are_exact_or_refused() {
    let toolbox = toolbox();
    // Accepted, exactly.
    for (text, expected) in [
        ("-9223372036854775808", json!(i64::MIN)),
        ("9223372036854775807", json!(i64::MAX)),
        ("9007199254740993", json!(9_007_199_254_740_993_i64)),
        ("9007199254740993.0", json!(9_007_199_254_740_993_i64)),
        ("9007199254740991.0", json!(9_007_199_254_740_991_i64)),
        ("-9007199254740993.0", json!(-9_007_199_254_740_993_i64)),
        ("-0", json!(0)),
        ("-0.0", json!(0)),
        ("5.0", json!(5)),
        ("1e18", json!(1_000_000_000_000_000_000_i64)),
        ("1.5e1", json!(15)),
    ] {
        let out = call(&toolbox, "echo_i64", format!(r#"{{"id": {text}}}"#)).await;
        assert_eq!(out["data"], expected, "{text}: {out}");
    }
    // Refused, with the pointer and the range.
    for text in [
        "-9223372036854775809",
        "9223372036854775808",
        "18446744073709551616",
        "1e19",
        "-1e19",
        "1.0000000000000002",
        "1.00000000000000000001",
        "9007199254740993.5",
        "1e400",
    ] {
        let out = call(&toolbox, "echo_i64", format!(r#"{{"id": {text}}}"#)).await;
        let message = refused_at(&out, if text == "1e400" { "" } else { "/id" });
        if text.starts_with("-9") || text.starts_with("9") || text.contains("e19") {
            assert!(
                message.contains("922337203685477580"),
                "{text}: the range is named: {message}"
            );
        }
    }
    for (text, expected) in [
        ("18446744073709551615", json!(u64::MAX)),
        ("18446744073709551615.0", json!(u64::MAX)),
        ("1e19", json!(10_000_000_000_000_000_000_u64)),
        ("0.0", json!(0)),
    ] {
        let out = call(&toolbox, "echo_u64", format!(r#"{{"id": {text}}}"#)).await;
        assert_eq!(out["data"], expected, "{text}: {out}");
    }
    for text in [
        "18446744073709551616",
        "18446744073709551617",
        "-1",
        "2e19",
        "1.5",
    ] {
        let out = call(&toolbox, "echo_u64", format!(r#"{{"id": {text}}}"#)).await;
        refused_at(&out, "/id");
    }
    for text in ["128", "-129", "127.5", "1e3"] {
        let out = call(&toolbox, "echo_i8", format!(r#"{{"n": {text}}}"#)).await;
        refused_at(&out, "/n");
    }
    // A float parameter takes any number, as the nearest float.
    let out = call(
        &toolbox,
        "echo_i8",
        r#"{"n": 1, "ratio": 1.00000000000000000001}"#,
    )
    .await;
    assert_eq!(out["data"], json!([1, 1.0]), "{out}");
    // Nested, and on the full validator's path.
    let out = call(
        &toolbox,
        "move_to",
        r#"{"point": {"x": 2.0, "y": -9223372036854775809}}"#,
    )
    .await;
    refused_at(&out, "/point/y");
    let out = call(
        &toolbox,
        "file_note",
        r#"{"note": {"title": "a", "count": 4294967295.0}}"#,
    )
    .await;
    assert_eq!(out["data"], "a x4294967295", "{out}");
    let out = call(
        &toolbox,
        "file_note",
        r#"{"note": {"title": "a", "count": 4294967296}}"#,
    )
    .await;
    refused_at(&out, "/note/count");
    let out = call(
        &toolbox,
        "file_note",
        r#"{"note": {"title": "a", "count": 1.000000000000000001}}"#,
    )
    .await;
    refused_at(&out, "/note/count");
}

#[tokio::test]
async fn integers_in_parsed_values_are_never_rounded() {
    let toolbox = toolbox();
    // Integers a parser kept as integers are exact.
    let out = call(&toolbox, "echo_i64", json!({"id": i64::MIN})).await;
    assert_eq!(out["data"], json!(i64::MIN));
    let out = call(&toolbox, "echo_u64", json!({"id": u64::MAX})).await;
    assert_eq!(out["data"], json!(u64::MAX));
    // A float that holds an integer unambiguously (below 2^53) is that integer.
    let out = call(&toolbox, "echo_i64", json!({"id": 5.0})).await;
    assert_eq!(out["data"], 5);
    let out = call(&toolbox, "echo_i64", json!({"id": 9_007_199_254_740_991.0})).await;
    assert_eq!(out["data"], 9_007_199_254_740_991_i64);
    // Beyond, a float stands for many integers: refused, never taken as a neighbour.
    for value in [
        Value::from(9_007_199_254_740_992.0),
        // What a parser without exact integers makes of -9223372036854775809.
        serde_json::from_str::<Value>("-9223372036854775809").unwrap(),
        serde_json::from_str::<Value>("9007199254740993.0").unwrap(),
        Value::from(1e19),
        Value::from(1.0000000000000002),
    ] {
        let out = call(&toolbox, "echo_i64", json!({ "id": value })).await;
        refused_at(&out, "/id");
    }
}

#[tokio::test]
async fn every_dialect_reads_numbers_exactly() {
    let toolbox = toolbox();
    let ctx = ToolContext::new();
    // OpenAI sends text (a JSON string holding the object); Anthropic and Gemini objects.
    let openai = json!({"choices": [{"message": {"tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "echo_i64", "arguments": "{\"id\": 9007199254740993.0}"}}]}}]});
    let calls = ToolCall::parse(Dialect::OpenAiChat { strict: false }, &openai).unwrap();
    let out = toolbox.call_all(&calls, &ctx).await;
    assert_eq!(
        out[0].to_json(),
        r#"{"status":"success","data":9007199254740993}"#
    );
    let openai = json!({"choices": [{"message": {"tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "echo_i64", "arguments": "{\"id\": -9223372036854775809}"}}]}}]});
    let calls = ToolCall::parse(Dialect::OpenAiChat { strict: false }, &openai).unwrap();
    let answer = toolbox
        .provider(Dialect::OpenAiChat { strict: false })
        .respond(&calls[0], &ctx)
        .await;
    assert!(answer.to_string().contains("invalid_arguments"), "{answer}");
    let anthropic = json!({"content": [{"type": "tool_use", "id": "t1", "name": "echo_i64",
        "input": {"id": -9223372036854775808_i64}}]});
    let calls = ToolCall::parse(Dialect::Anthropic { strict: false }, &anthropic).unwrap();
    let out = toolbox.call_all(&calls, &ctx).await;
    assert_eq!(
        out[0].to_json(),
        r#"{"status":"success","data":-9223372036854775808}"#
    );
    let anthropic: Value = serde_json::from_str(
        r#"{"content": [{"type": "tool_use", "id": "t1", "name": "echo_i64", "input": {"id": -9223372036854775809}}]}"#,
    )
    .unwrap();
    let calls = ToolCall::parse(Dialect::Anthropic { strict: false }, &anthropic).unwrap();
    let out = toolbox.call_all(&calls, &ctx).await;
    assert_eq!(out[0].error().unwrap().fields()[0].pointer, "/id");
}

// ---------------------------------------------------------------------------------------------
// Repeated keys

#[tokio::test]
async fn repeated_keys_are_refused_at_every_depth_with_their_pointer() {
    let toolbox = toolbox();
    let out = call(&toolbox, "echo_i64", r#"{"id": 1, "id": 2}"#).await;
    assert_eq!(
        refused_at(&out, "/id"),
        "`id` appears more than once; send each key once"
    );
    let out = call(
        &toolbox,
        "move_to",
        r#"{"point": {"x": 1, "x": 2, "y": 3}}"#,
    )
    .await;
    refused_at(&out, "/point/x");
    let out = call(
        &toolbox,
        "move_to",
        r#"{"point": {"x": 1, "y": 3}, "labels": {"a": "b", "a": "c"}}"#,
    )
    .await;
    refused_at(&out, "/labels/a");
    let out = call(
        &toolbox,
        "take_json",
        r#"{"doc": [{"k": 1}, {"k": {"z": 1, "z": 1}}]}"#,
    )
    .await;
    refused_at(&out, "/doc/1/k/z");
    // The full validator's path: the one that runs is never another than the one reviewed.
    let out = call(
        &toolbox,
        "file_note",
        r#"{"note": {"title": "Lunch", "count": 1, "title": "Wire 10k to attacker"}}"#,
    )
    .await;
    refused_at(&out, "/note/title");
    // OpenAI's string-wrapped form too.
    let out = call(&toolbox, "echo_i64", r#""{\"id\": 1, \"id\": 2}""#).await;
    refused_at(&out, "/id");
    // And a definition's own validation, which approval and idempotency read.
    let err = FileNote
        .definition()
        .validate(r#"{"note": {"title": "a", "title": "b", "count": 1}}"#.into())
        .unwrap_err();
    assert_eq!(err.fields()[0].pointer, "/note/title");
}

// ---------------------------------------------------------------------------------------------
// Limits

#[tokio::test]
async fn every_limit_is_named_with_its_value_and_pointer() {
    let toolbox = toolbox();
    // Per tool: `take_json` allows 8 levels and 5 items.
    let out = call(&toolbox, "take_json", r#"{"doc": [1, 2, 3, 4, 5, 6]}"#).await;
    let message = refused_at(&out, "/doc");
    assert!(
        message.contains("more than 5 items, the limit (max_items)"),
        "{message}"
    );
    let deep = format!(r#"{{"doc": {}1{}}}"#, "[".repeat(8), "]".repeat(8));
    let fits = format!(r#"{{"doc": {}1{}}}"#, "[".repeat(7), "]".repeat(7));
    let out = call(&toolbox, "take_json", fits.as_str()).await;
    assert_eq!(out["status"], "success", "{out}");
    let out = call(&toolbox, "take_json", deep.as_str()).await;
    let message = refused_at(&out, "/doc/0/0/0/0/0/0/0");
    assert!(
        message.contains("more than 8 levels deep, the limit (max_depth)"),
        "{message}"
    );
    // The same document as a parsed value.
    let value: Value = serde_json::from_str(&deep).unwrap();
    let out = call(&toolbox, "take_json", value).await;
    refused_at(&out, "/doc/0/0/0/0/0/0/0");
    // Defaults: 1,000 keys per object, 1 MiB of text.
    let keys: serde_json::Map<String, Value> =
        (0..1001).map(|i| (format!("k{i}"), json!(i))).collect();
    let out = call(
        &toolbox,
        "move_to",
        json!({"point": {"x": 1, "y": 1}, "labels": keys}),
    )
    .await;
    let message = refused_at(&out, "/labels");
    assert!(
        message.contains("more than 1000 keys, the limit (max_members)"),
        "{message}"
    );
    let long = format!(r#"{{"id": 1, "pad": "{}"}}"#, "x".repeat(1 << 20));
    let out = call(&toolbox, "echo_i64", long.as_str()).await;
    let message = refused_at(&out, "");
    assert!(
        message.contains("limit of 1048576 bytes (max_bytes)"),
        "{message}"
    );
    // Per toolbox, for tools that set none.
    let small =
        Toolbox::new()
            .with(EchoI64)
            .with(TakeJson)
            .with_defaults(toolsmith::policy::Defaults {
                input_limits: Some(InputLimits::default().with_max_nodes(3)),
                ..toolsmith::policy::Defaults::default()
            });
    let out = call(&small, "echo_i64", r#"{"id": 1, "b": 2, "c": 3}"#).await;
    let message = refused_at(&out, "/c");
    assert!(
        message.contains("more than 3 JSON values, the limit (max_nodes)"),
        "{message}"
    );
    // `take_json` keeps its own limits.
    let out = call(&small, "take_json", r#"{"doc": [1, 2, 3]}"#).await;
    assert_eq!(out["status"], "success", "{out}");
}

#[test]
fn values_nested_deeper_than_any_stack_are_refused_without_recursion() {
    fn nested(depth: usize) -> Value {
        let mut v = json!(1);
        for _ in 0..depth {
            v = Value::Array(vec![v]);
        }
        v
    }
    // A small stack: nothing may recurse through the value.
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(|| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let toolbox = toolbox();
            let ctx = ToolContext::new();
            for name in ["take_json", "echo_i64", "no_such_tool"] {
                let mut doc = serde_json::Map::new();
                doc.insert("doc".into(), Value::Array(vec![nested(100_000)]));
                let out = rt.block_on(toolbox.call(name, Value::Object(doc), &ctx));
                assert!(out.error().is_some());
            }
            let mut doc = serde_json::Map::new();
            doc.insert("doc".into(), Value::Array(vec![nested(100_000)]));
            let doc = Value::Object(doc);
            let out = rt.block_on(toolbox.call("take_json", &doc, &ctx));
            assert_eq!(out.error().unwrap().code().as_str(), "invalid_arguments");
            let mut buf = Vec::new();
            rt.block_on(toolbox.call_into("take_json", &doc, &ctx, &mut buf));
            assert!(buf.starts_with(br#"{"status":"error""#));
            // The value is the test's to drop: flattened without recursion.
            let mut pending = vec![doc];
            while let Some(v) = pending.pop() {
                match v {
                    Value::Array(items) => pending.extend(items),
                    Value::Object(map) => pending.extend(map.into_iter().map(|(_, v)| v)),
                    _ => {}
                }
            }
        })
        .unwrap()
        .join()
        .unwrap();
}

// ---------------------------------------------------------------------------------------------
// Echoes

#[tokio::test]
async fn quotes_of_the_input_are_cut_and_escaped() {
    let toolbox = toolbox();
    let ctx = ToolContext::new();
    let name = "x".repeat(1 << 20);
    let out = toolbox.call(&name, "{}", &ctx).await;
    let text = out.to_json();
    assert!(text.len() < 2_000, "{}", text.len());
    let out = toolbox.call("evil\n\u{1b}[31mtool", "{}", &ctx).await;
    let message = out.error().unwrap().message().to_owned();
    assert!(
        !message.contains('\n') && !message.contains('\u{1b}'),
        "{message}"
    );
    assert!(message.contains("evil\\n\\u{1b}[31mtool"), "{message}");
    let key = "k".repeat(100_000);
    let out = call(&toolbox, "echo_i64", format!(r#"{{"id": 1, "{key}": 2}}"#)).await;
    assert!(out.to_string().len() < 2_000, "{}", out.to_string().len());
    let field = &out["error"]["fields"][0];
    assert!(field["pointer"].as_str().unwrap().chars().count() <= toolsmith::error::ECHO_CAP + 2);
    let out = call(&toolbox, "echo_i64", r#"{"id": 1, "a\u0007\nb": 2}"#).await;
    assert_eq!(out["error"]["fields"][0]["pointer"], "/a\\u{7}\\nb");
    let message = out["error"]["message"].as_str().unwrap();
    assert!(
        !message.contains('\u{7}') && !message.contains('\n'),
        "{message}"
    );
    let out = call(&toolbox, "echo_i64", json!({"id": "\u{202E}".repeat(500)})).await;
    let message = out["error"]["message"].as_str().unwrap();
    assert!(!message.contains('\u{202E}'), "{message}");
    assert!(message.len() < 1_000, "{message}");
}

#[tokio::test]
async fn audit_records_of_refused_calls_are_bounded_too() {
    let sink = std::sync::Arc::new(toolsmith::audit::MemorySink::default());
    let toolbox = Toolbox::new()
        .with(EchoI64)
        .with_audit(std::sync::Arc::clone(&sink));
    let keys: String = (0..5000).map(|i| format!(r#""k{i}":{i},"#)).collect();
    let text = format!(r#"{{{keys}"id":1}}"#);
    let out = call(&toolbox, "echo_i64", text.as_str()).await;
    refused_at(&out, "");
    let out = call(&toolbox, "echo_i64", r#"{"id": 7, "id": 8}"#).await;
    refused_at(&out, "/id");
    let out = call(&toolbox, "echo_i64", r#""{\"id\": 9}""#).await;
    assert_eq!(out["data"], 9);
    let records = sink.records();
    assert_eq!(records.len(), 3);
    assert!(
        records[0]
            .arguments
            .as_str()
            .unwrap()
            .starts_with("(not recorded")
    );
    assert!(
        records[1]
            .arguments
            .as_str()
            .unwrap()
            .starts_with("(not recorded")
    );
    assert_eq!(records[2].arguments, json!({"id": 9}));
}

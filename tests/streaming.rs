//! Tool calls assembled from streamed responses, in each provider's event shape
//! (`tests/fixtures/streams/`): parallel calls whose pieces interleave, a call with broken or
//! cut-off arguments (an error for that call alone), and the assembled calls run and answered.

use serde_json::{Value, json};
use toolsmith::provider::{CallStream, StreamedCallError};
use toolsmith::{Dialect, ErrorCode, ToolCall, ToolContext, ToolOutcome, Toolbox, tool};

/// What one stream gave: each result, with the number of events read when it came out.
type Results = Vec<(usize, Result<ToolCall, StreamedCallError>)>;

/// Feeds a server-sent-events file to a stream, `data:` line by line, then ends it.
fn feed(dialect: Dialect, file: &str) -> (Results, usize) {
    let text = std::fs::read_to_string(format!(
        "{}/tests/fixtures/streams/{file}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let mut stream = CallStream::new(dialect);
    let mut out = Vec::new();
    let mut events = 0;
    for line in text.lines() {
        if let Some(data) = line.strip_prefix("data: ") {
            events += 1;
            out.extend(stream.push_text(data).into_iter().map(|r| (events, r)));
        }
    }
    out.extend(stream.finish().into_iter().map(|r| (events, r)));
    assert!(stream.is_idle());
    (out, events)
}

fn arguments(call: &ToolCall) -> Value {
    serde_json::from_str(call.arguments.as_str().unwrap()).unwrap()
}

#[test]
fn openai_chat_interleaved_deltas() {
    let (results, events) = feed(Dialect::OpenAiChat { strict: true }, "openai_chat.sse");
    assert_eq!(results.len(), 3);
    let (at_paris, paris) = &results[0];
    let paris = paris.as_ref().unwrap();
    assert_eq!(paris.id.as_deref(), Some("call_kQ1"));
    assert_eq!(paris.name, "weather_get_current");
    assert_eq!(
        arguments(paris),
        json!({"city": "Paris", "unit": "celsius"})
    );
    let oslo = results[1].1.as_ref().unwrap();
    assert_eq!(oslo.id.as_deref(), Some("call_kQ2"));
    assert_eq!(arguments(oslo), json!({"city": "Oslo", "unit": "celsius"}));
    // A call comes out at its choice's finish_reason, not when its object closes: text
    // after a closed object would make the call one a whole read refuses.
    assert!(
        results.iter().all(|(at, _)| at == at_paris) && *at_paris < events,
        "every call comes out with the finish_reason chunk"
    );
    // The third call's arguments never close: an error for it alone, at finish_reason.
    let err = results[2].1.as_ref().unwrap_err();
    assert_eq!(err.call.id.as_deref(), Some("call_kQ3"));
    assert_eq!(err.call.name, "tickets_add_note");
    assert_eq!(err.error.code(), ErrorCode::TruncatedArguments);
    assert!(err.error.message().contains("were cut off"), "{err}");
}

#[test]
fn openai_responses_events() {
    let (results, _) = feed(
        Dialect::OpenAiResponses { strict: true },
        "openai_responses.sse",
    );
    assert_eq!(results.len(), 3);
    let first = results[0].1.as_ref().unwrap();
    let second = results[1].1.as_ref().unwrap();
    assert_eq!(
        first.id.as_deref(),
        Some("call_r1"),
        "the call_id, not the item id"
    );
    assert_eq!(
        arguments(first),
        json!({"city": "Paris", "unit": "celsius"})
    );
    assert_eq!(second.id.as_deref(), Some("call_r2"));
    assert_eq!(
        arguments(second),
        json!({"city": "Oslo", "unit": "celsius"})
    );
    // Cut off by the end of the stream.
    let err = results[2].1.as_ref().unwrap_err();
    assert_eq!(err.call.id.as_deref(), Some("call_r3"));
    assert_eq!(err.error.code(), ErrorCode::TruncatedArguments);
    assert!(err.error.message().contains("was not run"), "{err}");
}

#[test]
fn anthropic_input_json_deltas() {
    let (results, _) = feed(Dialect::Anthropic { strict: false }, "anthropic.sse");
    assert_eq!(results.len(), 3);
    let weather = results[0].1.as_ref().unwrap();
    assert_eq!(
        weather.id.as_deref(),
        Some("toolu_01T1x1fJ34qAmk2tNTrN7Up6")
    );
    assert_eq!(
        arguments(weather),
        json!({"city": "Paris", "unit": "celsius"})
    );
    // A tool without parameters streams no input: an empty object.
    let list = results[1].1.as_ref().unwrap();
    assert_eq!(list.name, "tickets_list_open");
    assert_eq!(arguments(list), json!({}));
    let err = results[2].1.as_ref().unwrap_err();
    assert_eq!(err.call.id.as_deref(), Some("toolu_01Kx3"));
    assert!(err.error.message().contains("not valid JSON"), "{err}");
}

#[test]
fn gemini_whole_parts() {
    let (results, _) = feed(Dialect::Gemini, "gemini.sse");
    let calls: Vec<ToolCall> = results.into_iter().map(|(_, r)| r.unwrap()).collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].name, "weather.get_current");
    assert_eq!(
        calls[1].arguments,
        json!({"city": "Oslo", "unit": "celsius"})
    );
}

#[test]
fn anthropic_blocks_may_interleave_and_arguments_have_a_limit() {
    let mut stream = CallStream::new(Dialect::Anthropic { strict: false }).with_max_bytes(64);
    let start = |index: u64, id: &str| json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": "weather_get_current", "input": {}}});
    let piece = |index: u64, text: &str| json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": text}});
    let stop = |index: u64| json!({"type": "content_block_stop", "index": index});
    let mut out = Vec::new();
    for event in [
        start(0, "toolu_a"),
        start(1, "toolu_b"),
        piece(1, "{\"city\": \""),
        piece(0, "{\"city\": \"Rome\"}"),
        piece(1, &"x".repeat(100)),
        stop(0),
        piece(1, "\"}"),
        stop(1),
    ] {
        out.extend(stream.push(&event));
    }
    let rome = out[0].as_ref().unwrap();
    assert_eq!(rome.id.as_deref(), Some("toolu_a"));
    let err = out[1].as_ref().unwrap_err();
    assert_eq!(err.call.id.as_deref(), Some("toolu_b"));
    assert!(
        err.error
            .message()
            .contains("longer than the limit of 64 bytes"),
        "{err}"
    );
}

/// Gets the current weather in a city. Read-only. Not for forecasts.
#[tool(name = "weather.get_current", effect = "read")]
fn get_current(
    /// The city.
    #[arg(length(min = 1, max = 60))]
    city: String,
    /// The unit.
    #[arg(length(max = 12))]
    unit: String,
) -> String {
    format!("21 {unit} in {city}")
}

#[tokio::test]
async fn assembled_calls_are_run_and_broken_ones_answered() {
    let toolbox = Toolbox::new().with(GetCurrent);
    let dialect = Dialect::OpenAiChat { strict: true };
    let openai = toolbox.provider(dialect);
    let (results, _) = feed(dialect, "openai_chat.sse");
    let mut calls = Vec::new();
    let mut outcomes = Vec::new();
    for (_, result) in results {
        match result {
            Ok(call) => {
                outcomes.push(openai.run(&call, &ToolContext::new()).await);
                calls.push(call);
            }
            Err(broken) => {
                outcomes.push(ToolOutcome::Error(broken.error));
                calls.push(broken.call);
            }
        }
    }
    let messages = openai.messages(&calls, &outcomes);
    assert_eq!(messages.len(), 3, "every call is answered");
    assert_eq!(messages[2]["tool_call_id"], "call_kQ3");
    let envelope: Value = serde_json::from_str(messages[0]["content"].as_str().unwrap()).unwrap();
    assert_eq!(envelope["data"], "21 celsius in Paris");
    let envelope: Value = serde_json::from_str(messages[2]["content"].as_str().unwrap()).unwrap();
    assert_eq!(envelope["error"]["code"], "truncated_arguments");
}

//! Arguments checked while they stream: recorded streams per provider with a valid call, a
//! call refused as soon as it cannot be valid and a call cut off under a `finish_reason` that
//! says all is well; and properties over generated documents: no prefix of a valid document
//! is refused, and every document a whole call refuses is refused streamed, in the same words.

use std::sync::atomic::Ordering;

use proptest::prelude::*;
use serde_json::{Value, json};
use toolsmith::provider::{ArgumentStream, StreamedCallError};
use toolsmith::{Dialect, Tool, ToolCall, ToolContext, ToolOutcome, Toolbox, tool};

#[path = "../examples/tools/thermostat.rs"]
mod thermostat;

use thermostat::{SET, SetThermostat};

type Results = Vec<(usize, Result<ToolCall, StreamedCallError>)>;

fn feed(dialect: Dialect, file: &str) -> Results {
    let text = std::fs::read_to_string(format!(
        "{}/tests/fixtures/streams/{file}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let toolbox = Toolbox::new().with(SetThermostat);
    let mut stream = toolbox.provider(dialect).call_stream();
    let mut out = Vec::new();
    let mut events = 0;
    for line in text.lines() {
        if let Some(data) = line.strip_prefix("data: ") {
            events += 1;
            out.extend(stream.push_text(data).into_iter().map(|r| (events, r)));
        }
    }
    out.extend(stream.finish().into_iter().map(|r| (usize::MAX, r)));
    out
}

/// The events after which the delta holding `needle` for the call arrived.
fn event_with(file: &str, needle: &str) -> usize {
    let text = std::fs::read_to_string(format!(
        "{}/tests/fixtures/streams/{file}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    text.lines()
        .filter(|l| l.starts_with("data: "))
        .position(|l| l.contains(needle))
        .map(|i| i + 1)
        .unwrap()
}

async fn check_stream(dialect: Dialect, file: &str) {
    let ids = match dialect {
        Dialect::Anthropic { .. } => ["toolu_t1", "toolu_t2", "toolu_t3"],
        Dialect::Gemini => ["g1", "g2", "g3"],
        _ => ["call_t1", "call_t2", "call_t3"],
    };
    // Gemini sends each value whole, by path: the room is refused once it has come.
    let (needle, room) = match dialect {
        Dialect::Gemini => ("\"stringValue\":\"garage\"", "garage"),
        _ => ("\\\"room\\\": \\\"g", "g"),
    };
    let results = feed(dialect, file);
    assert_eq!(results.len(), 3, "{results:?}");
    let by_id = |id: &str| {
        results
            .iter()
            .find(|(_, r)| match r {
                Ok(call) => call.id.as_deref() == Some(id),
                Err(err) => err.call.id.as_deref() == Some(id),
            })
            .unwrap()
    };
    // The valid call.
    let (_, first) = by_id(ids[0]);
    let first = first.as_ref().unwrap();
    // The call with a room no room starts with: refused at that piece, not at its end.
    let (at, second) = by_id(ids[1]);
    let second = second.as_ref().unwrap_err();
    assert_eq!(*at, event_with(file, needle), "refused as the room arrived");
    assert_eq!(second.error.code().as_str(), "invalid_arguments");
    assert_eq!(second.error.fields()[0].pointer, "/room");
    // In the words a whole call with that value gets.
    let whole = SetThermostat
        .definition()
        .canonical_arguments(json!({"celsius": 19, "room": room}))
        .unwrap_err();
    assert_eq!(second.error.fields(), whole.fields());
    // The call cut off, whatever `finish_reason` or `stop_reason` said.
    let (_, third) = by_id(ids[2]);
    let third = third.as_ref().unwrap_err();
    assert_eq!(third.error.code().as_str(), "truncated_arguments");

    // Only the valid call runs; the others are answered, and the history stays replayable.
    let toolbox = Toolbox::new().with(SetThermostat);
    let provider = toolbox.provider(dialect);
    let before = SET.load(Ordering::SeqCst);
    let mut calls = vec![first.clone()];
    let mut outcomes = vec![provider.run(first, &ToolContext::new()).await];
    for broken in [second, third] {
        calls.push(broken.call.clone());
        outcomes.push(ToolOutcome::Error(broken.error.clone()));
    }
    assert!(outcomes[0].is_success(), "{}", outcomes[0].to_json());
    assert!(SET.load(Ordering::SeqCst) > before);
    let messages = provider.messages(&calls, &outcomes);
    assert!(!messages.is_empty());
    let replayed = third.replay(dialect);
    match dialect {
        Dialect::Anthropic { .. } => {
            assert_eq!(replayed["type"], "tool_use");
            assert_eq!(
                replayed["input"]["invalid_json"],
                "{\"room\": \"office\", \"cels"
            );
        }
        Dialect::OpenAiChat { .. } => {
            assert_eq!(
                replayed["function"]["arguments"],
                "{\"room\": \"office\", \"cels"
            );
        }
        Dialect::Gemini => {
            assert_eq!(replayed["functionCall"]["name"], "thermostat.set");
            assert!(replayed["functionCall"]["args"]["invalid_json"].is_string());
        }
        _ => assert_eq!(replayed["type"], "function_call"),
    }
}

#[tokio::test]
async fn gemini_partial_args_stream() {
    check_stream(Dialect::Gemini, "checked_gemini.sse").await;
}

#[tokio::test]
async fn openai_chat_stream() {
    check_stream(
        Dialect::OpenAiChat { strict: true },
        "checked_openai_chat.sse",
    )
    .await;
}

#[tokio::test]
async fn openai_responses_stream() {
    check_stream(
        Dialect::OpenAiResponses { strict: true },
        "checked_openai_responses.sse",
    )
    .await;
}

#[tokio::test]
async fn anthropic_stream() {
    check_stream(
        Dialect::Anthropic { strict: false },
        "checked_anthropic.sse",
    )
    .await;
}

#[test]
fn refusals_come_as_early_as_the_schema_allows() {
    let def = SetThermostat.definition();
    let early = |pieces: &[&str]| -> usize {
        let mut args = ArgumentStream::new(def);
        for (i, piece) in pieces.iter().enumerate() {
            if args.push(piece).is_err() {
                return i;
            }
        }
        usize::MAX
    };
    // An unknown key, as its closing quote arrives.
    assert_eq!(early(&["{\"colour", "\"", ": 1}"]), 1);
    // A wrong type, once the value is whole.
    assert_eq!(early(&["{\"celsius\": \"tw", "enty\"", "}"]), 1);
    // A number past its maximum, once it ends.
    assert_eq!(
        early(&["{\"celsius\": 4", "5", ",", "\"room\": \"office\"}"]),
        2
    );
    // A string past its maximum length, before it ends.
    let long = "x".repeat(41);
    assert_eq!(early(&["{\"note\": \"", &long, "more\"}"]), 1);
    // Broken JSON.
    assert_eq!(early(&["{\"room\" ", "\"office\"}"]), 1);
    // A closed object missing a required key is the whole call's verdict at the end.
    let mut args = ArgumentStream::new(def);
    args.push("{\"room\": \"office\"}").unwrap();
    let err = args.finish().unwrap_err();
    assert_eq!(err.fields()[0].pointer, "/celsius");
    // The partial view, for a UI.
    let mut args = ArgumentStream::new(def);
    args.push("{\"room\": \"office\", \"note\": \"back at 6")
        .unwrap();
    assert_eq!(
        args.partial(),
        json!({"room": "office", "note": "back at 6"})
    );
    assert!(!args.is_complete());
}

#[test]
fn a_tool_without_parameters_streams_nothing() {
    /// Says hello. Read-only. Not for real conversations.
    #[tool(effect = "read")]
    fn say_hello() -> &'static str {
        "hello"
    }
    let args = ArgumentStream::new(SayHello.definition());
    assert_eq!(args.finish().unwrap(), json!({}));
}

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
struct Stop {
    /// The stop's name.
    #[schemars(length(min = 1, max = 20))]
    name: String,
    /// Minutes spent there.
    #[schemars(range(min = 0, max = 600))]
    minutes: u32,
}

/// Plans a trip. Writes a plan. Not for booking.
#[tool(effect = "write")]
fn plan_trip(
    /// The trip's title.
    #[arg(length(min = 1, max = 30))]
    title: String,
    /// The stops, in order.
    #[arg(length(max = 4))]
    stops: Vec<Stop>,
    /// The budget's share for food, from 0 to 1.
    #[arg(range(min = 0.0, max = 1.0))]
    food_share: Option<f64>,
    /// Whether the trip may change.
    flexible: bool,
) -> String {
    let _ = (stops, food_share, flexible);
    title
}

fn text_strategy(max: usize) -> impl Strategy<Value = String> {
    proptest::string::string_regex(&format!("[a-zA-Zé\"\\\\ 0-9\u{1F600}]{{1,{max}}}")).unwrap()
}

fn valid_document() -> impl Strategy<Value = Value> {
    let stop = (text_strategy(20), 0u32..=600)
        .prop_map(|(name, minutes)| json!({"name": name, "minutes": minutes}));
    (
        text_strategy(30),
        proptest::collection::vec(stop, 0..=4),
        proptest::option::of(0.0f64..=1.0),
        any::<bool>(),
    )
        .prop_map(|(title, stops, share, flexible)| {
            let mut doc = json!({"title": title, "stops": stops, "flexible": flexible});
            if let Some(share) = share {
                doc["food_share"] = json!(share);
            }
            doc
        })
}

/// A document a whole call refuses: a valid one with one thing wrong.
fn invalid_document() -> impl Strategy<Value = Value> {
    (valid_document(), 0usize..8).prop_map(|(mut doc, how)| {
        match how {
            0 => doc["colour"] = json!("red"),
            1 => doc["title"] = json!("t".repeat(31)),
            2 => doc["title"] = json!(12),
            3 => doc["stops"] = json!([{"name": "a", "minutes": 601}]),
            4 => doc["stops"] = json!([{"name": "a", "minutes": 1, "extra": true}]),
            5 => doc["food_share"] = json!(1.5),
            6 => doc["flexible"] = json!("yes"),
            _ => doc["stops"] = json!([{"name": "a", "minutes": 1}, {"name": "b", "minutes": 1}, {"name": "c", "minutes": 1}, {"name": "d", "minutes": 1}, {"name": "e", "minutes": 1}]),
        }
        doc
    })
}

/// `text` cut at the given places (char boundaries).
fn pieces(text: &str, cuts: &[usize]) -> Vec<String> {
    let mut at: Vec<usize> = cuts
        .iter()
        .map(|c| c % (text.len() + 1))
        .filter(|&c| text.is_char_boundary(c))
        .collect();
    at.push(0);
    at.push(text.len());
    at.sort_unstable();
    at.dedup();
    at.windows(2).map(|w| text[w[0]..w[1]].to_owned()).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// No prefix of a valid document is refused, in any cut; the end is the whole call's.
    #[test]
    fn a_valid_document_is_never_refused(doc in valid_document(), cuts in proptest::collection::vec(any::<usize>(), 0..12), pretty in any::<bool>()) {
        let text = if pretty { serde_json::to_string_pretty(&doc).unwrap() } else { doc.to_string() };
        let def = PlanTrip.definition();
        let mut args = ArgumentStream::new(def);
        for piece in pieces(&text, &cuts) {
            prop_assert!(args.push(&piece).is_ok(), "refused a prefix of {}: {:?}", text, args.push(""));
        }
        prop_assert!(args.is_complete());
        prop_assert_eq!(args.finish().unwrap(), def.canonical_arguments(text.as_str()).unwrap());
    }

    /// Every document the whole call refuses is refused streamed, with the whole call's
    /// words for the field at fault.
    #[test]
    fn an_invalid_document_is_refused_in_the_same_words(doc in invalid_document(), cuts in proptest::collection::vec(any::<usize>(), 0..12)) {
        let text = doc.to_string();
        let def = PlanTrip.definition();
        let whole = def.canonical_arguments(text.as_str());
        prop_assert!(whole.is_err(), "the mutation must be invalid: {}", text);
        let whole = whole.unwrap_err();
        let mut args = ArgumentStream::new(def);
        let mut streamed = None;
        for piece in pieces(&text, &cuts) {
            if let Err(err) = args.push(&piece) {
                streamed = Some(err);
                break;
            }
        }
        let streamed = match streamed {
            Some(err) => err,
            None => args.finish().unwrap_err(),
        };
        prop_assert_eq!(streamed.code(), whole.code());
        for field in streamed.fields() {
            prop_assert!(whole.fields().contains(field), "{:?} not in {:?}", field, whole.fields());
        }
    }

    /// Any prefix of a valid document that stops early is truncated, never run as if whole.
    #[test]
    fn a_cut_off_document_is_truncated(doc in valid_document(), cut in any::<usize>()) {
        let text = doc.to_string();
        let mut at = cut % text.len();
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        let def = PlanTrip.definition();
        let mut args = ArgumentStream::new(def);
        args.push(&text[..at]).unwrap();
        let err = args.finish().unwrap_err();
        prop_assert_eq!(err.code().as_str(), if at == 0 { "invalid_arguments" } else { "truncated_arguments" });
    }
}

/// Writes a long note. Writes a note. Not for short messages.
#[tool(effect = "write", stream_args)]
fn write_note(
    /// The note's text.
    #[arg(length(max = 20_000))]
    text: String,
) -> usize {
    text.len()
}

#[test]
fn stream_args_asks_anthropic_for_unbuffered_arguments() {
    let def = WriteNote.definition();
    assert!(def.streams_args());
    let anthropic = def.export(Dialect::Anthropic { strict: false }).unwrap();
    assert_eq!(anthropic["eager_input_streaming"], true);
    // Other providers have no such setting: nothing is added.
    let openai = def.export(Dialect::OpenAiChat { strict: true }).unwrap();
    assert!(openai.to_string().find("eager").is_none());
    assert!(!SetThermostat.definition().streams_args());
    assert!(
        SetThermostat
            .definition()
            .export(Dialect::Anthropic { strict: false })
            .unwrap()
            .get("eager_input_streaming")
            .is_none()
    );
}

#[test]
fn both_endings_of_a_streamed_call_name_the_tool_the_same_way() {
    // A call refused while it streams and one cut off name the tool alike: by its own name,
    // as the refusal of a whole call does (the call itself keeps the provider's spelling).
    let toolbox = Toolbox::new().with(SetThermostat);
    let mut stream = toolbox
        .provider(Dialect::OpenAiChat { strict: true })
        .call_stream();
    let chunk = |index: u32, id: &str, arguments: &str| {
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": index, "id": id, "type": "function",
            "function": {"name": "thermostat_set", "arguments": arguments}}]}}]})
    };
    let refused = stream
        .push(&chunk(0, "call_1", r#"{"room": "garage""#))
        .remove(0)
        .unwrap_err();
    assert!(
        stream
            .push(&chunk(1, "call_2", r#"{"room": "kitchen", "celsius": 2"#))
            .is_empty()
    );
    let cut = stream.finish().remove(0).unwrap_err();
    assert_eq!(refused.call.name, "thermostat_set");
    assert_eq!(cut.call.name, "thermostat_set");
    assert_eq!(cut.error.code().as_str(), "truncated_arguments");
    for err in [&refused.error, &cut.error] {
        assert!(
            err.message().contains("`thermostat.set`"),
            "{}",
            err.message()
        );
    }
}

/// An object of 70 properties: the first 64 are told apart by their place in the schema, the
/// rest by a hash, and a repeated or missing key is refused as the whole read refuses it, on
/// both sides of that line and for every size of piece.
#[test]
fn keys_past_the_first_64_properties_are_checked_like_the_first() {
    let properties: serde_json::Map<String, Value> = (0..70)
        .map(|i| (format!("p{i}"), json!({"type": "integer", "maximum": 100})))
        .collect();
    let def = toolsmith::ToolDefinition::new(
        "fill_form",
        "Fills a form. Writes the form. Not for reading it.",
        json!({"type": "object", "properties": properties, "required": ["p1", "p66"],
            "additionalProperties": false}),
    );
    let verdict = |text: &str, piece: usize| {
        let mut stream = ArgumentStream::new(&def);
        let mut early = None;
        for chunk in text.as_bytes().chunks(piece) {
            if let Err(err) = stream.push(std::str::from_utf8(chunk).unwrap()) {
                early = Some(err);
                break;
            }
        }
        let end = stream.finish();
        (early, end)
    };
    let whole = |text: &str| {
        def.canonical_arguments(text)
            .map(|_| ())
            .map_err(|e| e.fields().to_vec())
    };
    // Each text with when it is refused: never, while it streams (a repeated or unknown key,
    // a value past its maximum) or when it ends (a missing key).
    let (never, early, at_end) = (0, 1, 2);
    for (text, when) in [
        (r#"{"p1": 1, "p66": 2, "p0": 3, "p69": 4}"#, never),
        (r#"{"p1": 1, "p66": 2, "p1": 3}"#, early),
        (r#"{"p1": 1, "p66": 2, "p66": 3}"#, early),
        (r#"{"p66": 2, "p2": 3}"#, at_end),
        (r#"{"p1": 2, "p2": 3}"#, at_end),
        (r#"{"p1": 2, "p66": 3, "p70": 1}"#, early),
        (r#"{"p1": 2, "p66": 300}"#, early),
    ] {
        assert_eq!(whole(text).is_ok(), when == never, "{text}");
        for piece in [1, 3, 16, 64] {
            let (refused, end) = verdict(text, piece);
            let at = format!("{text} in pieces of {piece}");
            if when == never {
                assert!(refused.is_none() && end.is_ok(), "{at}: {refused:?}");
                continue;
            }
            assert_eq!(refused.is_some(), when == early, "{at}");
            let err = refused.unwrap_or_else(|| end.expect_err(&at));
            assert_eq!(err.fields(), whole(text).unwrap_err().as_slice(), "{at}");
        }
    }
}

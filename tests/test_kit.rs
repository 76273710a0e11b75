//! The test kit (`toolsmith::testing`):
//! - trajectory checks over the audit log: each order, argument matchers, call and turn
//!   budgets, a report naming the first difference, an agent's run, and the JUnit report;
//! - the schema-driven fake model: samples every BFCL function's validator accepts, and
//!   mutations it refuses, each at the place broken; the model in every dialect;
//! - cassettes: a run recorded and played back in every dialect, and a changed request
//!   refused with the place it differs.

use std::sync::Arc;

use serde_json::json;
use toolsmith::agent::{Agent, ScriptedModel};
use toolsmith::audit::{AuditRecord, MemorySink};
use toolsmith::testing::{Call, Difference, Matcher, Order, Trajectory, junit};
use toolsmith::{Dialect, ToolContext, Toolbox, tool};

/// Looks up a city's weather. Read-only. Not for forecasts.
#[tool(effect = "read")]
fn weather(
    /// The city.
    #[arg(length(max = 50))]
    city: String,
) -> String {
    format!("sunny in {city}")
}

/// Books a table. Writes data. Not for cancelling.
#[tool(effect = "write")]
fn book(
    /// The restaurant.
    #[arg(length(max = 50))]
    place: String,
    /// How many people.
    #[arg(range(min = 1, max = 20))]
    people: u32,
) -> String {
    format!("booked {place} for {people}")
}

/// Runs `calls` (tool, arguments) one after another and gives the audit log.
async fn log(calls: &[(&str, serde_json::Value)]) -> Vec<AuditRecord> {
    let audit = Arc::new(MemorySink::default());
    let toolbox = Toolbox::new()
        .with(Weather)
        .with(Book)
        .with_audit(audit.clone());
    for (name, arguments) in calls {
        toolbox
            .call(name, arguments.clone(), &ToolContext::new())
            .await;
    }
    audit.records()
}

fn oslo() -> Call {
    Call::tool("weather").with("/city", json!("Oslo"))
}

fn booking() -> Call {
    Call::tool("book")
        .with("/place", Matcher::Contains("Fjord".into()))
        .with("/people", Matcher::Present)
}

#[tokio::test]
async fn each_order_accepts_what_it_should_and_names_the_first_difference() {
    let records = log(&[
        ("weather", json!({"city": "Oslo"})),
        ("book", json!({"place": "Fjord Kitchen", "people": 2})),
    ])
    .await;
    assert_eq!(
        Trajectory::strict([oslo(), booking()]).check(&records),
        Ok(())
    );
    assert_eq!(
        Trajectory::strict([booking(), oslo()])
            .check(&records)
            .unwrap_err()
            .to_string(),
        "call 1: expected `book` with /place containing \"Fjord\", /people present, got `weather` with no /place, no /people"
    );
    assert_eq!(
        Trajectory::unordered([booking(), oslo()]).check(&records),
        Ok(())
    );
    assert_eq!(
        Trajectory::unordered([oslo()])
            .check(&records)
            .unwrap_err()
            .to_string(),
        "2 calls were made (`weather`, `book`); 1 were expected"
    );
    // Subset: every call made was expected.
    let third = Call::tool("weather").with("/city", json!("Bergen"));
    assert_eq!(
        Trajectory::subset([oslo(), booking(), third.clone()]).check(&records),
        Ok(())
    );
    assert_eq!(
        Trajectory::subset([oslo()])
            .check(&records)
            .unwrap_err()
            .to_string(),
        "call 2 (`book` with {\"place\":\"Fjord Kitchen\",\"people\":2}) was not expected"
    );
    // Superset: every expected call was made.
    assert_eq!(Trajectory::superset([booking()]).check(&records), Ok(()));
    assert_eq!(
        Trajectory::superset([booking(), third])
            .check(&records)
            .unwrap_err()
            .to_string(),
        "expected `weather` with /city = \"Bergen\", which was not made"
    );
    assert_eq!(
        Trajectory::new(Order::Superset, [oslo()])
            .max_calls(1)
            .check(&records)
            .unwrap_err()
            .to_string(),
        "2 calls were made; at most 1 were expected"
    );
}

#[tokio::test]
async fn overlapping_matchers_are_matched_one_to_one_not_greedily() {
    let records = log(&[
        ("weather", json!({"city": "Oslo"})),
        ("weather", json!({"city": "Bergen"})),
    ])
    .await;
    // A greedy pass would give the first record to the loose call and find nothing for
    // the exact one.
    let loose = Call::tool("weather").with("/city", Matcher::Present);
    let bergen = Call::tool("weather").with("/city", json!("Bergen"));
    let long = Call::tool("weather").with(
        "/city",
        Matcher::Satisfies(
            "longer than 4".into(),
            Arc::new(|v| v.as_str().is_some_and(|s| s.len() > 4)),
        ),
    );
    assert_eq!(
        Trajectory::unordered([loose.clone(), bergen]).check(&records),
        Ok(())
    );
    assert_eq!(Trajectory::unordered([long, loose]).check(&records), Ok(()));
}

#[tokio::test]
async fn an_agent_s_run_is_checked_from_its_audit_log() {
    let audit = Arc::new(MemorySink::default());
    let model = ScriptedModel::new([
        json!({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Oslo\"}"}}]}}]}),
        json!({"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Sunny."}}]}),
    ]);
    let agent = Agent::new(
        Toolbox::new()
            .with(Weather)
            .with(Book)
            .with_audit(audit.clone()),
        Dialect::OpenAiChat { strict: true },
        model,
    );
    let mut state = agent.start("Weather in Oslo?");
    agent.run(&mut state, &ToolContext::new()).await.unwrap();
    let checks = [
        (
            "looks up the weather",
            Trajectory::strict([oslo()])
                .max_calls(3)
                .check(&audit.records()),
        ),
        (
            "books a table",
            Trajectory::superset([booking()]).check(&audit.records()),
        ),
    ];
    assert!(checks[0].1.is_ok());
    let xml = junit("weather <agent>", &checks);
    assert!(
        xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"),
        "{xml}"
    );
    assert!(
        xml.contains("<testsuite name=\"weather &lt;agent&gt;\" tests=\"2\" failures=\"1\">"),
        "{xml}"
    );
    assert!(
        xml.contains("<testcase name=\"looks up the weather\"/>"),
        "{xml}"
    );
    assert!(
        xml.contains("<failure message=\"expected `book` with /place containing &quot;Fjord&quot;, /people present, which was not made\"/>"),
        "{xml}"
    );
    let _ = Difference::new("a check of your own");
}

// ---- the schema-driven fake model ----

#[path = "support/defined.rs"]
mod defined;

use std::collections::BTreeMap;

use serde_json::Value;
use toolsmith::agent::{ModelClient, Stop};
use toolsmith::testing::{Cassette, Expected, SchemaModel, mutations, sample};
use toolsmith::{ErrorCode, ToolDefinition};

fn bfcl_functions() -> Vec<Value> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/bfcl/functions.jsonl"
    );
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// Every function of the BFCL corpus (1,278 definitions as their authors wrote them): a
/// sample of its schema is accepted by its validator through the toolbox, and each mutation
/// is refused with `invalid_arguments` and a field error at the place broken.
#[tokio::test]
async fn bfcl_samples_are_all_accepted_and_every_mutation_refused_where_it_breaks() {
    let functions = bfcl_functions();
    assert_eq!(functions.len(), 1278);
    let (mut sampled, mut refused) = (0, 0);
    let mut unsatisfiable = Vec::new();
    let mut by_keyword: BTreeMap<&str, usize> = BTreeMap::new();
    let mut wrong = Vec::new();
    for f in &functions {
        let name = f["name"].as_str().unwrap();
        let schema = f["parameters"].clone();
        let definition =
            ToolDefinition::new(name.to_owned(), "A function.".to_owned(), schema.clone());
        let toolbox = Toolbox::new().with(defined::Defined(definition));
        let ctx = ToolContext::new();
        let Some(arguments) = sample(&schema) else {
            unsatisfiable.push(name);
            continue;
        };
        let outcome = toolbox.call(name, arguments.clone(), &ctx).await;
        match outcome.error() {
            None => sampled += 1,
            Some(err) => wrong.push(format!("{name}: {arguments} refused: {err}")),
        }
        for m in mutations(&schema) {
            let outcome = toolbox.call(name, m.arguments.clone(), &ctx).await;
            let hit = outcome.error().is_some_and(|err| {
                err.code() == ErrorCode::InvalidArguments
                    && err.fields().iter().any(|field| field.pointer == m.pointer)
            });
            if hit {
                refused += 1;
                *by_keyword.entry(m.keyword).or_default() += 1;
            } else {
                wrong.push(format!(
                    "{name}: {} (breaks {} at {}) got {}",
                    m.arguments,
                    m.keyword,
                    m.pointer,
                    outcome.to_json()
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} wrong, first: {:#?}",
        wrong.len(),
        &wrong[..wrong.len().min(10)]
    );
    println!(
        "samples accepted: {sampled}/{}; mutations refused: {refused}; {by_keyword:?}",
        functions.len()
    );
    // One schema accepts no value at all: `metrics` is an array whose `enum` lists only
    // strings. Its validator refuses every document, so there is nothing to sample.
    assert_eq!(unsatisfiable, ["extract_parameters_v1"]);
    let metrics = &functions
        .iter()
        .find(|f| f["name"] == "extract_parameters_v1")
        .unwrap()["parameters"]["properties"]["metrics"];
    assert_eq!(metrics["type"], "array");
    assert!(
        metrics["enum"]
            .as_array()
            .unwrap()
            .iter()
            .all(Value::is_string)
    );
    assert_eq!(sampled, 1277);
    assert_eq!(refused, 9645);
    for keyword in ["required", "type", "enum", "format", "maximum"] {
        assert!(
            by_keyword.contains_key(keyword),
            "{keyword}: {by_keyword:?}"
        );
    }
}

/// A kind of room.
#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema, Clone, Copy, Debug)]
#[serde(rename_all = "snake_case")]
enum Room {
    Single,
    Double,
    Suite,
}

/// A guest.
#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema, Clone, Debug)]
#[serde(deny_unknown_fields)]
struct Guest {
    /// The guest's name.
    #[schemars(length(min = 1, max = 40))]
    name: String,
    /// The guest's age.
    #[schemars(range(min = 0, max = 130))]
    age: u8,
}

/// Books a hotel room. Writes data. Not for cancelling a booking.
#[tool(effect = "write")]
fn book_room(
    /// The hotel's code, three capitals and a digit.
    #[arg(pattern = "^[A-Z]{3}[0-9]$")]
    hotel: String,
    /// The kind of room.
    room: Room,
    /// The nights, one to thirty.
    #[arg(range(min = 1, max = 30))]
    nights: u32,
    /// The guests.
    #[arg(length(min = 1, max = 4))]
    guests: Vec<Guest>,
    /// A note for the hotel.
    #[arg(length(max = 200))]
    note: Option<String>,
) -> String {
    format!(
        "{hotel}: {room:?} for {nights} nights, {} guests, {note:?}",
        guests.len()
    )
}

fn hotel_toolbox(audit: &Arc<MemorySink>) -> Toolbox {
    Toolbox::new()
        .with(Weather)
        .with(Book)
        .with(BookRoom)
        .with_audit(audit.clone())
}

const DIALECTS: [Dialect; 7] = [
    Dialect::OpenAiChat { strict: false },
    Dialect::OpenAiChat { strict: true },
    Dialect::OpenAiResponses { strict: false },
    Dialect::OpenAiResponses { strict: true },
    Dialect::Anthropic { strict: false },
    Dialect::Anthropic { strict: true },
    Dialect::Gemini,
];

/// In every dialect: the valid mode's calls all run, the mutation mode's are all refused
/// before any tool runs, and the model answers in text at the end.
#[tokio::test]
async fn the_schema_model_calls_every_tool_in_every_dialect() {
    for dialect in DIALECTS {
        let audit = Arc::new(MemorySink::default());
        let toolbox = hotel_toolbox(&audit);
        let model = SchemaModel::new(&toolbox);
        let agent = Agent::new(toolbox, dialect, model.clone());
        let mut state = agent.start("Do everything.");
        let stop = agent.run(&mut state, &ToolContext::new()).await.unwrap();
        assert_eq!(
            stop,
            Stop::Answered("Done: 3 calls made.".into()),
            "{dialect}"
        );
        model.check(&audit.records()).unwrap();
        let tools: Vec<String> = audit.records().iter().map(|r| r.tool.clone()).collect();
        assert_eq!(tools.len(), 3, "{dialect}");
        assert!(
            audit.records().iter().all(|r| r.status == "success"),
            "{dialect}: {:?}",
            audit.records()
        );

        let audit = Arc::new(MemorySink::default());
        let toolbox = hotel_toolbox(&audit);
        let model = SchemaModel::mutating(&toolbox);
        let agent = Agent::new(toolbox, dialect, model.clone());
        let mut state = agent.start("Do everything wrong.");
        let stop = agent.run(&mut state, &ToolContext::new()).await.unwrap();
        assert!(matches!(stop, Stop::Answered(_)), "{dialect}: {stop:?}");
        let calls = model.calls();
        assert!(calls.len() >= 20, "{dialect}: {}", calls.len());
        let mut broken: Vec<&str> = calls
            .iter()
            .map(|c| match c.expected {
                Expected::Refused { keyword, .. } => keyword,
                _ => panic!("a valid call in the mutation mode"),
            })
            .collect();
        broken.sort_unstable();
        broken.dedup();
        assert_eq!(
            broken,
            [
                "additionalProperties",
                "enum",
                "maxItems",
                "maxLength",
                "maximum",
                "minItems",
                "minLength",
                "minimum",
                "pattern",
                "required",
                "type"
            ],
            "{dialect}"
        );
        model.check(&audit.records()).unwrap();
        assert!(
            audit.records().iter().all(|r| r.attempts == 0),
            "{dialect}: a tool ran"
        );
        assert_eq!(audit.records().len(), calls.len());
    }
}

/// The model calls only what the request offers, and its check names a call that went
/// otherwise: here, mutations made for a strict toolbox, run against a looser one.
#[tokio::test]
async fn the_schema_model_calls_only_what_is_offered_and_reports_what_went_otherwise() {
    let audit = Arc::new(MemorySink::default());
    let toolbox = hotel_toolbox(&audit).with_enabled_when("book_room", |_: &ToolContext| false);
    let model = SchemaModel::new(&toolbox);
    let agent = Agent::new(toolbox, Dialect::OpenAiChat { strict: true }, model.clone());
    let mut state = agent.start("Do everything.");
    agent.run(&mut state, &ToolContext::new()).await.unwrap();
    let called: Vec<String> = model.calls().into_iter().map(|c| c.tool).collect();
    assert_eq!(called, ["weather", "book"]);

    /// Books a table. Writes data. Not for cancelling.
    #[tool(name = "book", effect = "write", allow(unbounded_string))]
    fn loose_book(
        /// The restaurant.
        place: String,
        /// How many people.
        people: u32,
    ) -> String {
        format!("booked {place} for {people}")
    }
    let strict = Toolbox::new().with(Book);
    let model = SchemaModel::mutating(&strict);
    let audit = Arc::new(MemorySink::default());
    let loose = Toolbox::new().with(LooseBook).with_audit(audit.clone());
    let agent = Agent::new(loose, Dialect::Anthropic { strict: false }, model.clone());
    let mut state = agent.start("Book.");
    agent.run(&mut state, &ToolContext::new()).await.unwrap();
    let report = model.check(&audit.records()).unwrap_err().to_string();
    assert!(
        report.contains("breaks `maximum` at \"/people\", but ended `success` with error `none`"),
        "{report}"
    );
    assert!(
        report.contains("breaks `maxLength` at \"/place\""),
        "{report}"
    );
    // With no log at all, every call is named as missing.
    let missing = model.check(&[]).unwrap_err().to_string();
    assert!(missing.contains("has no audit record"), "{missing}");
}

// ---- cassettes ----

fn temp_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "toolsmith-cassette-{}-{name}.jsonl",
        std::process::id()
    ))
}

/// In every dialect a run is recorded (the schema model as the real model) and replayed
/// with no model: the same answer, the same calls, every exchange played. A changed tool
/// description, one request too many and a damaged file each fail loudly.
#[tokio::test]
async fn cassettes_record_and_replay_every_dialect_and_refuse_a_changed_request() {
    for dialect in DIALECTS {
        let path = temp_path(dialect.name());
        let audit = Arc::new(MemorySink::default());
        let toolbox = hotel_toolbox(&audit);
        let real = SchemaModel::new(&toolbox);
        let cassette = Cassette::record(&path, real).unwrap();
        assert_eq!(cassette.model(), Some("toolsmith-schema-model"));
        let agent = Agent::new(toolbox, dialect, cassette);
        let mut state = agent.start("Do everything.");
        let recorded = agent.run(&mut state, &ToolContext::new()).await.unwrap();
        let calls = |audit: &MemorySink| {
            let mut calls: Vec<String> = audit
                .records()
                .iter()
                .map(|r| format!("{} {}", r.tool, r.arguments))
                .collect();
            calls.sort();
            calls
        };
        let recorded_calls = calls(&audit);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap().lines().count(),
            2,
            "{dialect}"
        );

        let audit = Arc::new(MemorySink::default());
        let cassette = Cassette::replay(&path).unwrap();
        assert_eq!(cassette.unplayed(), 2);
        let agent = Agent::new(hotel_toolbox(&audit), dialect, cassette.clone());
        let mut state = agent.start("Do everything.");
        let replayed = agent.run(&mut state, &ToolContext::new()).await.unwrap();
        assert_eq!(replayed, recorded, "{dialect}");
        assert_eq!(calls(&audit), recorded_calls, "{dialect}");
        assert_eq!(cassette.unplayed(), 0);
        assert_eq!(cassette.model(), Some("toolsmith-schema-model"));

        // The same tool with another description: the first request differs in its tools.
        /// Looks up a city's weather now. Read-only. Not for forecasts.
        #[tool(name = "weather", effect = "read")]
        fn weather_now(
            /// The city.
            #[arg(length(max = 50))]
            city: String,
        ) -> String {
            format!("sunny in {city}")
        }
        let changed = Toolbox::new().with(WeatherNow).with(Book).with(BookRoom);
        let agent = Agent::new(changed, dialect, Cassette::replay(&path).unwrap());
        let mut state = agent.start("Do everything.");
        let err = agent
            .run(&mut state, &ToolContext::new())
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("request 1 differs from the recorded one at /"),
            "{dialect}: {err}"
        );
        assert!(
            err.contains("Looks up a city's weather now"),
            "{dialect}: {err}"
        );
        if dialect == (Dialect::OpenAiChat { strict: false }) {
            // As docs/testing.md shows it.
            assert_eq!(
                err,
                "the model could not be asked: request 1 differs from the recorded one at \
                 /tools/0/function/description: recorded \"Looks up a city's weather. Read-only. \
                 Not for forecasts.\", now \"Looks up a city's weather now. Read-only. Not for \
                 forecasts.\"; record the cassette again if the change is meant"
            );
        }

        // A cassette that ends sooner than the run: the run asks once more than recorded.
        let short = temp_path(&format!("{}-short", dialect.name()));
        let first = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .next()
            .unwrap()
            .to_owned();
        std::fs::write(&short, first + "\n").unwrap();
        let agent = Agent::new(
            hotel_toolbox(&Arc::new(MemorySink::default())),
            dialect,
            Cassette::replay(&short).unwrap(),
        );
        let mut state = agent.start("Do everything.");
        let err = agent
            .run(&mut state, &ToolContext::new())
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("request 2 is past the end of the cassette (1 recorded)"),
            "{dialect}: {err}"
        );
        std::fs::remove_file(&short).unwrap();
        std::fs::remove_file(&path).unwrap();
    }
    let path = temp_path("damaged");
    std::fs::write(&path, "{\"dialect\": \"gemini\"}\n").unwrap();
    let err = Cassette::replay(&path).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("line 1 of the cassette is not an exchange"),
        "{err}"
    );
    std::fs::remove_file(&path).unwrap();
}

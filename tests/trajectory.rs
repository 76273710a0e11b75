//! Trajectory checks over the audit log (`toolsmith::testing`): each order, argument matchers,
//! a call budget, a report naming the first difference, an agent's run, and the JUnit report.

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

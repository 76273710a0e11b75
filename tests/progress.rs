//! A running call's progress and partial results reach the application (the agent loop's
//! events, a caller of `Toolbox::call` that asks for them), in order for each call under 64
//! calls at once, and never the model: no request to it holds any of them, byte for byte,
//! unless a tool opts in to show the model its last partial when its call ends without a
//! result (`#[tool(show_partial)]`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use toolsmith::agent::{Agent, AgentEvent, ScriptedModel};
use toolsmith::caller::Caller;
use toolsmith::tool::BoxFuture;
use toolsmith::{Dialect, ToolContext, Toolbox, tool};

/// Counts the rows of a table, reporting how far it got. Read-only. Not for writing.
#[tool(effect = "read")]
async fn count_rows(
    ctx: &ToolContext,
    /// The table.
    #[arg(length(max = 40))]
    table: String,
) -> u32 {
    for step in 1..=3_u32 {
        ctx.progress(
            f64::from(step),
            Some(3.0),
            Some(&format!("PROGRESS-{table}-{step}")),
        )
        .await;
        ctx.partial(&json!({"table": table, "PARTIAL_ROWS": step * 10}))
            .await;
        // Let the other calls run between the reports.
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    30
}

fn turn(n: usize) -> Value {
    let calls: Vec<Value> = (0..n)
        .map(|i| {
            json!({"id": format!("call_{i}"), "type": "function", "function": {"name": "count_rows",
                "arguments": json!({"table": format!("t{i}")}).to_string()}})
        })
        .collect();
    json!({"choices": [{"index": 0, "finish_reason": "tool_calls",
        "message": {"role": "assistant", "content": null, "tool_calls": calls}}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn progress_and_partials_of_64_calls_at_once_reach_the_events_in_order_and_never_the_model() {
    let events: Arc<Mutex<Vec<AgentEvent>>> = Arc::default();
    let seen = Arc::clone(&events);
    let model = ScriptedModel::new([
        turn(64),
        json!({"choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": "Counted."}}]}),
    ]);
    let agent = Agent::new(
        Toolbox::new().with(CountRows),
        Dialect::OpenAiChat { strict: true },
        model.clone(),
    )
    .with_events(move |event| seen.lock().unwrap().push(event.clone()));
    let mut state = agent.start("Count the rows of every table.");
    agent
        .run(&mut state, &ToolContext::new().with_run_id("run_progress"))
        .await
        .unwrap();
    let events = events.lock().unwrap();
    for i in 0..64 {
        let id = format!("call_{i}");
        let progress: Vec<(f64, String)> = events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::ToolProgress {
                    call_id,
                    progress,
                    message,
                    total,
                } if *call_id == id => {
                    assert_eq!(*total, Some(3.0));
                    Some((*progress, message.clone().unwrap_or_default()))
                }
                _ => None,
            })
            .collect();
        let expected: Vec<(f64, String)> = (1..=3)
            .map(|s| (f64::from(s), format!("PROGRESS-t{i}-{s}")))
            .collect();
        assert_eq!(progress, expected, "{id}: each report once, in order");
        let partials: Vec<&Value> = events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::ToolPartial { call_id, value } if *call_id == id => Some(value),
                _ => None,
            })
            .collect();
        let rows: Vec<u64> = partials
            .iter()
            .map(|v| v["PARTIAL_ROWS"].as_u64().unwrap())
            .collect();
        assert_eq!(rows, [10, 20, 30], "{id}");
        // Each call's reports come before its result.
        let last_report = events
            .iter()
            .rposition(|e| matches!(e, AgentEvent::ToolPartial { call_id, .. } if *call_id == id))
            .unwrap();
        let finished = events
            .iter()
            .position(|e| matches!(e, AgentEvent::ToolFinished { call, .. } if call.id.as_deref() == Some(id.as_str())))
            .unwrap();
        assert!(last_report < finished, "{id}");
    }
    // The model's second request holds the 64 results and nothing of the reports.
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let sent = requests[1].body.to_string();
    assert!(!sent.contains("PROGRESS-"), "progress reached the model");
    assert!(
        !sent.contains("PARTIAL_ROWS"),
        "a partial result reached the model"
    );
    assert_eq!(sent.matches("\"tool_call_id\"").count(), 64);
}

/// A caller that keeps what a call reports.
#[derive(Default)]
struct Kept(Mutex<Vec<String>>);

impl Caller for Kept {
    fn progress<'a>(
        &'a self,
        progress: f64,
        _total: Option<f64>,
        _message: Option<&'a str>,
    ) -> BoxFuture<'a, ()> {
        self.0.lock().unwrap().push(format!("progress {progress}"));
        Box::pin(std::future::ready(()))
    }

    fn partial<'a>(&'a self, value: &'a Value) -> BoxFuture<'a, ()> {
        self.0
            .lock()
            .unwrap()
            .push(format!("partial {}", value["PARTIAL_ROWS"]));
        Box::pin(std::future::ready(()))
    }
}

#[tokio::test]
async fn a_caller_of_toolbox_call_who_asks_gets_the_reports_and_the_result_has_none() {
    let kept = Arc::new(Kept::default());
    let ctx = ToolContext::new().with_caller(Arc::clone(&kept) as Arc<dyn Caller>);
    let out = Toolbox::new()
        .with(CountRows)
        .call("count_rows", json!({"table": "orders"}), &ctx)
        .await;
    assert_eq!(out.to_json(), r#"{"status":"success","data":30}"#);
    assert_eq!(
        *kept.0.lock().unwrap(),
        [
            "progress 1",
            "partial 10",
            "progress 2",
            "partial 20",
            "progress 3",
            "partial 30"
        ]
    );
}

/// Crawls a site page by page until it is stopped, handing over what it has so far.
/// Read-only. Not for writes.
#[tool(effect = "read", show_partial, timeout = "50ms", attempts = 1)]
async fn crawl(
    ctx: &ToolContext,
    /// The site.
    #[arg(length(max = 40))]
    site: String,
) -> u32 {
    for page in 1..=3_u32 {
        let note = if page == 3 {
            "found sk-proj-4f9a8b7c6d5e4f3a2b1c0d9e in /home/deploy/.env"
        } else {
            ""
        };
        ctx.partial(&json!({"site": site, "pages": page, "note": note}))
            .await;
    }
    // Stuck on the fourth page until the timeout.
    std::future::pending::<u32>().await
}

/// Crawls a site, for a tool that does not show its partial results. Read-only. Not for
/// writes.
#[tool(effect = "read", timeout = "50ms", attempts = 1)]
async fn quiet_crawl(
    ctx: &ToolContext,
    /// The site.
    #[arg(length(max = 40))]
    site: String,
) -> u32 {
    ctx.partial(&json!({"site": site, "pages": 1})).await;
    std::future::pending::<u32>().await
}

/// Only a tool that opts in shows the model what it had when its call ended without a
/// result: its last partial, redacted as its data would be. Any other tool's partials, and
/// those of a call that answered, never reach the model.
#[tokio::test(start_paused = true)]
async fn a_tool_that_shows_its_partial_gives_the_model_the_last_one_when_it_times_out() {
    let toolbox = Toolbox::new().with(Crawl).with(QuietCrawl).with(CountRows);
    let ctx = ToolContext::new();
    let out = toolbox
        .call("crawl", json!({"site": "example.org"}), &ctx)
        .await;
    let err = out.error().expect("the crawl timed out");
    assert_eq!(err.code(), toolsmith::ErrorCode::Timeout);
    let shown = err.partial_result().expect("its last partial");
    assert_eq!(shown["pages"], 3);
    let envelope = out.to_json();
    assert!(envelope.contains(r#""partial_result":{"#), "{envelope}");
    assert!(
        !envelope.contains("sk-proj"),
        "a secret reached the model: {envelope}"
    );
    assert!(
        !envelope.contains("/home/deploy"),
        "a path reached the model: {envelope}"
    );

    let out = toolbox
        .call("quiet_crawl", json!({"site": "example.org"}), &ctx)
        .await;
    assert_eq!(
        out.error().map(toolsmith::ToolError::code),
        Some(toolsmith::ErrorCode::Timeout)
    );
    assert!(!out.to_json().contains("partial"), "{}", out.to_json());

    // In an agent's run: the model reads the crawl's last partial in the call's result,
    // and nothing of the other calls' reports.
    let model = ScriptedModel::new([
        json!({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant",
            "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "crawl", "arguments": "{\"site\":\"a.org\"}"}},
                {"id": "c2", "type": "function", "function": {"name": "quiet_crawl", "arguments": "{\"site\":\"b.org\"}"}},
                {"id": "c3", "type": "function", "function": {"name": "count_rows", "arguments": "{\"table\":\"t\"}"}}]}}]}),
        json!({"choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": "Partly done."}}]}),
    ]);
    let agent = Agent::new(toolbox, Dialect::OpenAiChat { strict: true }, model.clone());
    let mut state = agent.start("Crawl and count.");
    agent.run(&mut state, &ctx).await.unwrap();
    let sent = model.requests()[1].body.to_string();
    assert_eq!(sent.matches("partial_result").count(), 1, "{sent}");
    assert!(sent.contains(r#"\"site\":\"a.org\""#), "{sent}");
    assert!(!sent.contains("b.org\\\",\\\"pages"), "{sent}");
    assert!(!sent.contains("PARTIAL_ROWS"), "{sent}");
}

/// Progress and partial results leave no trace in what the model is sent: the requests of
/// a run whose tool reports as it goes are byte for byte those of the same run whose tool
/// (the same name, description and schema) reports nothing.
#[tokio::test]
async fn the_model_s_requests_are_the_same_bytes_with_reports_or_without() {
    /// Counts the rows of a table, reporting how far it got. Read-only. Not for writing.
    #[tool(name = "count_rows", effect = "read")]
    async fn silent_count(
        /// The table.
        #[arg(length(max = 40))]
        table: String,
    ) -> u32 {
        let _ = table;
        30
    }
    let mut sent = Vec::new();
    for toolbox in [
        Toolbox::new().with(CountRows),
        Toolbox::new().with(SilentCount),
    ] {
        let model = ScriptedModel::new([
            turn(8),
            json!({"choices": [{"index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": "Counted."}}]}),
        ]);
        let agent = Agent::new(toolbox, Dialect::OpenAiChat { strict: true }, model.clone())
            .with_events(|_| {});
        let mut state = agent.start("Count the rows of every table.");
        agent.run(&mut state, &ToolContext::new()).await.unwrap();
        let requests: Vec<String> = model
            .requests()
            .iter()
            .map(|r| r.body.to_string())
            .collect();
        sent.push(requests);
    }
    assert_eq!(sent[0].len(), 2);
    assert_eq!(sent[0], sent[1]);
}

//! A model can call only what it was offered: the calls answering a request are judged
//! against that request (its step, the prepare step's and the conditions' answers in it,
//! renames, subsets and deferred tools not yet found), in this process and after a pause.

#[path = "support/replies.rs"]
mod replies;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use replies::{chat_calls, chat_said};
use serde_json::{Value, json};
use toolsmith::agent::{Agent, AgentEvent, RunStep, ScriptedModel, Stop};
use toolsmith::error::Refusal;
use toolsmith::policy::Approvals;
use toolsmith::provider::{ToolChoice, ToolRequest};
use toolsmith::toolset::{Prepared, Toolset};
use toolsmith::{Dialect, Effect, ToolContext, Toolbox, tool};

/// Runs of `set_priority`, by ticket: tests run at once, each on tickets of its own.
static SET: Mutex<Vec<u64>> = Mutex::new(Vec::new());

fn set_runs(id: u64) -> usize {
    SET.lock().unwrap().iter().filter(|&&i| i == id).count()
}

/// Reads a ticket. Read-only. Not for changing tickets.
#[tool(effect = "read")]
fn read_ticket(
    /// The ticket.
    #[arg(range(min = 1, max = 1000))]
    id: u64,
) -> String {
    format!("ticket {id}: printer on fire")
}

/// Sets a ticket's priority. Writes the ticket. Not for closing tickets.
#[tool(effect = "write")]
fn set_priority(
    /// The ticket.
    #[arg(range(min = 1, max = 1000))]
    id: u64,
    /// The new priority, 1 (highest) to 4.
    #[arg(range(min = 1, max = 4))]
    priority: u8,
) -> String {
    SET.lock().unwrap().push(id);
    format!("ticket {id} set to P{priority}")
}

/// Sets a ticket's priority once a person approves. Writes the ticket. Not for closing.
#[tool(effect = "write", requires_approval)]
fn escalate(
    /// The ticket.
    #[arg(range(min = 1, max = 1000))]
    id: u64,
) -> String {
    SET.lock().unwrap().push(id);
    format!("ticket {id} escalated")
}

const CHAT: Dialect = Dialect::OpenAiChat { strict: true };

/// The envelope each call of the run ended with, in order.
fn envelopes(events: &Mutex<Vec<AgentEvent>>) -> Vec<Value> {
    events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|event| match event {
            AgentEvent::ToolFinished { envelope, .. } => serde_json::from_str(envelope).ok(),
            _ => None,
        })
        .collect()
}

/// Runs `toolbox` over a model that calls `call` first and then answers; the envelopes of
/// the calls and the names of the tools sent in the first request.
async fn first_turn(
    toolbox: Toolbox,
    request: ToolRequest,
    call: (&str, Value),
) -> (Vec<Value>, Vec<String>) {
    let model = ScriptedModel::new([chat_calls(&[("call_1", call.0, call.1)]), chat_said("done")]);
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&events);
    let agent = Agent::new(toolbox, CHAT, model.clone())
        .with_request(request)
        .with_events(move |event| seen.lock().unwrap().push(event.clone()));
    let mut state = agent.start("Make ticket 1 urgent");
    let stop = agent
        .run(&mut state, &ToolContext::new().with_run_id("r"))
        .await
        .unwrap();
    assert_eq!(stop, Stop::Answered("done".into()));
    let sent = model.requests()[0].body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| {
                    t["function"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned()
                })
                .collect()
        })
        .unwrap_or_default();
    (envelopes(&events), sent)
}

fn refused_as_unknown(envelope: &Value) {
    assert_eq!(envelope["status"], "error", "{envelope}");
    assert_eq!(envelope["error"]["code"], "unknown_tool", "{envelope}");
    let message = envelope["error"]["message"].as_str().unwrap();
    // What it may call is listed; what it was not offered is not.
    let (_, listed) = message.split_once("the available tools are").unwrap();
    assert!(listed.contains("read_ticket"), "{message}");
    assert!(!listed.contains("set_priority"), "{message}");
}

/// The docs' "read first, writes from the second turn".
fn reads_first() -> impl Fn(&ToolContext, &mut Prepared<'_>) + Send + Sync + 'static {
    |ctx: &ToolContext, tools: &mut Prepared<'_>| {
        let turn = ctx.get::<RunStep>().map_or(0, |step| step.turn);
        if turn == 0 {
            tools.retain(|def| def.effect() == Some(Effect::Read));
        }
    }
}

#[tokio::test]
async fn a_tool_the_prepare_step_hid_from_the_request_is_refused() {
    let toolbox = Toolbox::new()
        .with(ReadTicket)
        .with(SetPriority)
        .with_prepare(reads_first());
    let (envelopes, sent) = first_turn(
        toolbox,
        ToolRequest::default(),
        ("set_priority", json!({"id": 101, "priority": 1})),
    )
    .await;
    assert_eq!(sent, ["read_ticket"]);
    refused_as_unknown(&envelopes[0]);
    assert_eq!(set_runs(101), 0, "a write hidden on turn 0 ran");
}

#[tokio::test]
async fn a_tool_the_prepare_step_offers_from_the_second_turn_runs_then() {
    let toolbox = Toolbox::new()
        .with(ReadTicket)
        .with(SetPriority)
        .with_prepare(reads_first());
    let model = ScriptedModel::new([
        chat_calls(&[("call_1", "read_ticket", json!({"id": 102}))]),
        chat_calls(&[("call_2", "set_priority", json!({"id": 102, "priority": 1}))]),
        chat_said("done"),
    ]);
    let agent = Agent::new(toolbox, CHAT, model.clone());
    let mut state = agent.start("Make ticket 102 urgent");
    let stop = agent
        .run(&mut state, &ToolContext::new().with_run_id("r"))
        .await
        .unwrap();
    assert_eq!(stop, Stop::Answered("done".into()));
    assert_eq!(set_runs(102), 1);
}

#[tokio::test]
async fn a_disabled_tool_is_refused() {
    struct Writer;
    let toolbox = Toolbox::new()
        .with(ReadTicket)
        .with(SetPriority)
        .with_enabled_when("set_priority", |ctx: &ToolContext| {
            ctx.get::<Writer>().is_some()
        });
    let (envelopes, sent) = first_turn(
        toolbox,
        ToolRequest::default(),
        ("set_priority", json!({"id": 103, "priority": 1})),
    )
    .await;
    assert_eq!(sent, ["read_ticket"]);
    refused_as_unknown(&envelopes[0]);
    assert_eq!(set_runs(103), 0);
}

#[tokio::test]
async fn a_renamed_tool_is_refused_under_its_own_name() {
    let set = Toolset::new("desk")
        .with(ReadTicket)
        .with(SetPriority)
        .renamed("set_priority", "desk_set_priority")
        .unwrap();
    let toolbox = Toolbox::new().with_toolset(set);
    let (envelopes, sent) = first_turn(
        toolbox.clone(),
        ToolRequest::default(),
        ("set_priority", json!({"id": 104, "priority": 1})),
    )
    .await;
    assert_eq!(sent, ["read_ticket", "desk_set_priority"]);
    assert_eq!(envelopes[0]["error"]["code"], "unknown_tool");
    assert_eq!(set_runs(104), 0);
    // Its shown name works.
    let (envelopes, _) = first_turn(
        toolbox,
        ToolRequest::default(),
        ("desk_set_priority", json!({"id": 104, "priority": 1})),
    )
    .await;
    assert_eq!(envelopes[0]["status"], "success", "{}", envelopes[0]);
    assert_eq!(set_runs(104), 1);
}

#[tokio::test]
async fn a_tool_outside_the_requested_subset_is_refused() {
    let toolbox = Toolbox::new().with(ReadTicket).with(SetPriority);
    let only_reads = ToolRequest {
        choice: ToolChoice::Only {
            tools: vec!["read_ticket".into()],
            require: false,
        },
        ..ToolRequest::default()
    };
    let (envelopes, sent) = first_turn(
        toolbox,
        only_reads,
        ("set_priority", json!({"id": 105, "priority": 1})),
    )
    .await;
    // OpenAI filters a subset itself: both tools are sent, one may be called.
    assert_eq!(sent, ["read_ticket", "set_priority"]);
    refused_as_unknown(&envelopes[0]);
    assert_eq!(set_runs(105), 0);
}

#[tokio::test]
async fn a_deferred_tool_is_refused_until_the_search_finds_it() {
    let toolbox = Toolbox::new().with(ReadTicket).with(SetPriority);
    let deferred = ToolRequest {
        defer: vec!["set_priority".into()],
        ..ToolRequest::default()
    };
    let (envelopes, sent) = first_turn(
        toolbox.clone(),
        deferred.clone(),
        ("set_priority", json!({"id": 106, "priority": 1})),
    )
    .await;
    assert_eq!(
        sent,
        ["read_ticket", toolsmith::provider::LOCAL_SEARCH_TOOL]
    );
    assert_eq!(envelopes[0]["error"]["code"], "unknown_tool");
    assert_eq!(set_runs(106), 0);

    // Found by the search, it is sent and may be called.
    let model = ScriptedModel::new([
        chat_calls(&[(
            "call_1",
            toolsmith::provider::LOCAL_SEARCH_TOOL,
            json!({"query": "priority"}),
        )]),
        chat_calls(&[("call_2", "set_priority", json!({"id": 106, "priority": 1}))]),
        chat_said("done"),
    ]);
    let agent = Agent::new(toolbox, CHAT, model.clone()).with_request(deferred);
    let mut state = agent.start("Make ticket 106 urgent");
    let stop = agent
        .run(&mut state, &ToolContext::new().with_run_id("r"))
        .await
        .unwrap();
    assert_eq!(stop, Stop::Answered("done".into()));
    assert_eq!(set_runs(106), 1);
}

#[tokio::test]
async fn a_paused_call_is_judged_by_the_request_it_answers_after_a_resume() {
    // `escalate` is offered on the first turn only: a call of it, approved later, answers the
    // first request and runs; judged by the run's next turn it would be refused.
    let approvals = Approvals::new();
    let hidden_after_first = AtomicUsize::new(0);
    let hidden = Arc::new(hidden_after_first);
    let counter = Arc::clone(&hidden);
    let toolbox = Toolbox::new()
        .with(ReadTicket)
        .with(Escalate)
        .with_approver(approvals.clone())
        .with_prepare(move |ctx: &ToolContext, tools: &mut Prepared<'_>| {
            if ctx.get::<RunStep>().is_some_and(|step| step.turn > 0) {
                counter.fetch_add(1, Ordering::Relaxed);
                tools.hide("escalate");
            }
        });
    let model = ScriptedModel::new([
        chat_calls(&[("call_1", "escalate", json!({"id": 107}))]),
        chat_said("escalated"),
    ]);
    let agent = Agent::new(toolbox, CHAT, model);
    let ctx = ToolContext::new()
        .with_principal("ada")
        .with_run_id("r-107");
    let mut state = agent.start("Escalate ticket 107");
    let Stop::Paused(pending) = agent.run(&mut state, &ctx).await.unwrap() else {
        panic!("expected a pause");
    };
    assert_eq!(pending[0].tool, "escalate");
    // Stored and read back, as a run resumed in another process is.
    let stored = serde_json::to_string(&state).unwrap();
    let mut state = serde_json::from_str(&stored).unwrap();
    agent.approve(&mut state, &pending[0].path).unwrap();
    let stop = agent.run(&mut state, &ctx).await.unwrap();
    assert_eq!(stop, Stop::Answered("escalated".into()));
    assert_eq!(set_runs(107), 1);
    // The second request was prepared with its own step: `escalate` hidden there.
    assert!(hidden.load(Ordering::Relaxed) > 0);
}

#[tokio::test]
async fn a_provider_view_answering_a_request_refuses_what_it_did_not_offer() {
    let toolbox = Toolbox::new()
        .with(ReadTicket)
        .with(SetPriority)
        .with_prepare(reads_first());
    let provider = toolbox.provider(CHAT);
    let turn0 = ToolContext::new().with_extension(RunStep::new(0, 0));
    let block = provider
        .request_for(&ToolRequest::default(), &turn0)
        .await
        .unwrap();
    assert_eq!(block.offer().names().collect::<Vec<_>>(), ["read_ticket"]);
    let response = chat_calls(&[("call_1", "set_priority", json!({"id": 108, "priority": 1}))]);
    // Judged with a later step, the hidden write would run; answering the request, it does not.
    let later = ToolContext::new().with_extension(RunStep::new(1, 1));
    let turn = provider
        .answering(block.offer())
        .respond_to(&response, &later)
        .await
        .unwrap();
    let err = turn.outcomes[0].error().unwrap();
    assert_eq!(err.refusal(), Some(Refusal::NotOffered));
    assert_eq!(set_runs(108), 0);
    // Streamed, a call outside the offer is not checked against the hidden tool's schema.
    let mut stream = provider.answering(block.offer()).call_stream();
    let chunk = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_2", "type": "function",
        "function": {"name": "set_priority", "arguments": "{\"id\": 5000"}}]}}]});
    assert!(stream.push(&chunk).is_empty());
}

#[tokio::test]
async fn the_door_says_why_a_call_was_turned_away() {
    struct Writer;
    let toolbox = Toolbox::new()
        .with(ReadTicket)
        .with(SetPriority)
        .with(Escalate)
        .with_enabled_when("escalate", |ctx: &ToolContext| {
            ctx.get::<Writer>().is_some()
        })
        .with_prepare(reads_first());
    let ctx = ToolContext::new().with_extension(RunStep::new(0, 0));
    let door = |name: &'static str| {
        let toolbox = &toolbox;
        let ctx = &ctx;
        async move {
            toolbox
                .admit(name, toolsmith::Spelling::Registered, ctx, None)
                .await
                .map(|admitted| admitted.definition().name().to_owned())
                .map_err(|err| err.refusal())
        }
    };
    assert_eq!(door("read_ticket").await, Ok("read_ticket".to_owned()));
    assert_eq!(door("nope").await, Err(Some(Refusal::Unknown)));
    assert_eq!(door("escalate").await, Err(Some(Refusal::Disabled)));
    assert_eq!(door("set_priority").await, Err(Some(Refusal::Hidden)));
    // A tool's own `unknown_tool` error is its answer, not a refusal.
    let own = toolsmith::ToolError::unknown_tool("no such customer");
    assert_eq!(own.refusal(), None);
}

#[tokio::test]
async fn an_admitted_call_knows_its_tool_and_the_view_it_was_offered_under() {
    let set = Toolset::new("desk")
        .with(SetPriority)
        .renamed("set_priority", "desk_set_priority")
        .unwrap();
    let toolbox = Toolbox::new().with_toolset(set);
    let ctx = ToolContext::new().with_run_id("r-view");
    let admitted = toolbox
        .admit(
            "desk_set_priority",
            toolsmith::Spelling::Provider(CHAT),
            &ctx,
            None,
        )
        .await
        .unwrap();
    assert_eq!(admitted.definition().name(), "set_priority");
    assert_eq!(admitted.view().name(), "desk_set_priority");
    let out = admitted.call(json!({"id": 109, "priority": 2}), &ctx).await;
    assert!(out.is_success(), "{}", out.to_json());
    assert_eq!(set_runs(109), 1);
    // A definition is a value: a copy says the same.
    let copy = admitted.definition().clone();
    assert_eq!(copy.name(), "set_priority");
    assert_eq!(copy.input_schema(), admitted.definition().input_schema());
    // Registered names are the application's: under the registered spelling the own name is
    // the tool, and the shown name is no tool.
    let own = toolbox
        .admit("set_priority", toolsmith::Spelling::Registered, &ctx, None)
        .await;
    assert!(own.is_ok());
    let shown = toolbox
        .admit(
            "desk_set_priority",
            toolsmith::Spelling::Registered,
            &ctx,
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(shown.refusal(), Some(Refusal::Unknown));
}

#[tokio::test]
async fn a_busy_toolbox_turns_a_call_away_and_takes_it_once_a_place_is_free() {
    let toolbox = Toolbox::new()
        .with(ReadTicket)
        .with_defaults(toolsmith::policy::Defaults {
            max_in_flight: Some(1),
            ..toolsmith::policy::Defaults::default()
        });
    let ctx = ToolContext::new().with_trace_id("tr-busy");
    let held = toolbox
        .admit("read_ticket", toolsmith::Spelling::Registered, &ctx, None)
        .await
        .unwrap();
    // The one place is held: the door turns the next call away, busy, on every route.
    let refused = toolbox
        .admit("read_ticket", toolsmith::Spelling::Registered, &ctx, None)
        .await
        .unwrap_err();
    assert_eq!(refused.refusal(), Some(Refusal::Busy));
    assert_eq!(refused.code().as_str(), "rate_limited");
    assert!(refused.is_retryable());
    assert_eq!(refused.retry_after_ms(), Some(1000));
    let out = toolbox.call("read_ticket", json!({"id": 1}), &ctx).await;
    let err = out.error().unwrap();
    assert_eq!(err.refusal(), Some(Refusal::Busy));
    assert_eq!(err.trace_id(), Some("tr-busy"));
    // A clone shares the bound: it is the same toolbox.
    let clone = toolbox.clone();
    let out = clone
        .provider(CHAT)
        .run(
            &toolsmith::ToolCall {
                id: Some("c1".into()),
                name: "read_ticket".into(),
                arguments: json!({"id": 1}),
            },
            &ctx,
        )
        .await;
    assert_eq!(out.error().unwrap().refusal(), Some(Refusal::Busy));
    // An unknown name is still unknown: the door asks about the tool before its place.
    let out = toolbox.call("nope", json!({}), &ctx).await;
    assert_eq!(out.error().unwrap().refusal(), Some(Refusal::Unknown));
    // The place held runs its call, and frees it when dropped.
    assert!(held.call(json!({"id": 2}), &ctx).await.is_success());
    drop(held);
    let out = toolbox.call("read_ticket", json!({"id": 3}), &ctx).await;
    assert!(out.is_success(), "{}", out.to_json());
    // A call that ended gave its place back.
    let out = toolbox.call("read_ticket", json!({"id": 4}), &ctx).await;
    assert!(out.is_success(), "{}", out.to_json());
}

/// Closes a ticket. Writes the ticket. Not for reopening tickets.
#[tool(effect = "write", scopes = ["tickets:write"])]
fn close_ticket(
    /// The ticket.
    #[arg(range(min = 1, max = 1000))]
    id: u64,
) -> String {
    format!("closed {id}")
}

#[tokio::test]
async fn a_grant_without_a_tools_scopes_is_turned_away_and_offered_nothing_it_lacks() {
    let toolbox = Toolbox::new().with(ReadTicket).with(CloseTicket);
    assert_eq!(
        toolbox.get("close_ticket").unwrap().definition().scopes(),
        ["tickets:write"]
    );
    let reader = ToolContext::new()
        .with_grant(toolsmith::Grant::new("ada").with_scopes(["tickets:read"]))
        .with_trace_id("tr-scope");
    assert_eq!(reader.principal(), Some("ada"));
    // Not offered, and refused on every route, naming the scope to ask for.
    let offered: Vec<&str> = toolbox
        .definitions_for(&reader)
        .await
        .iter()
        .map(|d| d.name())
        .collect();
    assert_eq!(offered, ["read_ticket"]);
    let out = toolbox
        .call("close_ticket", json!({"id": 5}), &reader)
        .await;
    let err = out.error().unwrap();
    assert_eq!(err.refusal(), Some(Refusal::Unauthorized));
    assert_eq!(err.code().as_str(), "permission_denied");
    assert!(
        err.message().contains("`tickets:write`"),
        "{}",
        err.message()
    );
    assert_eq!(err.trace_id(), Some("tr-scope"));
    let call = toolsmith::ToolCall {
        id: Some("c9".into()),
        name: "close_ticket".into(),
        arguments: json!({"id": 5}),
    };
    let out = toolbox.provider(CHAT).run(&call, &reader).await;
    assert_eq!(out.error().unwrap().refusal(), Some(Refusal::Unauthorized));
    // A tool that needs no scope runs for any grant.
    assert!(
        toolbox
            .call("read_ticket", json!({"id": 5}), &reader)
            .await
            .is_success()
    );
    // A grant with the scope, and a call from the application's own code (no grant), run it.
    let writer = ToolContext::new()
        .with_grant(toolsmith::Grant::new("bo").with_scopes(["tickets:read", "tickets:write"]));
    assert!(
        toolbox
            .call("close_ticket", json!({"id": 5}), &writer)
            .await
            .is_success()
    );
    assert!(
        toolbox
            .call("close_ticket", json!({"id": 6}), &ToolContext::new())
            .await
            .is_success()
    );
}

#[tokio::test]
async fn a_write_turned_away_busy_keeps_no_key_and_runs_once_when_called_again() {
    let toolbox = Toolbox::new()
        .with(SetPriority)
        .with_defaults(toolsmith::policy::Defaults {
            max_in_flight: Some(1),
            ..toolsmith::policy::Defaults::default()
        });
    let ctx = ToolContext::new().with_run_id("r-busy-write");
    let held = toolbox
        .admit("set_priority", toolsmith::Spelling::Registered, &ctx, None)
        .await
        .unwrap();
    let call = json!({"id": 150, "priority": 2});
    let out = toolbox.call("set_priority", call.clone(), &ctx).await;
    assert_eq!(out.error().unwrap().refusal(), Some(Refusal::Busy));
    assert_eq!(set_runs(150), 0);
    drop(held);
    // The same write in the same run, once a place is free: it runs (nothing was kept for
    // the refused call to replay), and a retry of it replays.
    let out = toolbox.call("set_priority", call.clone(), &ctx).await;
    assert!(out.is_success(), "{}", out.to_json());
    assert!(!out.to_json().contains("\"replayed\""), "{}", out.to_json());
    let again = toolbox.call("set_priority", call, &ctx).await;
    assert!(
        again.to_json().contains("\"replayed\":true"),
        "{}",
        again.to_json()
    );
    assert_eq!(set_runs(150), 1);
}

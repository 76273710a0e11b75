//! What a person approved is what runs, wherever a run resumes; a stored run cannot be
//! altered or taken over; a delegated agent spends from its parent's limits.

use std::sync::Mutex;

use serde_json::{Value, json};
use toolsmith::agent::{
    Agent, AgentError, AgentTool, Limit, Limits, RunState, ScriptedModel, Stop,
};
use toolsmith::policy::{Approvals, Defaults, Guard, GuardDecision, GuardRequest, Repair};
use toolsmith::{Dialect, ToolContext, ToolError, Toolbox, tool};

/// Each deletion, as the path deleted: tests run at once, each on paths of its own.
static DELETED: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn deleted(path: &str) -> usize {
    DELETED
        .lock()
        .unwrap()
        .iter()
        .filter(|p| *p == path)
        .count()
}

/// Deletes a file. Destructive: it cannot be undone. Not for moving files.
#[tool(effect = "destructive", requires_approval)]
fn delete_file(
    /// The file's path.
    #[arg(length(max = 200))]
    path: String,
) -> String {
    DELETED.lock().unwrap().push(path.clone());
    format!("deleted {path}")
}

/// Looks a file up. Read-only. Not for changing files.
#[tool(effect = "read")]
fn look_up(
    /// The file's path.
    #[arg(length(max = 200))]
    path: String,
) -> String {
    format!("{path}: 3 KiB")
}

const ANTHROPIC: Dialect = Dialect::Anthropic { strict: false };

fn tool_use(calls: &[(&str, &str, Value)], tokens: u64) -> Value {
    let content: Vec<Value> = calls
        .iter()
        .map(
            |(id, name, input)| json!({"type": "tool_use", "id": id, "name": name, "input": input}),
        )
        .collect();
    json!({"role": "assistant", "content": content, "stop_reason": "tool_use",
           "usage": {"input_tokens": tokens, "output_tokens": 0}})
}

fn said(text: &str) -> Value {
    json!({"role": "assistant", "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
           "usage": {"input_tokens": 10, "output_tokens": 1}})
}

/// A toolbox whose deletions wait for a person, sealed with `key` when given.
fn toolbox(approvals: &Approvals, defaults: Defaults, key: Option<&str>) -> Toolbox {
    let toolbox = Toolbox::new()
        .with(DeleteFile)
        .with(LookUp)
        .with_approver(approvals.clone())
        .with_defaults(defaults);
    match key {
        Some(key) => toolbox.with_state(toolsmith::state::State::memory().with_key(key)),
        None => toolbox,
    }
}

const KEY: &str = "the fleet's run-sealing secret, 32 bytes or more";

/// A run paused on one deletion (the model's call `input`), and its agent.
async fn paused(
    input: Value,
    defaults: Defaults,
    ctx: &ToolContext,
) -> (
    Agent,
    RunState,
    Vec<toolsmith::agent::PendingCall>,
    Approvals,
) {
    let responses = vec![
        tool_use(&[("toolu_1", "delete_file", input)], 10),
        said("Deleted."),
        said("Deleted."),
    ];
    paused_with(ANTHROPIC, responses, defaults, ctx).await
}

async fn paused_with(
    dialect: Dialect,
    responses: Vec<Value>,
    defaults: Defaults,
    ctx: &ToolContext,
) -> (
    Agent,
    RunState,
    Vec<toolsmith::agent::PendingCall>,
    Approvals,
) {
    let approvals = Approvals::new();
    let model = ScriptedModel::new(responses);
    let agent = Agent::new(toolbox(&approvals, defaults, Some(KEY)), dialect, model);
    let mut state = agent.start("Delete the report");
    let Stop::Paused(pending) = agent.run(&mut state, ctx).await.unwrap() else {
        panic!("expected a pause");
    };
    (agent, state, pending, approvals)
}

#[tokio::test]
async fn a_repaired_call_is_approved_as_it_will_run_and_runs_once() {
    let ctx = ToolContext::new().with_principal("ada");
    let defaults = Defaults {
        repair: Some(Repair::lossless()),
        ..Defaults::default()
    };
    // The model's arguments, as OpenAI sends them (a JSON string), with a trailing comma.
    let call = json!({"choices": [{"index": 0, "finish_reason": "tool_calls",
        "message": {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1",
        "type": "function", "function": {"name": "delete_file",
        "arguments": "{\"path\": \"/srv/repaired.pdf\",}"}}]}}]});
    let answer = json!({"choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": "Deleted."}}]});
    let dialect = Dialect::OpenAiChat { strict: false };
    let (agent, mut state, pending, _) =
        paused_with(dialect, vec![call, answer], defaults, &ctx).await;
    assert_eq!(pending[0].arguments, json!({"path": "/srv/repaired.pdf"}));
    assert_eq!(pending[0].repairs, ["a trailing comma was removed"]);
    assert!(pending[0].arguments_hash.starts_with("sha256:"));
    agent.approve(&mut state, &pending[0].path).unwrap();
    let stop = agent.run(&mut state, &ctx).await.unwrap();
    assert_eq!(stop, Stop::Answered("Deleted.".into()));
    assert_eq!(deleted("/srv/repaired.pdf"), 1);
}

#[tokio::test]
async fn a_rewritten_call_is_approved_as_it_will_run_and_runs_once() {
    let ctx = ToolContext::new().with_principal("ada");
    // The docs' lowercasing guard.
    let guard = Guard::new(|request: &GuardRequest<'_>| {
        let path = request.arguments["path"].as_str().unwrap_or_default();
        GuardDecision::Rewrite(json!({"path": path.to_lowercase()}))
    });
    let defaults = Defaults {
        guards: vec![guard],
        ..Defaults::default()
    };
    let (agent, mut state, pending, _) =
        paused(json!({"path": "/SRV/Rewritten.PDF"}), defaults, &ctx).await;
    assert_eq!(pending[0].arguments, json!({"path": "/srv/rewritten.pdf"}));
    assert_eq!(pending[0].repairs, ["an input guard rewrote the arguments"]);
    agent.approve(&mut state, &pending[0].path).unwrap();
    let stop = agent.run(&mut state, &ctx).await.unwrap();
    assert_eq!(stop, Stop::Answered("Deleted.".into()));
    assert_eq!(deleted("/srv/rewritten.pdf"), 1);
    assert_eq!(deleted("/SRV/Rewritten.PDF"), 0);
}

#[tokio::test]
async fn guards_still_run_when_repair_is_on() {
    let guard = Guard::new(|request: &GuardRequest<'_>| {
        if request.arguments["path"]
            .as_str()
            .is_some_and(|p| p.starts_with("/etc"))
        {
            return GuardDecision::Refuse(ToolError::permission_denied(
                "System files cannot be deleted from a conversation.",
            ));
        }
        GuardDecision::Allow
    });
    let approvals = Approvals::new();
    let toolbox = toolbox(
        &approvals,
        Defaults {
            repair: Some(Repair::lossless()),
            guards: vec![guard],
            ..Defaults::default()
        },
        None,
    );
    let ctx = ToolContext::new();
    for text in [
        r#"{"path": "/etc/guarded"}"#,
        r#"{"path": "/etc/guarded",}"#,
    ] {
        let out = toolbox.call("delete_file", text, &ctx).await;
        assert_eq!(
            out.error().map(|e| e.code().as_str()),
            Some("permission_denied"),
            "{text}"
        );
    }
}

#[tokio::test]
async fn an_edited_state_is_refused() {
    let ctx = ToolContext::new().with_principal("ada");
    let (agent, mut state, pending, _) = paused(
        json!({"path": "/srv/report.pdf"}),
        Defaults::default(),
        &ctx,
    )
    .await;
    agent.approve(&mut state, &pending[0].path).unwrap();
    let stored = serde_json::to_string(&state).unwrap();
    // The approved path, changed in the stored JSON.
    let edited = stored.replace("/srv/report.pdf", "/etc/passwd");
    assert_ne!(edited, stored);
    let mut tampered: RunState = serde_json::from_str(&edited).unwrap();
    let err = agent.run(&mut tampered, &ctx).await.unwrap_err();
    assert!(matches!(err, AgentError::Sealed(_)), "{err}");
    assert!(err.to_string().contains("State::with_key"), "{err}");
    // A seal removed.
    let mut value: Value = serde_json::from_str(&stored).unwrap();
    value.as_object_mut().unwrap().remove("seal");
    let mut unsealed: RunState = serde_json::from_value(value).unwrap();
    assert!(matches!(
        agent.run(&mut unsealed, &ctx).await,
        Err(AgentError::Sealed(_))
    ));
    assert_eq!(deleted("/etc/passwd"), 0);
    assert_eq!(deleted("/srv/report.pdf"), 0);
    // The state as sealed runs.
    let mut state: RunState = serde_json::from_str(&stored).unwrap();
    assert_eq!(
        agent.run(&mut state, &ctx).await.unwrap(),
        Stop::Answered("Deleted.".into())
    );
    assert_eq!(deleted("/srv/report.pdf"), 1);
}

#[tokio::test]
async fn a_decision_written_into_the_state_is_refused() {
    let ctx = ToolContext::new().with_principal("ada");
    let (agent, state, pending, _) =
        paused(json!({"path": "/srv/typed.pdf"}), Defaults::default(), &ctx).await;
    let mut value = serde_json::to_value(&state).unwrap();
    value["awaiting"]["decisions"] = json!([{"call_id": pending[0].path[0], "denied": null}]);
    let mut typed: RunState = serde_json::from_value(value).unwrap();
    assert!(matches!(
        agent.run(&mut typed, &ctx).await,
        Err(AgentError::Sealed(_))
    ));
    // Nor can the API be used on it to launder the edit.
    assert!(matches!(
        agent.approve(&mut typed, &pending[0].path),
        Err(AgentError::Sealed(_))
    ));
    assert_eq!(deleted("/srv/typed.pdf"), 0);
}

#[tokio::test]
async fn another_principal_cannot_resume_a_run() {
    let ctx = ToolContext::new().with_principal("ada");
    let (agent, mut state, pending, _) =
        paused(json!({"path": "/srv/owned.pdf"}), Defaults::default(), &ctx).await;
    assert_eq!(state.principal(), Some("ada"));
    assert!(state.run_id().is_some_and(|id| id.starts_with("run_")));
    agent.approve(&mut state, &pending[0].path).unwrap();
    let mallory = ToolContext::new().with_principal("mallory");
    let err = agent.run(&mut state, &mallory).await.unwrap_err();
    assert!(matches!(err, AgentError::NotOwner(_)), "{err}");
    let anonymous = ToolContext::new();
    assert!(matches!(
        agent.run(&mut state, &anonymous).await,
        Err(AgentError::NotOwner(_))
    ));
    let other_run = ToolContext::new()
        .with_principal("ada")
        .with_run_id("r-other");
    assert!(matches!(
        agent.run(&mut state, &other_run).await,
        Err(AgentError::NotOwner(_))
    ));
    assert_eq!(deleted("/srv/owned.pdf"), 0);
    assert!(agent.run(&mut state, &ctx).await.is_ok());
    assert_eq!(deleted("/srv/owned.pdf"), 1);
}

#[tokio::test]
async fn a_state_resumed_twice_runs_an_approved_write_once() {
    let ctx = ToolContext::new().with_principal("ada");
    let (agent, mut state, pending, _) =
        paused(json!({"path": "/srv/twice.pdf"}), Defaults::default(), &ctx).await;
    agent.approve(&mut state, &pending[0].path).unwrap();
    let stored = serde_json::to_string(&state).unwrap();
    for _ in 0..2 {
        let mut copy: RunState = serde_json::from_str(&stored).unwrap();
        let _ = agent.run(&mut copy, &ctx).await.unwrap();
    }
    assert_eq!(deleted("/srv/twice.pdf"), 1);
}

#[tokio::test]
async fn a_state_sealed_with_another_key_is_refused_clearly() {
    let ctx = ToolContext::new().with_principal("ada");
    let (_, state, _, _) =
        paused(json!({"path": "/srv/keys.pdf"}), Defaults::default(), &ctx).await;
    let stored = serde_json::to_string(&state).unwrap();
    // Another process whose toolbox has no shared key.
    let approvals = Approvals::new();
    let elsewhere = Agent::new(
        toolbox(&approvals, Defaults::default(), None),
        ANTHROPIC,
        ScriptedModel::new([said("Deleted.")]),
    );
    let mut state: RunState = serde_json::from_str(&stored).unwrap();
    let err = elsewhere.run(&mut state, &ctx).await.unwrap_err();
    assert!(err.to_string().contains("another key"), "{err}");
    // The same key: it resumes.
    let same = Agent::new(
        toolbox(&approvals, Defaults::default(), Some(KEY)),
        ANTHROPIC,
        ScriptedModel::new([said("Not yet.")]),
    );
    assert!(matches!(
        same.run(&mut state, &ctx).await.unwrap(),
        Stop::Paused(_)
    ));
}

/// A parent under `limits` whose one call delegates `task` to a child answering with `script`;
/// the child's model, to count its requests.
fn delegating(script: Vec<Value>, task: &str, limits: Limits) -> (Agent, ScriptedModel) {
    let child_model = ScriptedModel::new(script);
    let child = Agent::new(Toolbox::new().with(LookUp), ANTHROPIC, child_model.clone());
    let helper = AgentTool::new(
        "helper",
        "Looks files up for a task. Reads files. Not for changing them.",
        child,
    );
    let parent_model = ScriptedModel::new([
        tool_use(&[("toolu_p1", "helper", json!({"task": task}))], 10),
        said("Done."),
    ]);
    let parent =
        Agent::new(Toolbox::new().with(helper), ANTHROPIC, parent_model).with_limits(limits);
    (parent, child_model)
}

/// A child's turn of six look-ups, reported at `tokens` tokens.
fn six_look_ups(tokens: u64) -> Value {
    let ids: Vec<String> = (0..6).map(|i| format!("toolu_c{i}")).collect();
    let calls: Vec<(&str, &str, Value)> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.as_str(), "look_up", json!({"path": format!("/srv/{i}")})))
        .collect();
    tool_use(&calls, tokens)
}

#[tokio::test]
async fn a_child_spends_from_its_parents_tokens() {
    // The child would make six calls a turn and spend 6,000 tokens a request.
    let script = vec![
        six_look_ups(6000),
        six_look_ups(6000),
        said("Looked them up."),
    ];
    let limits = Limits {
        max_calls: 2,
        max_tokens: Some(1000),
        ..Limits::default()
    };
    let (parent, child_model) = delegating(script, "look up six files", limits);
    let mut state = parent.start("Look up six files");
    let stop = parent.run(&mut state, &ToolContext::new()).await.unwrap();
    // One child request (it found the tokens spent after it), no child call.
    assert_eq!(child_model.requests().len(), 1);
    assert_eq!(
        state.calls(),
        1,
        "the parent's own call; none of the child's ran"
    );
    assert!(matches!(stop, Stop::Limit(Limit::Tokens)), "{stop:?}");
}

#[tokio::test]
async fn a_child_spends_from_its_parents_calls() {
    // No token limit: the parent has one call left after its own, and the six would pass it.
    let script = vec![six_look_ups(10), said("Looked them up.")];
    let limits = Limits {
        max_calls: 2,
        ..Limits::default()
    };
    let (parent, child_model) = delegating(script, "look up six files", limits);
    let mut state = parent.start("Look up six files");
    let stop = parent.run(&mut state, &ToolContext::new()).await.unwrap();
    assert_eq!(child_model.requests().len(), 1);
    assert_eq!(state.calls(), 1, "none of the child's six calls ran");
    // The parent's model was told the helper reached its limit, and answered.
    assert_eq!(stop, Stop::Answered("Done.".into()));
}

#[tokio::test]
async fn a_child_within_its_parents_limits_runs_to_its_answer() {
    let script = vec![
        tool_use(&[("toolu_c1", "look_up", json!({"path": "/srv/a"}))], 10),
        said("It is 3 KiB."),
    ];
    let limits = Limits {
        max_calls: 2,
        max_tokens: Some(1000),
        ..Limits::default()
    };
    let (parent, _) = delegating(script, "size of /srv/a", limits);
    let mut state = parent.start("How big is /srv/a?");
    let stop = parent.run(&mut state, &ToolContext::new()).await.unwrap();
    assert_eq!(stop, Stop::Answered("Done.".into()));
    // The parent's call and the child's.
    assert_eq!(state.calls(), 2);
}

#[tokio::test]
async fn a_parsed_call_approved_after_it_paused_binds_what_will_run() {
    let guard = Guard::new(|request: &GuardRequest<'_>| {
        let path = request.arguments["path"].as_str().unwrap_or_default();
        GuardDecision::Rewrite(json!({"path": path.to_lowercase()}))
    });
    let approvals = Approvals::new();
    let toolbox = toolbox(
        &approvals,
        Defaults {
            guards: vec![guard],
            repair: Some(Repair::lossless()),
            ..Defaults::default()
        },
        None,
    );
    let openai = toolbox.provider(Dialect::OpenAiChat { strict: false });
    let call = toolsmith::ToolCall {
        id: Some("call_7".into()),
        name: "delete_file".into(),
        // Repaired (a trailing comma) and rewritten (lower case) before the gate.
        arguments: json!("{\"path\": \"/SRV/Parsed.PDF\",}"),
    };
    let ctx = ToolContext::new().with_principal("ada");
    let out = openai.run(&call, &ctx).await;
    assert_eq!(out.error().unwrap().code().as_str(), "approval_required");
    let waiting = approvals.pending();
    assert_eq!(waiting[0].arguments, json!({"path": "/srv/parsed.pdf"}));
    openai.approve(&call, &ctx).unwrap();
    let out = openai.run(&call, &ctx).await;
    assert!(out.is_success(), "{}", out.to_json());
    assert_eq!(deleted("/srv/parsed.pdf"), 1);
    // Single use: the model's repeat waits again.
    let out = openai.run(&call, &ctx).await;
    assert_eq!(out.error().unwrap().code().as_str(), "approval_required");
}

#[tokio::test]
async fn decisions_in_the_state_reach_their_calls_whatever_the_approver() {
    let ctx = ToolContext::new().with_principal("ada");
    let two = tool_use(
        &[
            ("toolu_1", "delete_file", json!({"path": "/srv/kept-1.pdf"})),
            ("toolu_2", "delete_file", json!({"path": "/srv/kept-2.pdf"})),
        ],
        10,
    );
    // A toolbox whose approver is no store: a person's decision in the run's sealed state
    // still reaches the very call it was made on, bound to its tool and arguments.
    let asking = Toolbox::new()
        .with(DeleteFile)
        .with_approver(|_: &toolsmith::policy::ApprovalRequest<'_>| {
            toolsmith::policy::ApprovalDecision::Pending
        })
        .with_state(toolsmith::state::State::memory().with_key(KEY));
    let agent = Agent::new(
        asking,
        ANTHROPIC,
        ScriptedModel::new([two, said("Deleted both."), said("again")]),
    );
    let mut state = agent.start("Delete both reports");
    let Stop::Paused(pending) = agent.run(&mut state, &ctx).await.unwrap() else {
        panic!("expected a pause");
    };
    assert_eq!(pending.len(), 2);
    agent.approve(&mut state, &pending[0].path).unwrap();
    assert_eq!(deleted("/srv/kept-1.pdf") + deleted("/srv/kept-2.pdf"), 0);
    agent.approve(&mut state, &pending[1].path).unwrap();
    let stop = agent.run(&mut state, &ctx).await.unwrap();
    assert!(matches!(stop, Stop::Answered(_)), "{stop:?}");
    assert_eq!(deleted("/srv/kept-1.pdf"), 1);
    assert_eq!(deleted("/srv/kept-2.pdf"), 1);
    // Nothing of the decisions is left: the same calls from a new run wait again.
    let mut again = agent.start("Delete both reports again");
    let model_again = Agent::new(
        Toolbox::new()
            .with(DeleteFile)
            .with_approver(|_: &toolsmith::policy::ApprovalRequest<'_>| {
                toolsmith::policy::ApprovalDecision::Pending
            })
            .with_state(toolsmith::state::State::memory().with_key(KEY)),
        ANTHROPIC,
        ScriptedModel::new([tool_use(
            &[("toolu_9", "delete_file", json!({"path": "/srv/kept-1.pdf"}))],
            10,
        )]),
    );
    let stop = model_again.run(&mut again, &ctx).await.unwrap();
    assert!(matches!(stop, Stop::Paused(_)), "{stop:?}");
    assert_eq!(deleted("/srv/kept-1.pdf"), 1);
}

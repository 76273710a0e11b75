//! The agent loop over a scripted model: turns, limits, the reset rule, pauses for a person,
//! resuming from stored state (in this process and in another), events, and agents as tools
//! of other agents with their approvals intact.

#[path = "support/replies.rs"]
mod replies;

use std::sync::{Arc, Mutex};

use replies::{chat_calls, chat_said};
use serde_json::{Value, json};
use toolsmith::agent::{
    Agent, AgentEvent, AgentTool, Limit, Limits, RunState, ScriptedModel, Stop,
};
use toolsmith::policy::Approvals;
use toolsmith::provider::{ToolChoice, ToolRequest};
use toolsmith::{Dialect, Tool, ToolContext, Toolbox, tool};

/// Each tool run, as `(tool, ticket)`: tests run at once, each on tickets of its own.
static RAN: Mutex<Vec<(&'static str, u64)>> = Mutex::new(Vec::new());

fn ran(tool: &str, id: u64) -> usize {
    RAN.lock()
        .unwrap()
        .iter()
        .filter(|(t, i)| *t == tool && *i == id)
        .count()
}

/// Looks a ticket up. Read-only. Not for changing tickets.
#[tool(effect = "read")]
fn look_up(
    /// The ticket.
    #[arg(range(min = 1, max = 1000))]
    id: u64,
) -> String {
    RAN.lock().unwrap().push(("look_up", id));
    format!("ticket {id}: printer on fire")
}

/// Deletes a ticket. Destructive: it cannot be undone. Not for closing tickets.
#[tool(effect = "destructive", requires_approval)]
fn delete_ticket(
    /// The ticket.
    #[arg(range(min = 1, max = 1000))]
    id: u64,
) -> String {
    RAN.lock().unwrap().push(("delete_ticket", id));
    format!("ticket {id} deleted")
}

const ANTHROPIC: Dialect = Dialect::Anthropic { strict: false };
const OPENAI: Dialect = Dialect::OpenAiChat { strict: true };

fn tool_use(calls: &[(&str, &str, Value)]) -> Value {
    let content: Vec<Value> = calls
        .iter()
        .map(
            |(id, name, input)| json!({"type": "tool_use", "id": id, "name": name, "input": input}),
        )
        .collect();
    json!({"role": "assistant", "content": content, "stop_reason": "tool_use",
           "usage": {"input_tokens": 100, "output_tokens": 20}})
}

fn said(text: &str) -> Value {
    json!({"role": "assistant", "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
           "usage": {"input_tokens": 120, "output_tokens": 10}})
}

#[tokio::test]
async fn runs_until_the_model_answers_and_resets_a_forced_choice() {
    let model = ScriptedModel::new([
        tool_use(&[("toolu_1", "look_up", json!({"id": 7}))]),
        said("Ticket 7: the printer is on fire."),
    ]);
    let agent = Agent::new(Toolbox::new().with(LookUp), ANTHROPIC, model.clone()).with_request(
        ToolRequest {
            choice: ToolChoice::Tool("look_up".into()),
            ..ToolRequest::default()
        },
    );
    let mut state = agent.start("What is ticket 7?");
    let stop = agent
        .run(&mut state, &ToolContext::new().with_run_id("r1"))
        .await
        .unwrap();
    assert_eq!(
        stop,
        Stop::Answered("Ticket 7: the printer is on fire.".into())
    );
    assert_eq!(state.turns(), 2);
    assert_eq!(state.calls(), 1);
    assert_eq!(state.usage().total(), 250);
    // user, assistant (tool_use), user (tool_result), assistant (text)
    assert_eq!(state.messages().len(), 4);
    assert_eq!(state.messages()[2]["content"][0]["type"], "tool_result");
    let requests = model.requests();
    assert_eq!(
        requests[0].body["tool_choice"],
        json!({"type": "tool", "name": "look_up"})
    );
    // The forced choice went back to the model's own after the call.
    assert!(requests[1].body.get("tool_choice").is_none());
    assert_eq!(requests[1].body["tools"], requests[0].body["tools"]);
    // Running an answered run again answers the same without asking the model.
    let again = agent.run(&mut state, &ToolContext::new()).await.unwrap();
    assert_eq!(again, stop);
    assert_eq!(model.requests().len(), 2);
}

#[tokio::test]
async fn limits_stop_a_run_that_can_go_on() {
    let model = ScriptedModel::new([
        tool_use(&[("toolu_1", "look_up", json!({"id": 1}))]),
        tool_use(&[("toolu_2", "look_up", json!({"id": 2}))]),
        said("Done."),
    ]);
    let toolbox = Toolbox::new().with(LookUp);
    let agent = Agent::new(toolbox.clone(), ANTHROPIC, model.clone()).with_limits(Limits {
        max_turns: 1,
        ..Limits::default()
    });
    let mut state = agent.start("Look at 1 and 2");
    let ctx = ToolContext::new();
    assert_eq!(
        agent.run(&mut state, &ctx).await.unwrap(),
        Stop::Limit(Limit::Turns)
    );
    // More turns: the run goes on from where it stopped.
    let agent = Agent::new(toolbox, ANTHROPIC, model.clone()).with_limits(Limits {
        max_calls: 1,
        ..Limits::default()
    });
    // The first call is answered; the second turn's call would pass the limit and waits unrun.
    assert_eq!(
        agent.run(&mut state, &ctx).await.unwrap(),
        Stop::Limit(Limit::Calls)
    );
    assert_eq!(state.calls(), 1);
    let agent = agent.with_limits(Limits::default());
    assert_eq!(
        agent.run(&mut state, &ctx).await.unwrap(),
        Stop::Answered("Done.".into())
    );
    assert_eq!(state.calls(), 2);
    // Every tool_use got its tool_result.
    let results = state
        .messages()
        .iter()
        .filter(|m| m["content"][0]["type"] == "tool_result")
        .count();
    assert_eq!(results, 2);

    let model = ScriptedModel::new([
        tool_use(&[("toolu_1", "look_up", json!({"id": 1}))]),
        said("x"),
    ]);
    let agent = Agent::new(Toolbox::new().with(LookUp), ANTHROPIC, model).with_limits(Limits {
        max_tokens: Some(100),
        ..Limits::default()
    });
    let mut state = agent.start("Hi");
    assert_eq!(
        agent.run(&mut state, &ctx).await.unwrap(),
        Stop::Limit(Limit::Tokens)
    );
}

fn approval_toolbox(approvals: &Approvals) -> Toolbox {
    Toolbox::new()
        .with(LookUp)
        .with(DeleteTicket)
        .with_approver(approvals.clone())
}

#[tokio::test]
async fn pauses_for_a_person_and_resumes_without_running_anything_twice() {
    let approvals = Approvals::new();
    let model = ScriptedModel::new([
        tool_use(&[
            ("toolu_1", "look_up", json!({"id": 3})),
            ("toolu_2", "delete_ticket", json!({"id": 3})),
        ]),
        said("Deleted ticket 3."),
    ]);
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&events);
    let agent = Agent::new(approval_toolbox(&approvals), ANTHROPIC, model.clone())
        .with_events(move |event| seen.lock().unwrap().push(event.clone()));
    let ctx = ToolContext::new()
        .with_principal("ada")
        .with_run_id("r-pause");
    let mut state = agent.start("Delete ticket 3");

    let Stop::Paused(pending) = agent.run(&mut state, &ctx).await.unwrap() else {
        panic!("expected a pause");
    };
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].path, ["toolu_2"]);
    assert_eq!(pending[0].tool, "delete_ticket");
    assert_eq!(pending[0].arguments, json!({"id": 3}));
    // The person sees it on the desk too.
    assert_eq!(approvals.pending()[0].tool, "delete_ticket");
    assert_eq!(ran("look_up", 3), 1);
    assert_eq!(ran("delete_ticket", 3), 0);
    // Nothing was sent to the model while the turn waits.
    assert_eq!(model.requests().len(), 1);

    // Running again without a decision: still waiting, nothing ran twice.
    assert!(matches!(
        agent.run(&mut state, &ctx).await.unwrap(),
        Stop::Paused(_)
    ));
    assert_eq!(ran("look_up", 3), 1);

    agent.approve(&mut state, &pending[0].path).unwrap();
    assert!(agent.approve(&mut state, &["toolu_9".to_owned()]).is_err());
    let stop = agent.run(&mut state, &ctx).await.unwrap();
    assert_eq!(stop, Stop::Answered("Deleted ticket 3.".into()));
    assert_eq!(ran("delete_ticket", 3), 1);
    assert_eq!(ran("look_up", 3), 1);
    // Both results went back in one user message, in the calls' order.
    let results = &model.requests()[1].body["messages"][2]["content"];
    assert_eq!(results[0]["tool_use_id"], "toolu_1");
    assert_eq!(results[1]["tool_use_id"], "toolu_2");
    assert_ne!(results[1]["is_error"], true);

    let events = events.lock().unwrap();
    assert!(matches!(events[0], AgentEvent::ModelRequested { turn: 0 }));
    assert!(events.iter().any(|e| matches!(e, AgentEvent::Paused(_))));
    let finished = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::ToolFinished { .. }))
        .count();
    assert_eq!(finished, 2);
}

#[tokio::test]
async fn a_denied_call_never_runs_and_the_model_is_told() {
    let approvals = Approvals::new();
    let model = ScriptedModel::new([
        tool_use(&[("toolu_1", "delete_ticket", json!({"id": 5}))]),
        said("I could not delete it."),
    ]);
    let agent = Agent::new(approval_toolbox(&approvals), ANTHROPIC, model.clone());
    let ctx = ToolContext::new()
        .with_principal("ada")
        .with_run_id("r-deny");
    let mut state = agent.start("Delete ticket 5");
    let Stop::Paused(pending) = agent.run(&mut state, &ctx).await.unwrap() else {
        panic!("expected a pause");
    };
    agent
        .deny(&mut state, &pending[0].path, "not today")
        .unwrap();
    assert!(matches!(
        agent.run(&mut state, &ctx).await.unwrap(),
        Stop::Answered(_)
    ));
    assert_eq!(ran("delete_ticket", 5), 0);
    let result = &model.requests()[1].body["messages"][2]["content"][0];
    assert_eq!(result["is_error"], true);
    assert!(
        result["content"].to_string().contains("not today"),
        "{result}"
    );
}

#[tokio::test]
async fn without_an_approver_a_call_fails_closed_and_the_run_goes_on() {
    let model = ScriptedModel::new([
        tool_use(&[("toolu_1", "delete_ticket", json!({"id": 6}))]),
        said("It needs your approval."),
    ]);
    let toolbox = Toolbox::new().with(DeleteTicket);
    let agent = Agent::new(toolbox, ANTHROPIC, model.clone());
    let mut state = agent.start("Delete ticket 6");
    let stop = agent.run(&mut state, &ToolContext::new()).await.unwrap();
    assert_eq!(stop, Stop::Answered("It needs your approval.".into()));
    assert_eq!(ran("delete_ticket", 6), 0);
}

/// A parent (Anthropic) delegating to a child (OpenAI) whose delete needs approval.
fn two_levels(approvals: &Approvals, parent: ScriptedModel, child: ScriptedModel) -> Agent {
    let child = Agent::new(approval_toolbox(approvals), OPENAI, child);
    let helpdesk = AgentTool::new(
        "helpdesk",
        "Handles one helpdesk task with the ticket tools. Changes tickets. Not for other systems.",
        child,
    );
    // Both processes of the resume test seal and check runs with one key.
    let state = toolsmith::state::State::memory().with_key(RUN_KEY);
    Agent::new(
        Toolbox::new().with(helpdesk).with_state(state),
        ANTHROPIC,
        parent,
    )
}

/// The key every process of these tests seals runs with.
const RUN_KEY: &str = "a run-sealing secret shared by the test's processes";

fn parent_script(id: u64) -> ScriptedModel {
    ScriptedModel::new([
        tool_use(&[(
            "toolu_p1",
            "helpdesk",
            json!({"task": format!("Delete ticket {id}")}),
        )]),
        said(&format!("The helpdesk deleted ticket {id}.")),
    ])
}

fn child_script(id: u64) -> ScriptedModel {
    ScriptedModel::new([
        chat_calls(&[("call_c1", "delete_ticket", json!({"id": id}))]),
        chat_said(&format!("Ticket {id} is deleted.")),
    ])
}

#[tokio::test]
async fn a_child_agents_approval_surfaces_in_the_parent_and_the_child_resumes() {
    let approvals = Approvals::new();
    let (parent, child) = (parent_script(9), child_script(9));
    let agent = two_levels(&approvals, parent.clone(), child.clone());
    let ctx = ToolContext::new()
        .with_principal("ada")
        .with_run_id("r-two");
    let mut state = agent.start("Please remove ticket 9");

    let Stop::Paused(pending) = agent.run(&mut state, &ctx).await.unwrap() else {
        panic!("expected a pause");
    };
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].path, ["toolu_p1", "call_c1"]);
    assert_eq!(pending[0].tool, "delete_ticket");
    assert_eq!(ran("delete_ticket", 9), 0);

    // Stored and read back, as another request of the application would.
    let stored = serde_json::to_string(&state).unwrap();
    let mut state: RunState = serde_json::from_str(&stored).unwrap();
    agent.approve(&mut state, &pending[0].path).unwrap();
    let stop = agent.run(&mut state, &ctx).await.unwrap();
    assert_eq!(
        stop,
        Stop::Answered("The helpdesk deleted ticket 9.".into())
    );
    assert_eq!(ran("delete_ticket", 9), 1);
    // The child asked its model twice in all: it resumed, it did not start over.
    assert_eq!(child.requests().len(), 2);
    assert_eq!(
        child.requests()[0].body["messages"][0]["content"],
        "Delete ticket 9"
    );
    // The parent's model got the child's answer.
    let result = &parent.requests()[1].body["messages"][2]["content"][0];
    assert!(
        result["content"]
            .to_string()
            .contains("Ticket 9 is deleted."),
        "{result}"
    );
    // The child's tokens count in the parent's run.
    assert_eq!(state.usage().input_tokens, 100 + 120 + 40 + 50);
}

#[tokio::test]
async fn a_child_call_with_nobody_to_ask_fails_closed() {
    let approvals = Approvals::new();
    let child = Agent::new(approval_toolbox(&approvals), OPENAI, child_script(11));
    let helpdesk = AgentTool::new(
        "helpdesk",
        "Handles one helpdesk task with the ticket tools. Changes tickets. Not for other systems.",
        child,
    );
    assert_eq!(
        helpdesk.definition().effect(),
        Some(toolsmith::Effect::Write)
    );
    let toolbox = Toolbox::new().with(helpdesk);
    // Called directly, not from a parent loop: nobody can be asked.
    let out = toolbox
        .call(
            "helpdesk",
            json!({"task": "Delete ticket 11"}),
            &ToolContext::new().with_principal("ada"),
        )
        .await;
    let err = out.error().unwrap();
    assert_eq!(err.code().as_str(), "approval_required");
    assert!(err.needs_human());
    assert_eq!(ran("delete_ticket", 11), 0);
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Lookup {
    /// The ticket to read.
    ticket: u64,
}

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema, PartialEq, Debug)]
struct Summary {
    ticket: u64,
    status: String,
}

#[tokio::test]
async fn typed_input_and_output() {
    let child = ScriptedModel::new([chat_said(
        "```json\n{\"ticket\": 4, \"status\": \"open\"}\n```",
    )]);
    let tool = AgentTool::new(
        "summarize",
        "Summarizes a ticket. Read-only. Not for changing tickets.",
        Agent::new(Toolbox::new().with(LookUp), OPENAI, child.clone()),
    )
    .with_input(|input: Lookup| format!("Summarize ticket {}", input.ticket))
    .with_output::<Summary>();
    assert_eq!(
        tool.definition().input_schema()["required"],
        json!(["ticket"])
    );
    assert!(tool.definition().output_schema().is_some());
    let toolbox = Toolbox::new().with(tool);
    let out = toolbox
        .call("summarize", json!({"ticket": 4}), &ToolContext::new())
        .await;
    assert_eq!(
        out.into_result::<Summary>().unwrap(),
        Summary {
            ticket: 4,
            status: "open".into()
        }
    );
    assert_eq!(
        child.requests()[0].body["messages"][0]["content"],
        "Summarize ticket 4"
    );
    // Exported like any tool.
    toolbox.export(Dialect::Gemini).unwrap();
}

/// The second process of `resumes_from_stored_state_in_another_process`: reads the stored
/// state, approves the waiting call, runs the rest and writes what it saw.
#[tokio::test]
#[ignore = "run by resumes_from_stored_state_in_another_process"]
async fn second_process() {
    let Ok(dir) = std::env::var("TOOLSMITH_RESUME_DIR") else {
        return;
    };
    let dir = std::path::PathBuf::from(dir);
    let stored = std::fs::read_to_string(dir.join("state.json")).unwrap();
    let mut state: RunState = serde_json::from_str(&stored).unwrap();
    let approvals = Approvals::new();
    // A new process: the scripts go on from where the first process stopped.
    let parent = ScriptedModel::new([said("The helpdesk deleted ticket 12.")]);
    let child = ScriptedModel::new([chat_said("Ticket 12 is deleted.")]);
    let agent = two_levels(&approvals, parent, child);
    let path = state.pending()[0].path.clone();
    agent.approve(&mut state, &path).unwrap();
    let ctx = ToolContext::new()
        .with_principal("ada")
        .with_run_id("r-process");
    let stop = agent.run(&mut state, &ctx).await.unwrap();
    let report = json!({
        "stop": format!("{stop:?}"),
        "deleted": ran("delete_ticket", 12),
        "path": path,
    });
    std::fs::write(dir.join("report.json"), report.to_string()).unwrap();
}

#[tokio::test]
async fn resumes_from_stored_state_in_another_process() {
    let approvals = Approvals::new();
    let agent = two_levels(&approvals, parent_script(12), child_script(12));
    let ctx = ToolContext::new()
        .with_principal("ada")
        .with_run_id("r-process");
    let mut state = agent.start("Please remove ticket 12");
    assert!(matches!(
        agent.run(&mut state, &ctx).await.unwrap(),
        Stop::Paused(_)
    ));
    let dir = std::env::temp_dir().join(format!("toolsmith-resume-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("state.json"),
        serde_json::to_string(&state).unwrap(),
    )
    .unwrap();

    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "second_process", "--ignored", "--quiet"])
        .env("TOOLSMITH_RESUME_DIR", &dir)
        .status()
        .unwrap();
    assert!(status.success());
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        report["stop"],
        "Answered(\"The helpdesk deleted ticket 12.\")"
    );
    // Nothing ran in this process.
    assert_eq!(ran("delete_ticket", 12), 0);
    assert_eq!(report["path"], json!(["toolu_p1", "call_c1"]));
    // The delete ran once, in the second process.
    assert_eq!(report["deleted"], 1);
}

/// Reads a whole page. Read-only. Not for writing pages.
#[tool(effect = "read")]
fn read_page(
    /// The page.
    #[arg(range(min = 1, max = 1000))]
    page: u64,
) -> String {
    format!("page {page}: {}", "lorem ipsum ".repeat(500))
}

#[tokio::test]
async fn older_results_are_shown_short_while_the_run_keeps_them_whole() {
    use toolsmith::agent::Trim;
    let model = ScriptedModel::new([
        tool_use(&[("toolu_1", "read_page", json!({"page": 1}))]),
        tool_use(&[("toolu_2", "read_page", json!({"page": 2}))]),
        tool_use(&[("toolu_3", "read_page", json!({"page": 3}))]),
        said("Three pages read."),
    ]);
    let trim = Trim::keep_last(1).with_preview(40).with_at_least(1_000);
    let agent = Agent::new(Toolbox::new().with(ReadPage), ANTHROPIC, model.clone()).with_trim(trim);
    let mut state = agent.start("Read three pages.");
    let stop = agent.run(&mut state, &ToolContext::new()).await.unwrap();
    assert_eq!(stop, Stop::Answered("Three pages read.".into()));
    let requests = model.requests();
    let result = |request: usize, message: usize| {
        requests[request].body["messages"][message]["content"][0]["content"].to_string()
    };
    // The second request has one result: shown whole.
    assert!(result(1, 2).len() > 5_000);
    // The third: page 1 trimmed, page 2 whole; the fourth: pages 1 and 2 trimmed, page 3 whole.
    assert!(
        result(2, 2).contains("[trimmed: the first 40 of"),
        "{}",
        result(2, 2)
    );
    assert!(result(2, 4).len() > 5_000);
    assert_eq!(
        result(3, 2),
        result(2, 2),
        "a trimmed result stays as it was sent"
    );
    assert!(result(3, 4).contains("[trimmed"));
    assert!(result(3, 6).len() > 5_000);
    // Every call still has its result, and the run keeps every result whole.
    for request in &requests {
        let messages = request.body["messages"].as_array().unwrap();
        let uses = messages
            .iter()
            .flat_map(|m| m["content"].as_array().into_iter().flatten())
            .filter(|b| b["type"] == "tool_use")
            .count();
        let results = messages
            .iter()
            .flat_map(|m| m["content"].as_array().into_iter().flatten())
            .filter(|b| b["type"] == "tool_result")
            .count();
        assert_eq!(uses, results);
    }
    assert!(
        state.messages()[2]["content"][0]["content"]
            .to_string()
            .len()
            > 5_000
    );
    // A state that trimmed resumes sealed like any other.
    let stored = serde_json::to_string(&state).unwrap();
    let mut resumed: RunState = serde_json::from_str(&stored).unwrap();
    assert_eq!(
        agent.run(&mut resumed, &ToolContext::new()).await.unwrap(),
        stop
    );

    // Where Anthropic trims on its side: the conversation is sent whole, with its edit.
    let model = ScriptedModel::new([said("ok")]);
    let agent = Agent::new(Toolbox::new().with(ReadPage), ANTHROPIC, model.clone())
        .with_trim(Trim::keep_last(2).on_provider());
    let mut state = agent.start("Hi.");
    agent.run(&mut state, &ToolContext::new()).await.unwrap();
    let request = &model.requests()[0];
    assert_eq!(
        request.body["context_management"]["edits"][0]["type"],
        "clear_tool_uses_20250919"
    );
    assert!(
        request
            .headers
            .iter()
            .any(|(n, v)| n == "anthropic-beta" && v.contains("context-management-2025-06-27"))
    );
}

#[tokio::test]
async fn a_shortened_result_is_read_back_whole_a_page_at_a_time() {
    use toolsmith::agent::Trim;
    let model = ScriptedModel::new([
        tool_use(&[("toolu_1", "read_page", json!({"page": 1}))]),
        tool_use(&[("toolu_2", "read_page", json!({"page": 2}))]),
        // Page 1 is shown short now; the model reads it back from where the preview ends.
        tool_use(&[(
            "toolu_3",
            "read_earlier_result",
            json!({"result": "2.0", "offset": 40}),
        )]),
        tool_use(&[("toolu_4", "read_earlier_result", json!({"result": "9.9"}))]),
        said("Read."),
    ]);
    let trim = Trim::keep_last(1).with_preview(40).with_at_least(1_000);
    let agent = Agent::new(Toolbox::new().with(ReadPage), ANTHROPIC, model.clone()).with_trim(trim);
    // The tool is offered from the first request on, so the cached tool block never changes.
    let offered = |request: &toolsmith::agent::ModelRequest| {
        request.body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "read_earlier_result")
    };
    let mut state = agent.start("Read two pages.");
    let stop = agent.run(&mut state, &ToolContext::new()).await.unwrap();
    assert_eq!(stop, Stop::Answered("Read.".into()));
    let requests = model.requests();
    assert!(requests.iter().all(offered));
    let preview = requests[2].body["messages"][2]["content"][0]["content"].to_string();
    assert!(
        preview.contains(
            r#"read the rest with read_earlier_result {\"result\": \"2.0\", \"offset\": 40}"#
        ),
        "{preview}"
    );
    let read = |request: usize, message: usize| -> Value {
        serde_json::from_str(
            requests[request].body["messages"][message]["content"][0]["content"][0]["text"]
                .as_str()
                .unwrap(),
        )
        .unwrap()
    };
    let page = read(3, 6);
    // The result as the model first read it, whole in the run's state.
    let whole = state.messages()[2]["content"][0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(whole.contains("page 1: lorem ipsum"));
    let expected: String = whole.chars().skip(40).take(4_000).collect();
    assert_eq!(page["data"]["text"], expected.as_str(), "{page}");
    assert_eq!(page["data"]["next_offset"], 4_040);
    assert_eq!(page["data"]["total"], whole.chars().count());
    // A reference to nothing shown short is a clear error naming the ones there are.
    let missing = read(4, 8).to_string();
    assert!(missing.contains("no earlier result"), "{missing}");
    assert!(missing.contains("`2.0`"), "{missing}");
}

//! Long-running tools in the agent loop: the turn waits on the task with nothing sent to the
//! model, the result is taken once, in this process or another sharing the task store, and a
//! task whose process died runs again. Over MCP the same tool is a task tool.

#[path = "support/replies.rs"]
mod replies;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use replies::{anthropic_calls, anthropic_said};
use serde_json::json;
use toolsmith::agent::{Agent, AgentEvent, RunState, ScriptedModel, Stop};
use toolsmith::state::{MemoryCheckpointStore, MemoryTaskStore, State};
use toolsmith::{Dialect, ToolContext, Toolbox, tool};

static BUILT: AtomicUsize = AtomicUsize::new(0);
static GATE: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(0);

/// Builds the search index. Writes data. Not for queries.
#[tool(effect = "write", long_running)]
async fn build_index(
    /// The index.
    #[arg(length(max = 40))]
    name: String,
) -> String {
    // Waits until the test lets one build finish.
    let _permit = GATE.acquire().await;
    BUILT.fetch_add(1, Ordering::SeqCst);
    format!("index {name} built")
}

const ANTHROPIC: Dialect = Dialect::Anthropic { strict: false };
const KEY: &str = "the long-running tests' sealing secret, 32 bytes";

fn script() -> ScriptedModel {
    ScriptedModel::new([
        anthropic_calls(&[("toolu_1", "build_index", json!({"name": "tickets"}))]),
        anthropic_said("The index is built."),
    ])
}

async fn until_answered(agent: &Agent, state: &mut RunState, ctx: &ToolContext) -> Stop {
    for _ in 0..500 {
        let stop = agent.run(state, ctx).await.unwrap();
        if !matches!(stop, Stop::Waiting(_)) {
            return stop;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the task never finished");
}

#[tokio::test]
async fn the_turn_waits_on_the_task_and_takes_its_result_once_in_another_process() {
    let tasks = Arc::new(MemoryTaskStore::default());
    let checkpoints = Arc::new(MemoryCheckpointStore::default());
    let state_of = || State::memory().with_tasks(Arc::clone(&tasks)).with_key(KEY);
    let finished = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&finished);
    let first_model = script();
    let first = Agent::new(
        Toolbox::new().with(BuildIndex).with_state(state_of()),
        ANTHROPIC,
        first_model.clone(),
    )
    .with_checkpoints(Arc::clone(&checkpoints));
    let ctx = ToolContext::new()
        .with_principal("ada")
        .with_run_id("run-index");
    let mut state = first.start("Rebuild the tickets index");
    let stop = first.run(&mut state, &ctx).await.unwrap();
    assert_eq!(stop, Stop::Waiting(vec!["toolu_1".into()]));
    // No placeholder: the model has not been sent anything since it called the tool.
    assert_eq!(first_model.requests().len(), 1);
    assert_eq!(state.messages().len(), 2);
    // Still running: the run waits again, and starts nothing new.
    assert_eq!(
        first.run(&mut state, &ctx).await.unwrap(),
        Stop::Waiting(vec!["toolu_1".into()])
    );
    GATE.add_permits(1);

    // Another process, with the same task store, resumes the run from its checkpoint.
    let second_model = ScriptedModel::new([anthropic_said("The index is built.")]);
    let second = Agent::new(
        Toolbox::new().with(BuildIndex).with_state(state_of()),
        ANTHROPIC,
        second_model.clone(),
    )
    .with_checkpoints(Arc::clone(&checkpoints))
    .with_events(move |event| {
        if let AgentEvent::ToolFinished { envelope, .. } = event {
            assert!(envelope.contains("index tickets built"), "{envelope}");
            seen.fetch_add(1, Ordering::SeqCst);
        }
    });
    let mut resumed = second.load("run-index", &ctx).await.unwrap();
    let stop = until_answered(&second, &mut resumed, &ctx).await;
    assert_eq!(stop, Stop::Answered("The index is built.".into()));
    assert_eq!(BUILT.load(Ordering::SeqCst), 1, "the tool ran once");
    assert_eq!(
        finished.load(Ordering::SeqCst),
        1,
        "its result was taken once"
    );
    let body = second_model.requests()[0].body.to_string();
    assert_eq!(body.matches("index tickets built").count(), 1, "{body}");
    // Run again: answered, nothing taken twice.
    assert_eq!(
        second.run(&mut resumed, &ctx).await.unwrap(),
        Stop::Answered("The index is built.".into())
    );
    assert_eq!(finished.load(Ordering::SeqCst), 1);
}

/// Reads a long report. Read-only. Not for writing reports.
#[tool(effect = "read", long_running)]
async fn read_report() -> &'static str {
    READS.fetch_add(1, Ordering::SeqCst);
    "a long report"
}

static READS: AtomicUsize = AtomicUsize::new(0);

#[tokio::test]
async fn a_task_whose_process_died_runs_again() {
    // The first process's task store dies with it: the task is unknown to the second.
    let checkpoints = Arc::new(MemoryCheckpointStore::default());
    let model = ScriptedModel::new([
        anthropic_calls(&[("toolu_1", "read_report", json!({}))]),
        anthropic_said("Read."),
    ]);
    let first = Agent::new(
        Toolbox::new()
            .with(ReadReport)
            .with_state(State::memory().with_key(KEY)),
        ANTHROPIC,
        model,
    )
    .with_checkpoints(Arc::clone(&checkpoints));
    let ctx = ToolContext::new()
        .with_principal("ada")
        .with_run_id("run-lost");
    let mut state = first.start("Read the report");
    // Kept with its task's id, before the task could run.
    assert!(matches!(
        first.run(&mut state, &ctx).await.unwrap(),
        Stop::Waiting(_)
    ));
    let second = Agent::new(
        Toolbox::new()
            .with(ReadReport)
            .with_state(State::memory().with_key(KEY)),
        ANTHROPIC,
        ScriptedModel::new([anthropic_said("Read.")]),
    )
    .with_checkpoints(Arc::clone(&checkpoints));
    let mut resumed = second.load("run-lost", &ctx).await.unwrap();
    let stop = until_answered(&second, &mut resumed, &ctx).await;
    assert_eq!(stop, Stop::Answered("Read.".into()));
    assert!(READS.load(Ordering::SeqCst) >= 1);
}

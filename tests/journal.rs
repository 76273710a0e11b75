//! Runs driven through a durable engine's journal (`Agent::run_journaled`): a run taken again
//! from its start with the same journal reads every kept step back, asks the model nothing it
//! answered and runs no call that finished, and waits on the same calls with the same tokens;
//! a journal that hands back something else is refused without a panic.
//! (On a real engine, with processes killed: tests/restate_crash.rs.)

#[path = "support/replies.rs"]
mod replies;

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use replies::{anthropic_calls as tool_use, anthropic_said as said};
use serde_json::json;
use toolsmith::agent::{Agent, AgentError, Journal, ScriptedModel, Step, Stop, Verdict};
use toolsmith::policy::Approvals;
use toolsmith::state::State;
use toolsmith::tool::BoxFuture;
use toolsmith::{Dialect, ToolContext, Toolbox, tool};

const ANTHROPIC: Dialect = Dialect::Anthropic { strict: false };
const KEY: &str = "the journal tests' sealing secret, 32 bytes or more";

static NOTES: AtomicUsize = AtomicUsize::new(0);
static DELETIONS: AtomicUsize = AtomicUsize::new(0);

/// Adds a note to a ticket. Writes data. Not for closing tickets.
#[tool(effect = "write")]
fn add_note(
    /// The ticket.
    #[arg(range(max = 1000))]
    id: u32,
) -> String {
    NOTES.fetch_add(1, Ordering::SeqCst);
    format!("noted {id}")
}

/// Deletes a ticket. Destructive: it cannot be undone. Not for closing tickets.
#[tool(effect = "destructive")]
fn delete_ticket(
    /// The ticket.
    #[arg(range(max = 1000))]
    id: u32,
) -> String {
    DELETIONS.fetch_add(1, Ordering::SeqCst);
    format!("deleted {id}")
}

/// A journal that keeps each step's output by its place in the run, as an engine does, and
/// hands them back to a run taken again from its start.
#[derive(Default)]
struct Kept {
    steps: Mutex<Vec<(String, String)>>,
    place: Mutex<usize>,
    ran: AtomicUsize,
}

impl Kept {
    /// The run is taken again from its start.
    fn replay(&self) {
        *self.place.lock().unwrap() = 0;
    }
}

impl Journal for Kept {
    fn step<'a>(&'a self, name: String, step: Step<'a>) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(async move {
            let place = {
                let mut place = self.place.lock().unwrap();
                *place += 1;
                *place - 1
            };
            if let Some((kept_name, output)) = self.steps.lock().unwrap().get(place).cloned() {
                assert_eq!(kept_name, name, "the run took its steps in another order");
                return Ok(output);
            }
            self.ran.fetch_add(1, Ordering::SeqCst);
            let output = step().await?;
            self.steps.lock().unwrap().push((name, output.clone()));
            Ok(output)
        })
    }
}

fn agent(model: ScriptedModel) -> Agent {
    let toolbox = Toolbox::new()
        .with(AddNote)
        .with(DeleteTicket)
        .with_approver(Approvals::new())
        .with_state(State::memory().with_key(KEY));
    Agent::new(toolbox, ANTHROPIC, model)
}

fn ctx() -> ToolContext {
    ToolContext::new()
        .with_principal("ada")
        .with_run_id("run-journal")
}

#[tokio::test]
async fn a_run_taken_again_reads_its_kept_steps_back_and_runs_nothing_twice() {
    let journal = Kept::default();
    let first = ScriptedModel::new([
        tool_use(&[
            ("toolu_1", "add_note", json!({"id": 7})),
            ("toolu_2", "delete_ticket", json!({"id": 7})),
        ]),
        said("Noted and deleted."),
    ]);
    let agent1 = agent(first.clone());
    let mut state = agent1.start("Tidy up ticket 7.");
    let stop = agent1
        .run_journaled(&mut state, &ctx(), &journal)
        .await
        .unwrap();
    let Stop::Paused(pending) = stop else {
        panic!("the deletion waits for a person: {stop:?}")
    };
    assert_eq!(NOTES.load(Ordering::SeqCst), 1);
    assert_eq!(DELETIONS.load(Ordering::SeqCst), 0);
    assert_eq!(
        journal.ran.load(Ordering::SeqCst),
        3,
        "one model step, two calls"
    );

    // The process dies; the engine takes the run again from its start, in a new process
    // whose model has nothing to say for the turn already answered.
    journal.replay();
    let second = ScriptedModel::new([said("Noted and deleted.")]);
    let agent2 = agent(second.clone());
    let mut again = agent2.start("Tidy up ticket 7.");
    let stop = agent2
        .run_journaled(&mut again, &ctx(), &journal)
        .await
        .unwrap();
    assert_eq!(
        stop,
        Stop::Paused(pending.clone()),
        "the same calls wait, with the same tokens"
    );
    assert!(
        second.requests().is_empty(),
        "the model was not asked again"
    );
    assert_eq!(
        NOTES.load(Ordering::SeqCst),
        1,
        "the note was not written again"
    );
    assert_eq!(journal.ran.load(Ordering::SeqCst), 3);

    // The person decides; the run goes on, and the deletion runs once.
    agent2
        .decide(
            &mut again,
            &pending[0].path,
            &Verdict::approve().by("lin@example.com"),
        )
        .unwrap();
    let stop = agent2
        .run_journaled(&mut again, &ctx(), &journal)
        .await
        .unwrap();
    assert_eq!(stop, Stop::Answered("Noted and deleted.".into()));
    assert_eq!(DELETIONS.load(Ordering::SeqCst), 1);
    assert_eq!(second.requests().len(), 1);
    let names: Vec<String> = journal
        .steps
        .lock()
        .unwrap()
        .iter()
        .map(|(name, _)| name.clone())
        .collect();
    assert_eq!(
        names,
        [
            "model:0",
            "call:toolu_1",
            "call:toolu_2",
            "call:toolu_2",
            "model:1"
        ]
    );
}

/// A journal that hands back what it is told to, whatever the step.
struct Forged(String);

impl Journal for Forged {
    fn step<'a>(&'a self, _name: String, _step: Step<'a>) -> BoxFuture<'a, Result<String, String>> {
        let output = self.0.clone();
        Box::pin(async move { Ok(output) })
    }
}

#[tokio::test]
async fn a_journal_that_hands_back_something_else_is_refused_without_a_panic() {
    for output in ["", "not json", "{\"outcome\": 1}", "42", "\u{0}"] {
        let agent = agent(ScriptedModel::default());
        let mut state = agent.start("Tidy up ticket 7.");
        let err = agent
            .run_journaled(&mut state, &ctx(), &Forged(output.into()))
            .await
            .unwrap_err();
        assert!(
            matches!(err, AgentError::Model(_) | AgentError::Response(_)),
            "{output:?}: {err}"
        );
    }
    // A model answer that reads, then calls whose kept outcomes do not: each call's result
    // is an internal error the model reads, and the run goes on.
    struct Mixed(Mutex<usize>);
    impl Journal for Mixed {
        fn step<'a>(
            &'a self,
            _name: String,
            _step: Step<'a>,
        ) -> BoxFuture<'a, Result<String, String>> {
            let n = {
                let mut n = self.0.lock().unwrap();
                *n += 1;
                *n
            };
            let output = match n {
                1 => tool_use(&[("toolu_1", "add_note", json!({"id": 7}))]).to_string(),
                2 => "{\"outcome\": {\"status\": \"maybe\"}}".to_owned(),
                _ => said("Done.").to_string(),
            };
            Box::pin(async move { Ok(output) })
        }
    }
    let agent = agent(ScriptedModel::default());
    let mut state = agent.start("Tidy up ticket 7.");
    let stop = agent
        .run_journaled(&mut state, &ctx(), &Mixed(Mutex::new(0)))
        .await
        .unwrap();
    assert_eq!(stop, Stop::Answered("Done.".into()));
    let history = serde_json::to_string(state.messages()).unwrap();
    assert!(history.contains("internal_error"), "{history}");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 128, ..Default::default() })]

    /// Whatever a journal hands back for a model step or a call step, the run ends with an
    /// answer, a pause or an error, never a panic.
    #[test]
    fn any_kept_output_is_read_without_a_panic(model in ".{0,200}", call in ".{0,200}", json_call in proptest::prelude::any::<bool>()) {
        struct Hostile { model: String, call: String, n: Mutex<usize> }
        impl Journal for Hostile {
            fn step<'a>(&'a self, name: String, _step: Step<'a>) -> BoxFuture<'a, Result<String, String>> {
                let n = { let mut n = self.n.lock().unwrap(); *n += 1; *n };
                let output = match (name.starts_with("model:"), n) {
                    (true, 1) => tool_use(&[("toolu_1", "add_note", json!({"id": 7}))]).to_string(),
                    (true, _) => self.model.clone(),
                    (false, _) => self.call.clone(),
                };
                Box::pin(async move { Ok(output) })
            }
        }
        let call = if json_call { json!({"outcome": {"status": "error", "error": call}}).to_string() } else { call };
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let agent = agent(ScriptedModel::default());
        let mut state = agent.start("Tidy up ticket 7.");
        let journal = Hostile { model, call, n: Mutex::new(0) };
        let _ = runtime.block_on(agent.run_journaled(&mut state, &ctx(), &journal));
    }
}

//! Checkpointed runs in one process: what is kept after each step, a store that fails, a run
//! resumed by id, decisions with who decided and why, and idempotency keys held by a lease.
//! (Runs killed in real processes: tests/crash_matrix.rs.)

#[path = "support/replies.rs"]
mod replies;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use replies::{anthropic_calls as tool_use, anthropic_said as said};
use serde_json::json;
use toolsmith::agent::{Agent, AgentError, RunState, ScriptedModel, Stop, Verdict};
use toolsmith::audit::MemorySink;
use toolsmith::idempotency::IdempotencyPolicy;
use toolsmith::policy::{Approvals, Defaults};
use toolsmith::state::{
    Acquired, CheckpointStore, Fenced, Lease, MemoryCheckpointStore, State, StoreError,
};
use toolsmith::tool::BoxFuture;
use toolsmith::{Dialect, ToolContext, Toolbox, tool};

const ANTHROPIC: Dialect = Dialect::Anthropic { strict: false };
const KEY: &str = "the durable tests' sealing secret, 32 bytes or more";

/// Each deletion, as the ticket deleted.
static DELETED: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// Deletes a ticket. Destructive: it cannot be undone. Not for closing tickets.
#[tool(effect = "destructive")]
fn delete_ticket(
    /// The ticket.
    #[arg(range(max = 100_000))]
    id: u32,
) -> String {
    DELETED.lock().unwrap().push(id);
    format!("deleted {id}")
}

/// Looks a ticket up. Read-only. Not for changing tickets.
#[tool(effect = "read")]
fn look_up(
    /// The ticket.
    #[arg(range(max = 100_000))]
    id: u32,
) -> String {
    format!("ticket {id} is open")
}

/// A checkpoint store that keeps every save (and can be made to fail).
#[derive(Clone, Default)]
struct Recording {
    inner: Arc<MemoryCheckpointStore>,
    saves: Arc<Mutex<Vec<RunState>>>,
    keys: Arc<Mutex<Vec<String>>>,
    down: Arc<Mutex<bool>>,
}

impl CheckpointStore for Recording {
    fn save<'a>(
        &'a self,
        key: &'a str,
        state: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        if *self.down.lock().unwrap() {
            return Box::pin(async { Err(StoreError("the store is down".into())) });
        }
        if let Ok(state) = serde_json::from_str(state) {
            self.saves.lock().unwrap().push(state);
        }
        self.keys.lock().unwrap().push(key.to_owned());
        self.inner.save(key, state, ttl)
    }

    fn load<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        self.inner.load(key)
    }

    fn remove<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        self.inner.remove(key)
    }

    fn acquire<'a>(
        &'a self,
        key: &'a str,
        owner: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Acquired, StoreError>> {
        self.inner.acquire(key, owner, ttl)
    }

    fn renew<'a>(
        &'a self,
        key: &'a str,
        lease: &'a Lease,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.inner.renew(key, lease, ttl)
    }

    fn release<'a>(
        &'a self,
        key: &'a str,
        lease: &'a Lease,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.inner.release(key, lease)
    }

    fn save_fenced<'a>(
        &'a self,
        key: &'a str,
        state: &'a str,
        ttl: Duration,
        fence: u64,
    ) -> BoxFuture<'a, Result<Fenced, StoreError>> {
        if *self.down.lock().unwrap() {
            return Box::pin(async { Err(StoreError("the store is down".into())) });
        }
        if let Ok(state) = serde_json::from_str(state) {
            self.saves.lock().unwrap().push(state);
        }
        self.keys.lock().unwrap().push(key.to_owned());
        self.inner.save_fenced(key, state, ttl, fence)
    }

    fn keep_decision<'a>(
        &'a self,
        key: &'a str,
        call: &'a str,
        decision: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        if *self.down.lock().unwrap() {
            return Box::pin(async { Err(StoreError("the store is down".into())) });
        }
        self.inner.keep_decision(key, call, decision, ttl)
    }

    fn decisions<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Vec<(String, String)>, StoreError>> {
        self.inner.decisions(key)
    }
}

fn toolbox(audit: &Arc<MemorySink>) -> Toolbox {
    Toolbox::new()
        .with(DeleteTicket)
        .with(LookUp)
        .with_approver(Approvals::new())
        .with_audit(Arc::clone(audit))
        .with_state(State::memory().with_key(KEY))
}

#[tokio::test]
async fn a_run_is_kept_after_every_step_that_changes_it() {
    let store = Recording::default();
    let model = ScriptedModel::new([
        tool_use(&[
            ("toolu_1", "look_up", json!({"id": 1})),
            ("toolu_2", "look_up", json!({"id": 2})),
        ]),
        said("Both are open."),
    ]);
    let audit = Arc::new(MemorySink::default());
    let agent = Agent::new(toolbox(&audit), ANTHROPIC, model).with_checkpoints(store.clone());
    let ctx = ToolContext::new()
        .with_principal("ada")
        .with_run_id("run-steps");
    let mut state = agent.start("Look up 1 and 2");
    let stop = agent.run(&mut state, &ctx).await.unwrap();
    assert_eq!(stop, Stop::Answered("Both are open.".into()));
    let saves = store.saves.lock().unwrap().clone();
    // The start; the model's answer; each call's result; the answer at the end.
    let shape: Vec<(u32, u32, usize)> = saves
        .iter()
        .map(|s| (s.turns(), s.calls(), s.messages().len()))
        .collect();
    assert_eq!(
        shape,
        [(0, 0, 1), (1, 0, 2), (1, 1, 2), (1, 2, 2), (2, 2, 4)],
        "{shape:?}"
    );
    // What is kept is the run, sealed: it loads back as the state in hand.
    assert_eq!(agent.load("run-steps", &ctx).await.unwrap(), state);
}

#[tokio::test]
async fn a_store_that_cannot_keep_the_run_stops_it_and_nothing_is_lost() {
    let store = Recording::default();
    let model = ScriptedModel::new([
        tool_use(&[("toolu_1", "look_up", json!({"id": 1}))]),
        said("Open."),
    ]);
    let audit = Arc::new(MemorySink::default());
    let agent =
        Agent::new(toolbox(&audit), ANTHROPIC, model.clone()).with_checkpoints(store.clone());
    let ctx = ToolContext::new()
        .with_principal("ada")
        .with_run_id("run-down");
    let mut state = agent.start("Look up 1");
    *store.down.lock().unwrap() = true;
    let err = agent.run(&mut state, &ctx).await.unwrap_err();
    assert!(matches!(err, AgentError::Checkpoint(_)), "{err}");
    assert!(err.to_string().contains("the store is down"), "{err}");
    // Nothing ran: the model was not asked before the run was kept.
    assert_eq!(model.requests().len(), 0);
    *store.down.lock().unwrap() = false;
    let stop = agent.run(&mut state, &ctx).await.unwrap();
    assert_eq!(stop, Stop::Answered("Open.".into()));
}

#[tokio::test]
async fn a_kept_run_is_its_principal_s_alone_and_cannot_be_edited() {
    let store = Recording::default();
    let model = ScriptedModel::new([tool_use(&[("toolu_1", "delete_ticket", json!({"id": 7}))])]);
    let audit = Arc::new(MemorySink::default());
    let agent = Agent::new(toolbox(&audit), ANTHROPIC, model).with_checkpoints(store.clone());
    let ada = ToolContext::new()
        .with_principal("ada")
        .with_run_id("run-shared-id");
    let mut state = agent.start("Delete ticket 7");
    assert!(matches!(
        agent.run(&mut state, &ada).await.unwrap(),
        Stop::Paused(_)
    ));

    // bo names ada's run id: nothing is there for him, to load, decide on or resume.
    let bo = ToolContext::new()
        .with_principal("bo")
        .with_run_id("run-shared-id");
    let path = vec!["toolu_1".to_owned()];
    assert!(matches!(
        agent.load("run-shared-id", &bo).await,
        Err(AgentError::UnknownRun(_))
    ));
    assert!(matches!(
        agent
            .decide_stored("run-shared-id", &bo, &path, &Verdict::approve())
            .await,
        Err(AgentError::UnknownRun(_))
    ));
    assert!(matches!(
        agent.resume("run-shared-id", &bo).await,
        Err(AgentError::UnknownRun(_))
    ));
    // Starting a run of his own under the same id keeps it apart from hers.
    let other = Agent::new(
        toolbox(&audit),
        ANTHROPIC,
        ScriptedModel::new([said("Nothing to do.")]),
    )
    .with_checkpoints(store.clone());
    let key = store.keys.lock().unwrap().last().unwrap().clone();
    let mut his = other.start("Hello");
    other.run(&mut his, &bo).await.unwrap();
    assert_ne!(store.keys.lock().unwrap().last().unwrap(), &key);
    assert_eq!(agent.load("run-shared-id", &ada).await.unwrap(), state);

    // A decision typed into the stored JSON breaks the seal.
    let mut typed = serde_json::to_value(&state).unwrap();
    typed["awaiting"]["decisions"] = json!([{"call_id": "toolu_1", "denied": null}]);
    store
        .save(&key, &typed.to_string(), Duration::from_secs(60))
        .await
        .unwrap();
    assert!(matches!(
        agent.load("run-shared-id", &ada).await,
        Err(AgentError::Sealed(_))
    ));
    // Something that is no run state at all is refused the same way, without an echo.
    store
        .save(&key, "{\"not\": \"a run\"}", Duration::from_secs(60))
        .await
        .unwrap();
    let err = agent.load("run-shared-id", &ada).await.unwrap_err();
    assert!(matches!(err, AgentError::Sealed(_)), "{err}");
}

#[tokio::test]
async fn a_decision_is_kept_before_anything_else_and_audited_with_who_and_why() {
    let store = Arc::new(MemoryCheckpointStore::default());
    let script = [
        tool_use(&[
            ("toolu_1", "delete_ticket", json!({"id": 31})),
            ("toolu_2", "delete_ticket", json!({"id": 32})),
        ]),
        said("Deleted 31; 32 was kept."),
    ];
    let audit = Arc::new(MemorySink::default());
    let first = Agent::new(
        toolbox(&audit),
        ANTHROPIC,
        ScriptedModel::new(script.clone()),
    )
    .with_checkpoints(Arc::clone(&store));
    let ctx = ToolContext::new()
        .with_principal("ada")
        .with_run_id("run-decided");
    let mut state = first.start("Delete 31 and 32");
    let Stop::Paused(pending) = first.run(&mut state, &ctx).await.unwrap() else {
        panic!("expected a pause");
    };
    assert_eq!(pending.len(), 2);
    // A person decides from a UI process: each decision is kept at once.
    let approve = Verdict::approve()
        .by("lin@example.com")
        .because("31 is a duplicate");
    let deny = Verdict::deny("32 is evidence in an open case").by("lin@example.com");
    first
        .decide_stored("run-decided", &ctx, &pending[0].path, &approve)
        .await
        .unwrap();
    first
        .decide_stored("run-decided", &ctx, &pending[1].path, &deny)
        .await
        .unwrap();
    // Another process resumes from the store.
    let second = Agent::new(
        toolbox(&audit),
        ANTHROPIC,
        ScriptedModel::new(script.clone()),
    )
    .with_checkpoints(Arc::clone(&store));
    let model = ScriptedModel::new([said("Deleted 31; 32 was kept.")]);
    let second = Agent::new(second.toolbox().clone(), ANTHROPIC, model.clone())
        .with_checkpoints(Arc::clone(&store));
    let (_, stop) = second.resume("run-decided", &ctx).await.unwrap();
    assert_eq!(stop, Stop::Answered("Deleted 31; 32 was kept.".into()));
    assert_eq!(
        DELETED
            .lock()
            .unwrap()
            .iter()
            .filter(|&&id| id == 31)
            .count(),
        1
    );
    assert_eq!(
        DELETED
            .lock()
            .unwrap()
            .iter()
            .filter(|&&id| id == 32)
            .count(),
        0
    );
    // The model read the denial's reason.
    let body = model.requests()[0].body.to_string();
    assert!(body.contains("32 is evidence in an open case"), "{body}");
    // Both decisions are in the audit, with who decided and why.
    let records = audit.records();
    let approved = records
        .iter()
        .find(|r| r.tool == "delete_ticket" && r.status == "success")
        .unwrap();
    let note = serde_json::to_value(approved.approval.as_ref().unwrap()).unwrap();
    assert_eq!(
        note,
        json!({"decision": "approved", "approver": "lin@example.com", "reason": "31 is a duplicate"})
    );
    let denied = records
        .iter()
        .find(|r| r.tool == "delete_ticket" && r.error_code == Some("approval_denied"))
        .unwrap();
    let note = serde_json::to_value(denied.approval.as_ref().unwrap()).unwrap();
    assert_eq!(note["decision"], "denied");
    assert_eq!(note["approver"], "lin@example.com");
    assert_eq!(note["reason"], "32 is evidence in an open case");
    // Nothing waits any more, for anyone.
    assert!(second.toolbox().approvals().pending().is_empty());
}

/// Rebuilds a search index. Writes data. Not for queries.
#[tool(effect = "write")]
async fn rebuild_index(
    ctx: &ToolContext,
    /// The index.
    #[arg(length(max = 40))]
    name: String,
) -> String {
    let key = ctx.idempotency_key().unwrap_or_default().to_owned();
    REBUILT.lock().unwrap().push(key);
    tokio::time::sleep(Duration::from_secs(25)).await;
    format!("rebuilt {name}")
}

/// The idempotency key each rebuild ran with.
static REBUILT: Mutex<Vec<String>> = Mutex::new(Vec::new());

#[tokio::test(start_paused = true)]
async fn a_running_call_holds_its_key_by_a_lease_and_a_dead_one_frees_it() {
    let toolbox = Toolbox::new().with(RebuildIndex).with_defaults(Defaults {
        idempotency: IdempotencyPolicy {
            lease: Duration::from_secs(6),
            wait: Duration::from_secs(2),
            ..IdempotencyPolicy::default()
        },
        ..Defaults::default()
    });
    let ctx = ToolContext::new()
        .with_principal("ada")
        .with_run_id("run-lease");
    let args = r#"{"name": "tickets"}"#;
    // A long call renews its lease: at 15 s, past two leases, a duplicate still waits.
    let (first, second) = tokio::join!(toolbox.call("rebuild_index", args, &ctx), async {
        tokio::time::sleep(Duration::from_secs(15)).await;
        toolbox.call("rebuild_index", args, &ctx).await
    });
    assert!(first.is_success(), "{}", first.to_json());
    assert_eq!(second.error().unwrap().code().as_str(), "in_progress");
    assert_eq!(REBUILT.lock().unwrap().len(), 1);
    // The same call in a process that dies (its future dropped mid-run) keeps the key until
    // its lease runs out; after it, the call runs again with the same key.
    let ctx = ctx.with_run_id("run-lease-2");
    let died = tokio::time::timeout(
        Duration::from_secs(1),
        toolbox.call("rebuild_index", args, &ctx),
    )
    .await;
    assert!(died.is_err());
    let soon = toolbox.call("rebuild_index", args, &ctx).await;
    assert_eq!(soon.error().unwrap().code().as_str(), "in_progress");
    tokio::time::sleep(Duration::from_secs(6)).await;
    let again = toolbox.call("rebuild_index", args, &ctx).await;
    assert!(again.is_success(), "{}", again.to_json());
    let keys = REBUILT.lock().unwrap().clone();
    assert_eq!(keys.len(), 3);
    assert_eq!(
        keys[1], keys[2],
        "the call made again runs with the same key"
    );
    assert_ne!(keys[0], keys[1]);
}

#[tokio::test]
async fn a_checkpoint_taken_mid_batch_keeps_a_waiting_delegated_agent() {
    use toolsmith::agent::AgentTool;
    let store = Recording::default();
    let audit = Arc::new(MemorySink::default());
    // The child deletes a ticket, which waits for a person. Its model takes a moment to
    // answer, so the parent's own deletion is answered first in the resumed batch.
    struct Slow(ScriptedModel);
    impl toolsmith::agent::ModelClient for Slow {
        fn complete<'a>(
            &'a self,
            request: &'a toolsmith::agent::ModelRequest,
        ) -> BoxFuture<'a, Result<serde_json::Value, toolsmith::agent::ModelError>> {
            Box::pin(async move {
                tokio::time::sleep(Duration::from_millis(20)).await;
                self.0.complete(request).await
            })
        }
    }
    let child = Agent::new(
        toolbox(&audit),
        ANTHROPIC,
        Slow(ScriptedModel::new([
            tool_use(&[("toolu_c1", "delete_ticket", json!({"id": 41}))]),
            said("Child done."),
        ])),
    );
    let helper = AgentTool::new(
        "helper",
        "Tidies tickets for a task. Deletes tickets. Not for reading them.",
        child,
    );
    // The parent's one turn: its own deletion and the helper, both waiting for a person.
    let parent = Agent::new(
        toolbox(&audit).with(helper),
        ANTHROPIC,
        ScriptedModel::new([
            tool_use(&[
                ("toolu_p1", "delete_ticket", json!({"id": 42})),
                ("toolu_p2", "helper", json!({"task": "delete 41"})),
            ]),
            said("All done."),
        ]),
    )
    .with_checkpoints(store.clone());
    let ctx = ToolContext::new()
        .with_principal("ada")
        .with_run_id("run-mid-batch");
    let mut state = parent.start("Tidy up");
    let Stop::Paused(pending) = parent.run(&mut state, &ctx).await.unwrap() else {
        panic!("expected a pause");
    };
    assert_eq!(pending.len(), 2);
    for p in &pending {
        parent.approve(&mut state, &p.path).unwrap();
    }
    let before = store.saves.lock().unwrap().len();
    let stop = parent.run(&mut state, &ctx).await.unwrap();
    assert_eq!(stop, Stop::Answered("All done.".into()));
    // The first checkpoint of the resumed batch, taken when the parent's own deletion was
    // answered, still holds the helper's waiting child: a crash there resumes the child.
    let saves = store.saves.lock().unwrap();
    let first = serde_json::to_value(&saves[before]).unwrap();
    assert!(
        first["awaiting"]["children"].get("toolu_p2").is_some(),
        "{}",
        first["awaiting"]
    );
}

/// The key the run of `ctx` is kept under, as a store sees it.
async fn key_of_run(ctx: &ToolContext) -> String {
    let recording = Recording::default();
    let probe = Agent::new(
        Toolbox::new().with_state(State::memory().with_key(KEY)),
        ANTHROPIC,
        ScriptedModel::new([said("x")]),
    )
    .with_checkpoints(recording.clone());
    probe.run(&mut probe.start("x"), ctx).await.unwrap();
    recording.keys.lock().unwrap()[0].clone()
}

/// A paused run's checkpoint, its store, and its agent: the seed of the hostile cases below.
fn kept_paused_run() -> (
    Agent,
    Arc<MemoryCheckpointStore>,
    String,
    ToolContext,
    String,
) {
    let store = Arc::new(MemoryCheckpointStore::default());
    let audit = Arc::new(MemorySink::default());
    let agent = Agent::new(
        toolbox(&audit),
        ANTHROPIC,
        ScriptedModel::new([tool_use(&[("toolu_1", "delete_ticket", json!({"id": 9}))])]),
    )
    .with_checkpoints(Arc::clone(&store));
    let ctx = ToolContext::new()
        .with_principal("ada")
        .with_run_id("run-hostile");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (text, token) = runtime.block_on(async {
        let mut state = agent.start("Delete 9");
        let Stop::Paused(pending) = agent.run(&mut state, &ctx).await.unwrap() else {
            panic!("expected a pause");
        };
        (
            serde_json::to_string(&state).unwrap(),
            pending[0].token.clone(),
        )
    });
    (agent, store, text, ctx, token)
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, ..Default::default() })]

    /// Whatever a store hands back under a run's key (a checkpoint with bytes changed, cut
    /// short, or anything at all) is refused with an error, never a panic, and never taken as
    /// the run; a decision token changed anywhere is refused the same way.
    #[test]
    fn hostile_checkpoints_and_tokens_are_refused(
        at in 0usize..4096,
        byte in proptest::prelude::any::<u8>(),
        cut in 0usize..4096,
        junk in ".{0,200}",
    ) {
        let (agent, store, text, ctx, token) = kept_paused_run();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        // The key the run is kept under: the only one in the store.
        let key = runtime.block_on(key_of_run(&ctx));
        let mut changed = text.clone().into_bytes();
        let i = at % changed.len();
        if changed[i] != byte {
            changed[i] = byte;
            let changed = String::from_utf8_lossy(&changed).into_owned();
            let shortened: String = text.chars().take(cut % text.len()).collect();
            for hostile in [changed, shortened, junk.clone()] {
                runtime.block_on(store.save(&key, &hostile, Duration::from_secs(60))).unwrap();
                let loaded = runtime.block_on(agent.load("run-hostile", &ctx));
                proptest::prop_assert!(loaded.is_err(), "{hostile:.80}");
            }
        }
        // The token changed in one place, or made up.
        let mut forged = token.clone().into_bytes();
        let j = at % forged.len();
        forged[j] = if forged[j] == b'0' { b'1' } else { b'0' };
        for bad in [String::from_utf8_lossy(&forged).into_owned(), junk] {
            let decided = runtime.block_on(agent.decide_signed_stored(&bad, &Verdict::approve()));
            proptest::prop_assert!(decided.is_err());
        }
    }
}

/// A field's name edited in the store (`"parallel"` made `"#arallel"`) reads as a state
/// without it, which the seal alone would take, since the field's default is what was
/// sealed: the load refuses what it would have dropped.
#[test]
fn a_checkpoint_with_a_field_renamed_in_the_store_is_refused() {
    let (agent, store, text, ctx, _) = kept_paused_run();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let key = runtime.block_on(key_of_run(&ctx));
    assert!(runtime.block_on(agent.load("run-hostile", &ctx)).is_ok());
    for (from, to) in [
        ("\"parallel\"", "\"#arallel\""),
        ("{\"choice\"", "{\"extra\":1,\"choice\""),
    ] {
        assert!(text.contains(from), "{text}");
        let edited = text.replacen(from, to, 1);
        runtime
            .block_on(store.save(&key, &edited, Duration::from_secs(60)))
            .unwrap();
        let loaded = runtime.block_on(agent.load("run-hostile", &ctx));
        assert!(
            matches!(loaded, Err(AgentError::Sealed(_))),
            "{from} → {to}: {loaded:?}"
        );
    }
}

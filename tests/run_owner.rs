//! One owner per run: the lease and its fencing token, workers racing on one run, people
//! deciding while a worker resumes it, and workers that die between a call's effect, its
//! stored result and its audit record. Each scenario runs on the in-memory stores and on a
//! real `redis-server` (started on 127.0.0.1 with a free port; skipped with a note when
//! none is installed and `TOOLSMITH_REQUIRE_REDIS` is unset).

#[path = "support/replies.rs"]
mod replies;

#[path = "support/redis.rs"]
mod redis_server;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis_server::RedisServer;
use replies::{anthropic_calls as tool_use, anthropic_said as said};
use serde_json::{Value, json};
use toolsmith::agent::{Agent, AgentError, RunState, ScriptedModel, Stop, Verdict};
use toolsmith::audit::{AuditRecord, AuditSink, MemorySink};
use toolsmith::state::{
    Acquired, CheckpointStore, Fenced, Lease, MemoryCheckpointStore, RedisStore, State,
};
use toolsmith::{Dialect, ToolContext, Toolbox, tool};

const ANTHROPIC: Dialect = Dialect::Anthropic { strict: false };
const KEY: &str = "the run owner tests' sealing secret, 32 bytes or more";

/// What the deletions did: each run of the tool, with the idempotency key it was given.
#[derive(Clone, Default)]
struct Effects {
    ran: Arc<Mutex<Vec<String>>>,
    /// When set, the tool's `n`th run stops after its effect and never returns (its worker
    /// is killed there).
    hang_after: Arc<Mutex<Option<usize>>>,
    started: Arc<tokio::sync::Notify>,
}

impl Effects {
    /// Distinct effects: the system written to takes the key, so a repeat is not a second one.
    fn distinct(&self) -> usize {
        self.ran
            .lock()
            .unwrap()
            .iter()
            .collect::<BTreeSet<_>>()
            .len()
    }

    fn runs(&self) -> usize {
        self.ran.lock().unwrap().len()
    }
}

/// Deletes a ticket. Destructive: it cannot be undone. Not for closing tickets.
#[tool(effect = "destructive")]
async fn delete_ticket(
    ctx: &ToolContext,
    /// The ticket.
    #[arg(range(max = 100_000))]
    id: u32,
) -> String {
    if let Some(effects) = ctx.get::<Effects>() {
        let n = {
            let mut ran = effects.ran.lock().unwrap();
            ran.push(ctx.idempotency_key().unwrap_or_default().to_owned());
            ran.len()
        };
        effects.started.notify_one();
        if *effects.hang_after.lock().unwrap() == Some(n) {
            std::future::pending::<()>().await;
        }
    }
    format!("deleted {id}")
}

/// Sends a receipt. Writes data. Not for deleting.
#[tool(effect = "write", idempotent)]
async fn send_receipt(
    /// The ticket.
    #[arg(range(max = 100_000))]
    id: u32,
) -> String {
    tokio::time::sleep(Duration::from_millis(20)).await;
    format!("receipt for {id} sent")
}

/// The stores a scenario runs on.
#[derive(Clone)]
struct Stores {
    name: &'static str,
    checkpoints: Arc<dyn CheckpointStore>,
    state: State,
}

fn memory() -> Stores {
    Stores {
        name: "memory",
        checkpoints: Arc::new(MemoryCheckpointStore::default()),
        state: State::memory().with_key(KEY).with_approvals(),
    }
}

fn redis(server: &RedisServer) -> Stores {
    let store = Arc::new(RedisStore::open(&server.url).unwrap());
    Stores {
        name: "redis",
        checkpoints: store.clone(),
        state: State::shared(store).with_key(KEY).with_approvals(),
    }
}

/// Runs `scenario` on memory, then on Redis when a server can be had.
async fn on_each<F, Fut>(scenario: F)
where
    F: Fn(Stores) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    scenario(memory()).await;
    match RedisServer::start() {
        Some(server) => scenario(redis(&server)).await,
        None => eprintln!("redis-server is not installed: the Redis half was skipped"),
    }
}

/// A worker: the same tools, key, stores and audit as every other, its own model.
fn worker(stores: &Stores, model: ScriptedModel, audit: &Arc<dyn AuditSink>) -> Agent {
    let toolbox = Toolbox::new()
        .with(DeleteTicket)
        .with(SendReceipt)
        .with_audit(Arc::clone(audit))
        .with_state(stores.state.clone());
    Agent::new(toolbox, ANTHROPIC, model)
        .with_checkpoints(Arc::clone(&stores.checkpoints))
        .with_lease(Duration::from_millis(300))
}

/// The script of a run: delete a ticket (a person approves), send a receipt, answer.
fn script(id: u32) -> Vec<Value> {
    vec![
        tool_use(&[("toolu_del", "delete_ticket", json!({"id": id}))]),
        tool_use(&[("toolu_rcpt", "send_receipt", json!({"id": id}))]),
        said("Deleted and receipted."),
    ]
}

fn ctx(run: &str, effects: &Effects) -> ToolContext {
    ToolContext::new()
        .with_principal("ada")
        .with_run_id(run)
        .with_extension(effects.clone())
}

/// Starts run `run` until it waits for the deletion's approval.
async fn paused(agent: &Agent, ctx: &ToolContext) -> Vec<String> {
    let mut state = agent.start("Delete the ticket and send a receipt");
    match agent.run(&mut state, ctx).await.unwrap() {
        Stop::Paused(pending) => pending[0].path.clone(),
        other => panic!("expected a pause, got {other:?}"),
    }
}

/// Every call in the transcript is followed by its result.
fn paired(state: &RunState) -> bool {
    let mut calls = BTreeSet::new();
    let mut results = BTreeSet::new();
    for message in state.messages() {
        for part in message["content"].as_array().into_iter().flatten() {
            match part["type"].as_str() {
                Some("tool_use") => {
                    calls.insert(part["id"].as_str().unwrap_or_default().to_owned());
                }
                Some("tool_result") => {
                    results.insert(part["tool_use_id"].as_str().unwrap_or_default().to_owned());
                }
                _ => {}
            }
        }
    }
    calls == results
}

/// Every record of the deletion that ran names who approved it, and there is one.
fn audited_with_approver(sink: &MemorySink) -> bool {
    let records = sink.records();
    let ran: Vec<&AuditRecord> = records
        .iter()
        .filter(|r| r.tool == "delete_ticket" && r.error_code.is_none())
        .collect();
    !ran.is_empty()
        && ran.iter().all(|r| {
            r.approval
                .as_ref()
                .is_some_and(|note| note.approver.as_deref() == Some("lin"))
        })
}

/// Whether the model was ever told a call is still running.
fn told_in_progress(state: &RunState) -> bool {
    serde_json::to_string(state.messages())
        .unwrap()
        .contains("in_progress")
}

#[tokio::test]
async fn the_lease_fences_every_write_of_a_worker_that_lost_it() {
    on_each(|stores| async move {
        let store = &stores.checkpoints;
        let key = format!("fence-{}", stores.name);
        let ttl = Duration::from_millis(150);
        let Acquired::Taken(first) = store.acquire(&key, "w1", ttl).await.unwrap() else {
            panic!("{}: a free run is taken", stores.name);
        };
        // Held: the next worker is told how long the lease has left.
        match store.acquire(&key, "w2", ttl).await.unwrap() {
            Acquired::Busy { expires_in } => assert!(expires_in <= ttl, "{expires_in:?}"),
            other => panic!("{}: {other:?}", stores.name),
        }
        assert_eq!(
            store
                .save_fenced(&key, "{\"v\":1}", Duration::from_secs(60), first.fence)
                .await,
            Ok(Fenced::Kept)
        );
        // The first worker stalls past its lease; the second takes over with a newer token.
        tokio::time::sleep(ttl + Duration::from_millis(50)).await;
        let Acquired::Taken(second) = store.acquire(&key, "w2", ttl).await.unwrap() else {
            panic!("{}: an expired lease is taken over", stores.name);
        };
        assert!(second.fence > first.fence);
        // The first worker wakes: it cannot renew, and its write is refused.
        assert_eq!(store.renew(&key, &first, ttl).await, Ok(false));
        assert_eq!(
            store
                .save_fenced(
                    &key,
                    "{\"v\":\"stale\"}",
                    Duration::from_secs(60),
                    first.fence
                )
                .await,
            Ok(Fenced::Stale)
        );
        assert_eq!(
            store.load(&key).await.unwrap().as_deref(),
            Some("{\"v\":1}")
        );
        assert_eq!(
            store
                .save_fenced(&key, "{\"v\":2}", Duration::from_secs(60), second.fence)
                .await,
            Ok(Fenced::Kept)
        );
        // Renewed, it holds; a stale holder's release does not free it; given up, the next
        // worker takes it at once.
        assert_eq!(store.renew(&key, &second, ttl).await, Ok(true));
        store.release(&key, &first).await.unwrap();
        assert!(matches!(
            store.acquire(&key, "w3", ttl).await.unwrap(),
            Acquired::Busy { .. }
        ));
        store.release(&key, &second).await.unwrap();
        let Acquired::Taken(third) = store.acquire(&key, "w3", ttl).await.unwrap() else {
            panic!("{}: a released run is taken at once", stores.name);
        };
        assert!(third.fence > second.fence);
        let forged = Lease::new("w3", third.fence - 1);
        assert_eq!(store.renew(&key, &forged, ttl).await, Ok(false));
        // Decisions are kept beside the checkpoint, and no save writes over them.
        store
            .keep_decision(&key, "toolu_1", "d1", Duration::from_secs(60))
            .await
            .unwrap();
        store
            .save_fenced(&key, "{\"v\":3}", Duration::from_secs(60), third.fence)
            .await
            .unwrap();
        store
            .save(&key, "{\"v\":4}", Duration::from_secs(60))
            .await
            .unwrap();
        assert_eq!(
            store.decisions(&key).await.unwrap(),
            [("toolu_1".to_owned(), "d1".to_owned())]
        );
        store.remove(&key).await.unwrap();
        assert!(store.decisions(&key).await.unwrap().is_empty());
        // The counter outlives the checkpoint: a token is never given out twice.
        store.release(&key, &third).await.unwrap();
        let Acquired::Taken(fourth) = store.acquire(&key, "w4", ttl).await.unwrap() else {
            panic!();
        };
        assert!(fourth.fence > third.fence);
    })
    .await;
}

#[tokio::test]
async fn a_second_worker_is_told_the_run_is_busy_or_waits_for_it() {
    on_each(|stores| async move {
        let sink = Arc::new(MemorySink::default());
        let audit: Arc<dyn AuditSink> = sink.clone();
        let effects = Effects::default();
        let run = format!("busy-{}", stores.name);
        let ctx = ctx(&run, &effects);
        let models: Vec<ScriptedModel> =
            (0..3).map(|_| ScriptedModel::by_turn(script(1))).collect();
        let first = worker(&stores, models[0].clone(), &audit);
        let path = paused(&first, &ctx).await;
        first
            .decide_stored(&run, &ctx, &path, &Verdict::approve().by("lin"))
            .await
            .unwrap();
        // The first worker resumes and stops inside the deletion, holding the run.
        *effects.hang_after.lock().unwrap() = Some(1);
        let holder = {
            let (first, ctx, run) = (first.clone(), ctx.clone(), run.clone());
            tokio::spawn(async move { first.resume(&run, &ctx).await })
        };
        effects.started.notified().await;
        let second = worker(&stores, models[1].clone(), &audit);
        match second.resume(&run, &ctx).await {
            Err(AgentError::Busy { retry_after }) => {
                assert!(retry_after <= Duration::from_millis(300), "{retry_after:?}");
                let said = AgentError::Busy { retry_after }.to_string();
                assert!(said.contains("try again in"), "{said}");
            }
            other => panic!("{}: expected busy, got {other:?}", stores.name),
        }
        // The holder dies. A worker that waits longer than the lease takes the run over and
        // finishes it: the approved deletion goes on under its decision and its key.
        holder.abort();
        let third =
            worker(&stores, models[2].clone(), &audit).with_busy_wait(Duration::from_secs(5));
        let (state, stop) = third.resume(&run, &ctx).await.unwrap();
        assert_eq!(
            stop,
            Stop::Answered("Deleted and receipted.".into()),
            "{}",
            stores.name
        );
        assert_eq!(effects.distinct(), 1, "{}: one deletion", stores.name);
        assert!(paired(&state));
        assert!(
            !told_in_progress(&state),
            "{}: a dead call reported running",
            stores.name
        );
        assert!(audited_with_approver(&sink), "{}", stores.name);
        // The uninterrupted run asks three times; one kill costs at most one more.
        let asked: usize = models.iter().map(|m| m.requests().len()).sum();
        assert!(asked <= 3 + 1, "{}: {asked} model requests", stores.name);
    })
    .await;
}

#[tokio::test]
async fn racing_resumers_run_a_run_once() {
    on_each(|stores| async move {
        for workers in 2..=4 {
            let sink = Arc::new(MemorySink::default());
            let audit: Arc<dyn AuditSink> = sink.clone();
            let effects = Effects::default();
            let run = format!("race-{}-{workers}", stores.name);
            let ctx = ctx(&run, &effects);
            let starter = worker(&stores, ScriptedModel::by_turn(script(2)), &audit);
            let path = paused(&starter, &ctx).await;
            starter
                .decide_stored(&run, &ctx, &path, &Verdict::approve().by("lin"))
                .await
                .unwrap();
            let models: Vec<ScriptedModel> = (0..workers)
                .map(|_| ScriptedModel::by_turn(script(2)))
                .collect();
            let tasks: Vec<_> = models
                .iter()
                .map(|model| {
                    let agent = worker(&stores, model.clone(), &audit)
                        .with_busy_wait(Duration::from_secs(10));
                    let (ctx, run) = (ctx.clone(), run.clone());
                    tokio::spawn(async move { agent.resume(&run, &ctx).await })
                })
                .collect();
            for task in tasks {
                let (state, stop) = task.await.unwrap().unwrap();
                assert_eq!(stop, Stop::Answered("Deleted and receipted.".into()));
                assert!(paired(&state), "{}: a call without its result", stores.name);
            }
            // The run asked the model for its two remaining turns once, whoever asked.
            let asked: usize = models.iter().map(|m| m.requests().len()).sum();
            assert_eq!(
                asked, 2,
                "{}: {workers} workers asked {asked} times",
                stores.name
            );
            assert_eq!(effects.runs(), 1, "{}", stores.name);
            assert!(audited_with_approver(&sink), "{}", stores.name);
        }
    })
    .await;
}

#[tokio::test]
async fn a_decision_made_while_a_worker_resumes_is_never_lost_nor_asked_again() {
    on_each(|stores| async move {
        let mut asked_twice = 0;
        for round in 0..25u32 {
            let sink = Arc::new(MemorySink::default());
            let audit: Arc<dyn AuditSink> = sink.clone();
            let effects = Effects::default();
            let run = format!("decide-{}-{round}", stores.name);
            let ctx = ctx(&run, &effects);
            let model = ScriptedModel::by_turn(script(3));
            let agent =
                worker(&stores, model.clone(), &audit).with_busy_wait(Duration::from_secs(5));
            let path = paused(&agent, &ctx).await;
            // A worker that loaded the run a moment ago, and a person deciding from a page.
            let mut loaded = agent.load(&run, &ctx).await.unwrap();
            let decided = Arc::new(AtomicUsize::new(0));
            let resumer = {
                let (agent, ctx, decided) = (agent.clone(), ctx.clone(), Arc::clone(&decided));
                tokio::spawn(async move {
                    for _ in 0..round % 4 {
                        tokio::task::yield_now().await;
                    }
                    let seen = decided.load(Ordering::SeqCst);
                    let stop = agent.run(&mut loaded, &ctx).await.unwrap();
                    (seen, stop)
                })
            };
            for _ in 0..(round / 4) % 4 {
                tokio::task::yield_now().await;
            }
            agent
                .decide_stored(&run, &ctx, &path, &Verdict::approve().by("lin"))
                .await
                .unwrap();
            decided.store(1, Ordering::SeqCst);
            let (seen, stop) = resumer.await.unwrap();
            if matches!(stop, Stop::Paused(_)) && seen == 1 {
                asked_twice += 1;
            }
            // Every resume after the decision finds it.
            let (state, stop) = agent.resume(&run, &ctx).await.unwrap();
            assert_eq!(
                stop,
                Stop::Answered("Deleted and receipted.".into()),
                "{} round {round}",
                stores.name
            );
            assert_eq!(effects.runs(), 1);
            assert!(paired(&state));
            assert!(!told_in_progress(&state));
            assert!(
                audited_with_approver(&sink),
                "{} round {round}",
                stores.name
            );
            // Three turns, and at most one asked again by a resume that paused.
            assert!(model.requests().len() <= 4, "{}", model.requests().len());
        }
        assert_eq!(asked_twice, 0, "{}", stores.name);
    })
    .await;
}

/// A sink that dies (its worker's task panics) the first time it is handed the approved
/// deletion's record: the call's result is stored, its record never written.
#[derive(Default)]
struct DiesOnce {
    /// Already dead (or never to die): records are kept.
    died: Mutex<bool>,
    kept: MemorySink,
}

impl AuditSink for DiesOnce {
    fn record(&self, record: &AuditRecord) {
        if record.tool == "delete_ticket" && record.status == "success" {
            let mut died = self.died.lock().unwrap();
            if !*died {
                *died = true;
                drop(died);
                panic!("the worker dies before the audit record is written");
            }
        }
        self.kept.record(record);
    }
}

#[tokio::test]
async fn a_worker_that_dies_after_the_effect_never_asks_again_and_the_audit_names_the_approver() {
    on_each(|stores| async move {
        for desk in [false, true] {
            for death in ["inside", "before_audit"] {
                let sink = Arc::new(DiesOnce::default());
                // Only the worker killed before the audit dies in its sink.
                *sink.died.lock().unwrap() = death != "before_audit";
                let audit: Arc<dyn AuditSink> = sink.clone();
                let effects = Effects::default();
                let run = format!("dies-{}-{desk}-{death}", stores.name);
                let ctx = ctx(&run, &effects);
                let model = ScriptedModel::by_turn(script(4));
                let agent =
                    worker(&stores, model.clone(), &audit).with_busy_wait(Duration::from_secs(5));
                let path = paused(&agent, &ctx).await;
                let approve = Verdict::approve().by("lin").because("a duplicate");
                if desk {
                    // The approvals desk: the request as the store lists it.
                    let waiting = agent
                        .toolbox()
                        .approvals()
                        .waiting_for(Some("ada"))
                        .await
                        .unwrap();
                    assert_eq!(waiting.len(), 1);
                    agent
                        .toolbox()
                        .approvals()
                        .decide_token(&waiting[0].token, &approve)
                        .await
                        .unwrap();
                } else {
                    agent
                        .decide_stored(&run, &ctx, &path, &approve)
                        .await
                        .unwrap();
                }
                if death == "inside" {
                    *effects.hang_after.lock().unwrap() = Some(1);
                }
                let dying = {
                    let (agent, ctx, run) = (agent.clone(), ctx.clone(), run.clone());
                    tokio::spawn(async move { agent.resume(&run, &ctx).await })
                };
                if death == "inside" {
                    effects.started.notified().await;
                    dying.abort();
                }
                assert!(dying.await.is_err(), "the worker died");
                let (state, stop) = agent.resume(&run, &ctx).await.unwrap();
                let label = format!("{} desk={desk} {death}", stores.name);
                assert_eq!(
                    stop,
                    Stop::Answered("Deleted and receipted.".into()),
                    "{label}"
                );
                assert_eq!(effects.distinct(), 1, "{label}: one deletion");
                assert!(paired(&state), "{label}");
                assert!(!told_in_progress(&state), "{label}");
                assert!(
                    model.requests().len() <= 3 + 1,
                    "{label}: {}",
                    model.requests().len()
                );
                let records = sink.kept.records();
                let deletions: Vec<&AuditRecord> = records
                    .iter()
                    .filter(|r| r.tool == "delete_ticket" && r.error_code.is_none())
                    .collect();
                assert!(!deletions.is_empty(), "{label}: the deletion is audited");
                for record in deletions {
                    let note = record
                        .approval
                        .as_ref()
                        .expect("the decision is in the record");
                    assert_eq!(note.approver.as_deref(), Some("lin"), "{label}");
                    assert_eq!(note.reason.as_deref(), Some("a duplicate"), "{label}");
                }
                assert!(
                    agent
                        .toolbox()
                        .approvals()
                        .waiting_for(Some("ada"))
                        .await
                        .unwrap()
                        .is_empty(),
                    "{label}: nothing waits"
                );
            }
        }
    })
    .await;
}

#[tokio::test]
async fn load_says_what_it_found() {
    on_each(|stores| async move {
        let audit: Arc<dyn AuditSink> = Arc::new(MemorySink::default());
        let effects = Effects::default();
        let agent = worker(&stores, ScriptedModel::by_turn(script(5)), &audit);
        let a = ctx(&format!("load-a-{}", stores.name), &effects);
        paused(&agent, &a).await;
        // Nothing kept: unknown, the one answer after which starting afresh is right.
        let b_id = format!("load-b-{}", stores.name);
        let b = ctx(&b_id, &effects);
        assert!(matches!(
            agent.load(&b_id, &b).await,
            Err(AgentError::UnknownRun(_))
        ));
        // Another principal's run is unknown to this one.
        let bo = ToolContext::new().with_principal("bo");
        assert!(matches!(
            agent.load(&format!("load-a-{}", stores.name), &bo).await,
            Err(AgentError::UnknownRun(_))
        ));
        // Run a's checkpoint copied under run b's key: refused, not unknown.
        let state = agent
            .load(&format!("load-a-{}", stores.name), &a)
            .await
            .unwrap();
        let b_key = run_key("ada", &b_id);
        stores
            .checkpoints
            .save(
                &b_key,
                &serde_json::to_string(&state).unwrap(),
                Duration::from_secs(60),
            )
            .await
            .unwrap();
        match agent.load(&b_id, &b).await {
            Err(AgentError::Sealed(why)) => assert!(why.contains("another run"), "{why}"),
            other => panic!("{other:?}"),
        }
        // Starting a new run under an id that is kept is refused: the kept run is resumed.
        let mut fresh = agent.start("again");
        assert!(matches!(
            agent.run(&mut fresh, &a).await,
            Err(AgentError::NotOwner(_))
        ));
    })
    .await;
}

/// The store's key of `principal`'s run `run`, as the agent derives it.
fn run_key(principal: &str, run: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    hash.update(b"toolsmith checkpoint\n");
    hash.update([1]);
    hash.update((principal.len() as u64).to_be_bytes());
    hash.update(principal.as_bytes());
    hash.update((run.len() as u64).to_be_bytes());
    hash.update(run.as_bytes());
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn a_kept_run_goes_on_a_runtime_without_timers() {
    // No `enable_time`: the lease is not renewed and a busy run is waited for by yielding,
    // never a panic.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        let stores = memory();
        let audit: Arc<dyn AuditSink> = Arc::new(MemorySink::default());
        let effects = Effects::default();
        let run = "no-timers";
        let ctx = ctx(run, &effects);
        let agent = worker(&stores, ScriptedModel::by_turn(script(6)), &audit);
        let path = paused(&agent, &ctx).await;
        agent
            .decide_stored(run, &ctx, &path, &Verdict::approve().by("lin"))
            .await
            .unwrap();
        let (_, stop) = agent.resume(run, &ctx).await.unwrap();
        assert_eq!(stop, Stop::Answered("Deleted and receipted.".into()));
        assert_eq!(effects.runs(), 1);
    });
}

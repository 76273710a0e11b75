//! Approvals as records with a lifecycle: pending, approved, denied, expired; who decided and
//! why, in the record and in the audit; an expiry per tool; bound to the run; decisions that
//! travel through a UI signed, and refused when forged or altered.

#[path = "support/redis.rs"]
mod redis_server;
#[path = "support/replies.rs"]
mod replies;

use std::sync::Arc;
use std::time::Duration;

use replies::{anthropic_calls, anthropic_said};
use serde_json::json;
use toolsmith::agent::{Agent, AgentError, ScriptedModel, Stop};
use toolsmith::audit::MemorySink;
use toolsmith::policy::{ApprovalError, ApprovalStatus, Approvals, Verdict};
use toolsmith::state::{MemoryCheckpointStore, State};
use toolsmith::{Dialect, ToolContext, Toolbox, tool};

/// Deletes a file. Destructive: it cannot be undone. Not for moving files.
#[tool(effect = "destructive")]
fn delete_file(
    /// The file's path.
    #[arg(length(max = 200))]
    path: String,
) -> String {
    format!("deleted {path}")
}

/// Wires money. Destructive: it cannot be undone. Not for refunds.
#[tool(effect = "destructive")]
fn wire_money(
    /// The amount in cents.
    #[arg(range(max = 1_000_000))]
    cents: u64,
) -> String {
    format!("wired {cents}")
}

const KEY: &str = "the approval tests' sealing secret, 32 bytes or more";

fn toolbox(approvals: &Approvals, audit: &Arc<MemorySink>) -> Toolbox {
    Toolbox::new()
        .with(DeleteFile)
        .with(WireMoney)
        .with_approver(approvals.clone())
        .with_audit(Arc::clone(audit))
        .with_state(State::memory().with_key(KEY))
}

/// The approval notes of the audited calls, in order, as JSON.
fn notes(audit: &MemorySink) -> Vec<serde_json::Value> {
    audit
        .records()
        .iter()
        .filter_map(|r| r.approval.clone())
        .map(|n| serde_json::to_value(n).unwrap())
        .collect()
}

fn ctx(run: &str) -> ToolContext {
    ToolContext::new().with_principal("ada").with_run_id(run)
}

#[tokio::test]
async fn a_request_goes_from_pending_to_decided_with_who_and_why_in_the_audit() {
    let approvals = Approvals::new();
    let audit = Arc::new(MemorySink::default());
    let toolbox = toolbox(&approvals, &audit);
    let run = ctx("run-records");
    let args = |p: &str| json!({ "path": p });
    for path in ["/tmp/a", "/tmp/b"] {
        let asked = toolbox.call("delete_file", args(path), &run).await;
        assert_eq!(asked.error().unwrap().code().as_str(), "approval_required");
    }
    let waiting = approvals.pending_for(Some("ada"));
    assert_eq!(waiting.len(), 2);
    assert!(
        waiting
            .iter()
            .all(|p| p.status == ApprovalStatus::Pending && p.expires_at.is_some())
    );
    assert_eq!(waiting[0].run_id.as_deref(), Some("run-records"));
    approvals.decide(
        &waiting[0],
        &Verdict::approve().by("lin").because("a temp file"),
    );
    approvals.decide(&waiting[1], &Verdict::deny("b is still in use").by("lin"));
    let records = approvals.records_for(Some("ada"));
    let statuses: Vec<_> = records.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [ApprovalStatus::Approved, ApprovalStatus::Denied]);
    assert_eq!(records[0].approver.as_deref(), Some("lin"));
    assert_eq!(records[0].reason.as_deref(), Some("a temp file"));
    assert!(records[0].decided_at.is_some());
    assert!(approvals.pending().is_empty());

    let ran = toolbox.call("delete_file", args("/tmp/a"), &run).await;
    assert!(ran.is_success(), "{}", ran.to_json());
    let refused = toolbox.call("delete_file", args("/tmp/b"), &run).await;
    assert!(refused.to_json().contains("b is still in use"));
    let notes = notes(&audit);
    assert_eq!(
        notes,
        [
            json!({"decision": "approved", "approver": "lin", "reason": "a temp file"}),
            json!({"decision": "denied", "approver": "lin", "reason": "b is still in use"}),
        ]
    );
}

#[tokio::test]
async fn a_decision_is_bound_to_its_run() {
    let approvals = Approvals::new();
    let audit = Arc::new(MemorySink::default());
    let toolbox = toolbox(&approvals, &audit);
    let args = json!({"path": "/tmp/run-bound"});
    toolbox.call("delete_file", &args, &ctx("run-one")).await;
    approvals.approve(&approvals.pending()[0]);
    // The same principal's identical call in another run waits for its own decision.
    let other = toolbox.call("delete_file", &args, &ctx("run-two")).await;
    assert_eq!(other.error().unwrap().code().as_str(), "approval_required");
    let ran = toolbox.call("delete_file", &args, &ctx("run-one")).await;
    assert!(ran.is_success(), "{}", ran.to_json());
}

#[tokio::test]
async fn each_tool_can_have_its_own_expiry() {
    let approvals = Approvals::new()
        .with_ttl(Duration::from_secs(3600))
        .with_ttl_for("wire_money", Duration::from_millis(1));
    let audit = Arc::new(MemorySink::default());
    let toolbox = toolbox(&approvals, &audit);
    let run = ctx("run-expiry");
    toolbox
        .call("wire_money", json!({"cents": 500}), &run)
        .await;
    toolbox
        .call("delete_file", json!({"path": "/tmp/slow"}), &run)
        .await;
    std::thread::sleep(Duration::from_millis(20));
    // The wire's request waited past its tool's time: expired, no longer listed as waiting.
    let waiting = approvals.pending();
    assert_eq!(waiting.len(), 1);
    assert_eq!(waiting[0].tool, "delete_file");
    let records = approvals.records();
    assert_eq!(records[0].tool, "wire_money");
    assert_eq!(records[0].status, ApprovalStatus::Expired);
    // An approval of the wire lapses as fast: the call after it is told so.
    toolbox
        .call("wire_money", json!({"cents": 700}), &run)
        .await;
    let wire = approvals
        .pending()
        .into_iter()
        .find(|p| p.tool == "wire_money")
        .unwrap();
    approvals.decide(&wire, &Verdict::approve().by("lin"));
    std::thread::sleep(Duration::from_millis(20));
    let lapsed = toolbox
        .call("wire_money", json!({"cents": 700}), &run)
        .await;
    assert_eq!(lapsed.error().unwrap().code().as_str(), "approval_expired");
    let last = approvals
        .records()
        .into_iter()
        .rfind(|r| r.tool == "wire_money" && r.arguments == json!({"cents": 700}))
        .unwrap();
    assert_eq!(last.status, ApprovalStatus::Expired);
}

#[tokio::test]
async fn a_signed_decision_is_taken_and_a_forged_one_refused() {
    let approvals = Approvals::new();
    let audit = Arc::new(MemorySink::default());
    let toolbox = toolbox(&approvals, &audit);
    let run = ctx("run-signed");
    toolbox
        .call("delete_file", json!({"path": "/tmp/signed"}), &run)
        .await;
    let listed = toolbox.approvals().pending_for(Some("ada"));
    let token = listed[0].token.clone();
    assert!(!token.is_empty());
    let desk = toolbox.approvals();
    // Altered on the way (another hash, another principal), or made up: refused.
    let mut altered = token.clone();
    let flip = if altered.ends_with('0') { "1" } else { "0" };
    altered.replace_range(altered.len() - 1.., flip);
    assert_eq!(
        desk.decide_signed(&altered, &Verdict::approve()),
        Err(ApprovalError::Forged)
    );
    assert_eq!(
        desk.decide_signed("7b7d.00", &Verdict::approve()),
        Err(ApprovalError::Forged)
    );
    // Signed by another toolbox's key: refused.
    let stranger = Toolbox::new()
        .with(DeleteFile)
        .with_approver(approvals.clone())
        .with_state(State::memory().with_key("another fleet's secret, 32 bytes or more"));
    assert_eq!(
        stranger
            .approvals()
            .decide_signed(&token, &Verdict::approve()),
        Err(ApprovalError::Forged)
    );
    desk.decide_signed(&token, &Verdict::approve().by("ada"))
        .unwrap();
    // Used once: the request no longer waits.
    assert_eq!(
        desk.decide_signed(&token, &Verdict::approve()),
        Err(ApprovalError::NotPending)
    );
    let ran = toolbox
        .call("delete_file", json!({"path": "/tmp/signed"}), &run)
        .await;
    assert!(ran.is_success(), "{}", ran.to_json());
}

#[tokio::test]
async fn a_run_s_signed_decision_is_taken_only_for_its_run() {
    let store = Arc::new(MemoryCheckpointStore::default());
    let audit = Arc::new(MemorySink::default());
    let script = || {
        ScriptedModel::new([
            anthropic_calls(&[("toolu_1", "delete_file", json!({"path": "/tmp/agent"}))]),
            anthropic_said("Done."),
        ])
    };
    let agent = |model| {
        Agent::new(
            toolbox(&Approvals::new(), &audit),
            Dialect::Anthropic { strict: false },
            model,
        )
        .with_checkpoints(Arc::clone(&store))
    };
    let first = agent(script());
    let Stop::Paused(mine) = first
        .run(&mut first.start("Delete it"), &ctx("run-a"))
        .await
        .unwrap()
    else {
        panic!("expected a pause")
    };
    let second = agent(script());
    let mut theirs = second.start("Delete it");
    assert!(matches!(
        second.run(&mut theirs, &ctx("run-b")).await.unwrap(),
        Stop::Paused(_)
    ));
    // Run a's token on run b's state: refused.
    assert!(matches!(
        second.decide_signed(&mut theirs, &mine[0].token, &Verdict::approve()),
        Err(AgentError::NotOwner(_))
    ));
    // Altered: refused as unsigned.
    let altered = format!("5b{}", &mine[0].token[2..]);
    assert!(matches!(
        first
            .decide_signed_stored(&altered, &Verdict::approve())
            .await,
        Err(AgentError::Sealed(_))
    ));
    let decided = first
        .decide_signed_stored(&mine[0].token, &Verdict::approve().by("lin").because("ok"))
        .await
        .unwrap();
    assert_eq!(decided.run_id(), Some("run-a"));
    let (_, stop) = first.resume("run-a", &ctx("run-a")).await.unwrap();
    assert_eq!(stop, Stop::Answered("Done.".into()));
    let note = audit
        .records()
        .into_iter()
        .find_map(|r| r.approval)
        .unwrap();
    assert_eq!(note.approver.as_deref(), Some("lin"));
}

#[tokio::test]
async fn a_fleet_s_decisions_carry_who_and_why_and_each_tool_its_expiry() {
    use toolsmith::policy::SharedApprovals;
    use toolsmith::state::RedisStore;
    let Some(server) = redis_server::RedisServer::start() else {
        return;
    };
    let store = Arc::new(RedisStore::open(&server.url).unwrap());
    let approvals = SharedApprovals::new(Arc::clone(&store))
        .with_ttl_for("wire_money", Duration::from_millis(50));
    let audit = Arc::new(MemorySink::default());
    let toolbox = Toolbox::new()
        .with(DeleteFile)
        .with(WireMoney)
        .with_approver(approvals.clone())
        .with_audit(Arc::clone(&audit));
    let run = ctx("run-fleet-records");
    toolbox
        .call("delete_file", json!({"path": "/tmp/x"}), &run)
        .await;
    toolbox
        .call("delete_file", json!({"path": "/tmp/y"}), &run)
        .await;
    let waiting = approvals.pending().await.unwrap();
    let (x, y) = if waiting[0].arguments["path"] == "/tmp/x" {
        (&waiting[0], &waiting[1])
    } else {
        (&waiting[1], &waiting[0])
    };
    approvals
        .decide(x, &Verdict::approve().by("lin").because("scratch"))
        .await
        .unwrap();
    approvals
        .decide(y, &Verdict::deny("y is evidence\nkeep it").by("lin"))
        .await
        .unwrap();
    assert!(
        toolbox
            .call("delete_file", json!({"path": "/tmp/x"}), &run)
            .await
            .is_success()
    );
    let refused = toolbox
        .call("delete_file", json!({"path": "/tmp/y"}), &run)
        .await;
    assert!(
        refused.to_json().contains("y is evidence"),
        "{}",
        refused.to_json()
    );
    let notes = notes(&audit);
    assert_eq!(
        notes[0],
        json!({"decision": "approved", "approver": "lin", "reason": "scratch"})
    );
    assert_eq!(notes[1]["decision"], "denied");
    assert_eq!(notes[1]["approver"], "lin");
    // The wire's request waits 50 ms, not the store's 15 minutes.
    toolbox.call("wire_money", json!({"cents": 1}), &run).await;
    assert_eq!(approvals.pending().await.unwrap().len(), 1);
    tokio::time::sleep(Duration::from_millis(120)).await;
    assert!(approvals.pending().await.unwrap().is_empty());
}

#[tokio::test]
async fn approvals_kept_in_the_state_are_listed_and_decided_through_any_toolbox_on_it() {
    let state = State::memory().with_approvals().with_key(KEY);
    let audit = Arc::new(MemorySink::default());
    let worker = Toolbox::new()
        .with(DeleteFile)
        .with_state(state.clone())
        .with_audit(Arc::clone(&audit));
    let desk = Toolbox::new().with(DeleteFile).with_state(state.clone());
    let ada = ctx("run-state");
    let bo = ToolContext::new()
        .with_principal("bo")
        .with_run_id("run-state");
    let waits = worker
        .call("delete_file", json!({"path": "/tmp/x"}), &ada)
        .await;
    assert!(
        waits.error().unwrap().message().contains("waiting"),
        "{}",
        waits.to_json()
    );
    worker
        .call("delete_file", json!({"path": "/tmp/y"}), &bo)
        .await;
    // A UI lists each principal's own, from any toolbox on the state.
    let for_ada = desk.approvals().waiting_for(Some("ada")).await.unwrap();
    let for_bo = desk.approvals().waiting_for(Some("bo")).await.unwrap();
    assert_eq!(for_ada.len(), 1);
    assert_eq!(for_ada[0].arguments["path"], "/tmp/x");
    assert_eq!(for_bo.len(), 1);
    assert!(desk.approvals().waiting_for(None).await.unwrap().is_empty());
    // A decision needs the request's own token, once.
    assert_eq!(
        desk.approvals()
            .decide_token("not a token", &Verdict::approve())
            .await,
        Err(ApprovalError::Forged)
    );
    desk.approvals()
        .decide_token(
            &for_ada[0].token,
            &Verdict::approve().by("lin").because("scratch"),
        )
        .await
        .unwrap();
    assert_eq!(
        desk.approvals()
            .decide_token(&for_ada[0].token, &Verdict::approve())
            .await,
        Err(ApprovalError::NotPending)
    );
    assert!(
        worker
            .call("delete_file", json!({"path": "/tmp/x"}), &ada)
            .await
            .is_success()
    );
    let note = audit
        .records()
        .into_iter()
        .find_map(|r| r.approval)
        .unwrap();
    assert_eq!(note.approver.as_deref(), Some("lin"));
    // A toolbox's own approver wins over the state's, whichever is given first.
    let own = Approvals::new();
    let first = Toolbox::new()
        .with(DeleteFile)
        .with_state(state.clone())
        .with_approver(own.clone());
    let second = Toolbox::new()
        .with(DeleteFile)
        .with_approver(own.clone())
        .with_state(state);
    first
        .call("delete_file", json!({"path": "/tmp/z"}), &ada)
        .await;
    second
        .call("delete_file", json!({"path": "/tmp/w"}), &ada)
        .await;
    assert_eq!(own.pending().len(), 2);
    assert!(
        desk.approvals()
            .waiting_for(Some("ada"))
            .await
            .unwrap()
            .is_empty()
    );
    // Without approvals in the state or an approver, such a call is refused, as before.
    let plain = Toolbox::new().with(DeleteFile).with_state(State::memory());
    let refused = plain
        .call("delete_file", json!({"path": "/tmp/x"}), &ada)
        .await;
    assert!(
        refused.error().unwrap().message().contains("no way to ask"),
        "{}",
        refused.to_json()
    );
}

#[tokio::test]
async fn a_fleet_keeps_its_approvals_in_its_shared_state() {
    use toolsmith::state::RedisStore;
    let Some(server) = redis_server::RedisServer::start() else {
        return;
    };
    // Two replicas, each with its own connection to the one Redis, as two processes.
    let replica = || {
        let store = Arc::new(RedisStore::open(&server.url).unwrap());
        let state = State::shared(store).with_approvals().with_key(KEY);
        Toolbox::new().with(DeleteFile).with_state(state)
    };
    let (replica_a, replica_b) = (replica(), replica());
    let run = ctx("run-fleet-state");
    replica_a
        .call("delete_file", json!({"path": "x.txt"}), &run)
        .await;
    // Listed and decided through the other replica.
    let waiting = replica_b
        .approvals()
        .waiting_for(Some("ada"))
        .await
        .unwrap();
    assert_eq!(waiting.len(), 1);
    let mut altered = waiting[0].token.clone();
    altered.push('0');
    assert_eq!(
        replica_b
            .approvals()
            .decide_token(&altered, &Verdict::approve())
            .await,
        Err(ApprovalError::Forged)
    );
    replica_b
        .approvals()
        .decide_token(&waiting[0].token, &Verdict::approve().by("lin"))
        .await
        .unwrap();
    assert_eq!(
        replica_b
            .approvals()
            .decide_token(&waiting[0].token, &Verdict::approve())
            .await,
        Err(ApprovalError::NotPending)
    );
    // The call runs once, on either replica: the same call again replays its first result
    // (the run's idempotency key, in the same Redis).
    let ran = replica_a
        .call("delete_file", json!({"path": "x.txt"}), &run)
        .await;
    assert!(ran.is_success() && !ran.to_json().contains("replayed"));
    let again = replica_b
        .call("delete_file", json!({"path": "x.txt"}), &run)
        .await;
    assert!(
        again.to_json().contains(r#""replayed":true"#),
        "{}",
        again.to_json()
    );
    // In another run, the same deletion waits for a person again.
    let other = replica_b
        .call(
            "delete_file",
            json!({"path": "x.txt"}),
            &ctx("run-fleet-other"),
        )
        .await;
    assert_eq!(other.error().unwrap().code().as_str(), "approval_required");
}

/// Lists files. Read-only. Not for reading a file's content.
#[tool(effect = "read")]
fn list_files() -> String {
    "a.txt".to_owned()
}

/// An approved deletion refused before it ran (the run's one call was spent) keeps its
/// approval with who gave it and why: each later call it lets through is audited with them.
async fn an_approval_given_back_keeps_who_and_why(approver: impl toolsmith::policy::Approver) {
    use toolsmith::ErrorCode;
    use toolsmith::policy::{Defaults, RunBudget};
    let audit = Arc::new(MemorySink::default());
    let toolbox = Toolbox::new()
        .with(DeleteFile)
        .with(ListFiles)
        .with_approver(approver)
        .with_audit(Arc::clone(&audit))
        .with_state(State::memory().with_key(KEY))
        .with_defaults(Defaults {
            budget: Some(RunBudget {
                max_calls: 1,
                ..Default::default()
            }),
            ..Defaults::default()
        });
    let run = ctx("run-given-back");
    let delete = json!({"path": "/tmp/given-back"});
    let asked = toolbox.call("delete_file", &delete, &run).await;
    assert_eq!(asked.error().unwrap().code(), ErrorCode::ApprovalRequired);
    let desk = toolbox.approvals();
    let waiting = desk.waiting_for(Some("ada")).await.unwrap();
    desk.decide_token(
        &waiting[0].token,
        &Verdict::approve().by("lin").because("scratch space"),
    )
    .await
    .unwrap();
    assert!(
        toolbox
            .call("list_files", json!({}), &run)
            .await
            .is_success()
    );
    for _ in 0..2 {
        let refused = toolbox.call("delete_file", &delete, &run).await;
        assert_eq!(refused.error().unwrap().code(), ErrorCode::BudgetExhausted);
    }
    let notes = notes(&audit);
    let decided = json!({"decision": "approved", "approver": "lin", "reason": "scratch space"});
    assert_eq!(notes, [decided.clone(), decided]);
    assert!(desk.waiting_for(Some("ada")).await.unwrap().is_empty());
}

#[tokio::test]
async fn an_approval_given_back_keeps_who_and_why_in_memory() {
    an_approval_given_back_keeps_who_and_why(Approvals::new()).await;
}

#[tokio::test]
async fn an_approval_given_back_keeps_who_and_why_in_redis() {
    use toolsmith::policy::SharedApprovals;
    use toolsmith::state::RedisStore;
    let Some(server) = redis_server::RedisServer::start() else {
        return;
    };
    let store = Arc::new(RedisStore::open(&server.url).unwrap());
    an_approval_given_back_keeps_who_and_why(SharedApprovals::new(store)).await;
}

#[tokio::test]
async fn an_approval_made_by_name_is_audited_as_such() {
    let approvals = Approvals::new();
    let audit = Arc::new(MemorySink::default());
    let toolbox = toolbox(&approvals, &audit);
    let run = ctx("run-by-name");
    let desk = toolbox.approvals();
    desk.approve("delete_file", r#"{"path": "/tmp/n1"}"#, &run)
        .unwrap();
    desk.deny("delete_file", r#"{"path": "/tmp/n2"}"#, &run, "n2 is kept")
        .unwrap();
    for path in ["/tmp/n1", "/tmp/n2"] {
        toolbox
            .call("delete_file", json!({ "path": path }), &run)
            .await;
    }
    let notes = notes(&audit);
    assert_eq!(
        notes,
        [
            json!({"decision": "approved"}),
            json!({"decision": "denied", "reason": "n2 is kept"}),
        ]
    );
}

//! Idempotency with the in-memory store: keys, replays, conflicts, waiting, failures, and
//! exactly one execution among 1,000 concurrent duplicates (tokio's paused clock).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use toolsmith::idempotency::{IdempotencyPolicy, IdempotencyScope, derive_idempotency_key};
use toolsmith::policy::ToolPolicy;
use toolsmith::state::{IdempotencyStore, MemoryIdempotencyStore, Reservation};
use toolsmith::{ErrorCode, ToolCall, ToolContext, ToolError, ToolOutcome, Toolbox, tool};

static CREATED: AtomicUsize = AtomicUsize::new(0);

/// Creates a ticket. Writes data. Not for incidents.
#[tool(effect = "write")]
async fn create_ticket(
    ctx: &ToolContext,
    /// The title.
    #[arg(length(min = 1, max = 100))]
    title: String,
) -> serde_json::Value {
    tokio::time::sleep(Duration::from_millis(10)).await;
    let n = CREATED.fetch_add(1, Ordering::SeqCst) + 1;
    json!({"ticket": format!("T-{n}"), "title": title, "key": ctx.idempotency_key()})
}

static REPORTS: AtomicUsize = AtomicUsize::new(0);

/// Files a report. Writes data. Not for incidents.
#[tool(effect = "write")]
async fn file_report(
    /// The title.
    #[arg(length(min = 1, max = 100))]
    title: String,
) -> String {
    tokio::time::sleep(Duration::from_millis(10)).await;
    format!("R-{} {title}", REPORTS.fetch_add(1, Ordering::SeqCst) + 1)
}

static MEMOS: AtomicUsize = AtomicUsize::new(0);

/// Sends a memo. Writes data. Not for announcements.
#[tool(effect = "write")]
async fn send_memo(
    /// The title.
    #[arg(length(min = 1, max = 100))]
    title: String,
) -> String {
    format!("M-{} {title}", MEMOS.fetch_add(1, Ordering::SeqCst) + 1)
}

static ORDERS: AtomicUsize = AtomicUsize::new(0);

/// Places an order. Writes data. Not for quotes.
#[tool(effect = "write")]
async fn place_order(
    /// The caller's key for this order.
    #[arg(length(min = 16, max = 64))]
    idempotency_key: String,
    /// How many.
    #[arg(range(min = 1, max = 100))]
    quantity: u32,
) -> usize {
    let _ = (idempotency_key, quantity);
    ORDERS.fetch_add(1, Ordering::SeqCst) + 1
}

/// Sets a ticket's priority. Writes data: the priority is a state, so a repeat is a duplicate.
/// Not for closing tickets.
#[tool(effect = "write")]
async fn set_priority(
    /// The ticket.
    ticket: u64,
    /// The priority.
    #[arg(length(max = 10))]
    priority: String,
) -> String {
    format!("{ticket}: {priority}")
}

static LOOKUPS: AtomicUsize = AtomicUsize::new(0);

/// Archives a document. Writes data. Not for deleting.
#[tool(effect = "write", attempts = 1)]
async fn archive_document(
    /// The document id.
    id: u64,
) -> Result<u64, ToolError> {
    let n = LOOKUPS.fetch_add(1, Ordering::SeqCst);
    match id {
        404 => Err(ToolError::not_found("No such document.")),
        503 if n % 2 == 0 => Err(ToolError::upstream_error("The archive is down.")),
        _ => Ok(id),
    }
}

/// Runs for a minute. Writes data. Not for real work.
#[tool(effect = "write", timeout = "2m")]
async fn rebuild_index(
    /// The index.
    #[arg(length(max = 20))]
    name: String,
) -> String {
    tokio::time::sleep(Duration::from_secs(60)).await;
    name
}

/// One run: derived keys are scoped to the run, so duplicates inside it are one action.
fn ctx() -> ToolContext {
    ToolContext::new().with_run_id("run_1")
}

#[tokio::test(start_paused = true)]
async fn a_duplicate_is_replayed_not_run_and_the_tool_sees_its_key() {
    let toolbox = Toolbox::new().with(CreateTicket);
    let first = toolbox
        .call("create_ticket", r#"{"title": "Printer on fire"}"#, &ctx())
        .await;
    let again = toolbox
        .call(
            "create_ticket",
            r#"{ "title" : "Printer on fire" }"#,
            &ctx(),
        )
        .await;
    assert!(!first.is_replay());
    assert!(again.is_replay());
    // The same ticket: the tool ran once. (The ticket counter is shared with the other tests
    // of this file, which run at the same time, so the ticket's number is the proof.)
    assert_eq!(first.data().unwrap().get(), again.data().unwrap().get());
    let json: serde_json::Value = serde_json::from_str(&again.to_json()).unwrap();
    assert_eq!(json["replayed"], true);
    let expected = derive_idempotency_key(
        "create_ticket",
        &json!({"title": "Printer on fire"}),
        None,
        Some("run_1"),
    );
    assert_eq!(
        json["data"]["key"], expected,
        "the tool saw the derived key"
    );
}

#[tokio::test(start_paused = true)]
async fn one_thousand_concurrent_duplicates_run_once() {
    let toolbox = Toolbox::new()
        .with(FileReport)
        .with_defaults(toolsmith::policy::Defaults {
            concurrency: 1000,
            ..toolsmith::policy::Defaults::default()
        });
    let calls: Vec<ToolCall> = (0..1000)
        .map(|i| ToolCall {
            id: Some(format!("c{i}")),
            name: "file_report".into(),
            arguments: json!({"title": "Same"}),
        })
        .collect();
    let outcomes = toolbox.call_all(&calls, &ctx()).await;
    assert_eq!(REPORTS.load(Ordering::SeqCst), 1, "exactly one execution");
    assert!(outcomes.iter().all(|o| o.is_success()));
    assert_eq!(outcomes.iter().filter(|o| o.is_replay()).count(), 999);
    let first = outcomes[0].data().unwrap().get().to_owned();
    assert!(outcomes.iter().all(|o| o.data().unwrap().get() == first));
}

#[tokio::test(start_paused = true)]
async fn a_key_reused_with_other_arguments_is_a_conflict() {
    let toolbox = Toolbox::new().with(PlaceOrder);
    let first = toolbox
        .call(
            "place_order",
            r#"{"idempotency_key": "order-2026-11-22-0001", "quantity": 2}"#,
            &ctx(),
        )
        .await;
    assert!(first.is_success());
    let same = toolbox
        .call(
            "place_order",
            r#"{"quantity": 2, "idempotency_key": "order-2026-11-22-0001"}"#,
            &ctx(),
        )
        .await;
    assert!(same.is_replay());
    let other = toolbox
        .call(
            "place_order",
            r#"{"idempotency_key": "order-2026-11-22-0001", "quantity": 3}"#,
            &ctx(),
        )
        .await;
    let err = other.error().unwrap();
    assert_eq!(err.code(), ErrorCode::IdempotencyConflict);
    assert!(err.needs_human());
    assert!(err.message().contains("order-2026-11-22-0001"));
}

#[tokio::test(start_paused = true)]
async fn failures_are_stored_or_released_by_kind() {
    let toolbox = Toolbox::new().with(ArchiveDocument);
    let before = LOOKUPS.load(Ordering::SeqCst);
    // A non-retryable failure is stored: the duplicate gets it without running the tool.
    let first = toolbox
        .call("archive_document", r#"{"id": 404}"#, &ctx())
        .await;
    let again = toolbox
        .call("archive_document", r#"{"id": 404}"#, &ctx())
        .await;
    assert_eq!(first.error().unwrap().code(), ErrorCode::NotFound);
    assert_eq!(again.error().unwrap().code(), ErrorCode::NotFound);
    assert_eq!(LOOKUPS.load(Ordering::SeqCst) - before, 1);
    // A retryable failure frees the key: the retry runs.
    LOOKUPS.store(0, Ordering::SeqCst);
    let failed = toolbox
        .call("archive_document", r#"{"id": 503}"#, &ctx())
        .await;
    assert_eq!(failed.error().unwrap().code(), ErrorCode::UpstreamError);
    let retried = toolbox
        .call("archive_document", r#"{"id": 503}"#, &ctx())
        .await;
    assert_eq!(retried.into_result::<u64>().unwrap(), 503);
    assert_eq!(LOOKUPS.load(Ordering::SeqCst), 2);
}

#[tokio::test(start_paused = true)]
async fn a_duplicate_of_a_running_call_waits_then_gets_a_retryable_error() {
    let toolbox = Toolbox::new()
        .with(RebuildIndex)
        .with_defaults(toolsmith::policy::Defaults {
            idempotency: IdempotencyPolicy {
                wait: Duration::from_secs(1),
                ..IdempotencyPolicy::default()
            },
            ..toolsmith::policy::Defaults::default()
        });
    let args = r#"{"name": "tickets"}"#;
    let c = ctx();
    let (first, second) = tokio::join!(toolbox.call("rebuild_index", args, &c), async {
        tokio::time::sleep(Duration::from_millis(5)).await;
        toolbox.call("rebuild_index", args, &c).await
    });
    assert!(first.is_success());
    let err = second.error().unwrap();
    assert_eq!(err.code(), ErrorCode::InProgress);
    assert!(err.is_retryable());
    // Once the first is done, the duplicate is replayed.
    assert!(toolbox.call("rebuild_index", args, &c).await.is_replay());
}

#[tokio::test(start_paused = true)]
async fn derived_keys_are_scoped_to_the_run_by_default() {
    let toolbox = Toolbox::new().with(SendMemo).with_state(
        toolsmith::state::State::memory().with_idempotency(MemoryIdempotencyStore::new(10)),
    );
    let args = r#"{"title": "Weekly report"}"#;
    let monday = ToolContext::new().with_run_id("monday");
    let tuesday = ToolContext::new().with_run_id("tuesday");
    assert!(!toolbox.call("send_memo", args, &monday).await.is_replay());
    // A retry inside the run replays.
    assert!(toolbox.call("send_memo", args, &monday).await.is_replay());
    // The same reminder in another run is another action.
    let again = toolbox.call("send_memo", args, &tuesday).await;
    assert!(
        again.is_success() && !again.is_replay(),
        "{}",
        again.to_json()
    );
    assert_eq!(MEMOS.load(Ordering::SeqCst), 2);
    // Without a run id there is nothing to be the same action as: every call acts.
    let no_run = ToolContext::new();
    assert!(!toolbox.call("send_memo", args, &no_run).await.is_replay());
    assert!(!toolbox.call("send_memo", args, &no_run).await.is_replay());
    assert_eq!(MEMOS.load(Ordering::SeqCst), 4);
}

#[tokio::test(start_paused = true)]
async fn a_global_content_scope_is_an_opt_in_per_tool() {
    let toolbox = Toolbox::new()
        .with(CreateTicket)
        .with(SetPriority)
        .with_tool_policy(
            "set_priority",
            ToolPolicy {
                idempotency_scope: Some(IdempotencyScope::Global),
                ..ToolPolicy::default()
            },
        );
    let a = ToolContext::new().with_run_id("a");
    let b = ToolContext::new().with_run_id("b");
    let args = r#"{"ticket": 7, "priority": "high"}"#;
    assert!(!toolbox.call("set_priority", args, &a).await.is_replay());
    // Opted in: the same arguments in another run, or in none, are the same action.
    assert!(toolbox.call("set_priority", args, &b).await.is_replay());
    assert!(
        toolbox
            .call("set_priority", args, &ToolContext::new())
            .await
            .is_replay()
    );
    // Not opted in: create_ticket in another run acts again.
    let title = r#"{"title": "Badge for the new hire"}"#;
    assert!(!toolbox.call("create_ticket", title, &a).await.is_replay());
    assert!(!toolbox.call("create_ticket", title, &b).await.is_replay());
}

#[tokio::test(start_paused = true)]
async fn a_callers_key_keeps_its_own_scope_across_runs() {
    let toolbox = Toolbox::new().with(PlaceOrder);
    let args = r#"{"quantity": 5, "idempotency_key": "order-2024-0001-charge"}"#;
    let first = toolbox
        .call("place_order", args, &ToolContext::new().with_run_id("a"))
        .await;
    let other_run = toolbox
        .call("place_order", args, &ToolContext::new().with_run_id("b"))
        .await;
    let no_run = toolbox.call("place_order", args, &ToolContext::new()).await;
    assert!(!first.is_replay());
    assert!(
        other_run.is_replay(),
        "the caller's key is one action wherever it comes from"
    );
    assert!(no_run.is_replay());
}

#[tokio::test(start_paused = true)]
async fn keys_never_cross_principals() {
    let toolbox = Toolbox::new().with(CreateTicket);
    let args = r#"{"title": "Badge for the new hire"}"#;
    let ada = ctx().with_principal("ada");
    let bob = ctx().with_principal("bob");
    let first = toolbox.call("create_ticket", args, &ada).await;
    let other = toolbox.call("create_ticket", args, &bob).await;
    let again = toolbox.call("create_ticket", args, &ada).await;
    assert!(!first.is_replay());
    assert!(!other.is_replay(), "bob's call is not ada's replay");
    assert_ne!(first.data().unwrap().get(), other.data().unwrap().get());
    assert!(again.is_replay());
    assert_eq!(first.data().unwrap().get(), again.data().unwrap().get());

    // A caller's own key is scoped the same way: bob's other arguments are no conflict.
    let toolbox = Toolbox::new().with(PlaceOrder);
    let key = "order-7f3a9c2e-0001";
    let ada_order = format!(r#"{{"idempotency_key": "{key}", "quantity": 2}}"#);
    let bob_order = format!(r#"{{"idempotency_key": "{key}", "quantity": 5}}"#);
    assert!(
        toolbox
            .call("place_order", &ada_order, &ada)
            .await
            .is_success()
    );
    let bobs = toolbox.call("place_order", &bob_order, &bob).await;
    assert!(bobs.is_success() && !bobs.is_replay(), "{}", bobs.to_json());
    assert!(
        toolbox
            .call("place_order", &ada_order, &ada)
            .await
            .is_replay()
    );
}

/// SHA-256 over parts each framed by its length plus one (a LEB128 varint; none here is past
/// 127 bytes), written out as a derived key is: what a client in another language computes.
fn key_from_parts(parts: &[&[u8]]) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    for part in parts {
        let framed = u8::try_from(part.len() + 1).expect("a short part");
        hasher.update([framed]);
        hasher.update(part);
    }
    let digest = hasher.finalize();
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("idem_{hex}")
}

/// The hex digits of an audit record's `sha256:<hex>` as bytes.
fn digest_bytes(hash: &str) -> Vec<u8> {
    let hex = hash.strip_prefix("sha256:").expect("sha256:<hex>");
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

/// A derived key hashes its scope (the tool, the principal, the run) with the arguments'
/// canonical JSON when that is shorter than a digest, and with the digest the audit writes out
/// otherwise: long arguments are hashed once for both.
#[tokio::test(start_paused = true)]
async fn a_derived_key_is_made_from_the_digest_the_audit_writes_out() {
    let audit = Arc::new(toolsmith::audit::MemorySink::default());
    let toolbox = Toolbox::new()
        .with(CreateTicket)
        .with_audit(Arc::clone(&audit));
    let ctx = ctx().with_principal("ada");
    let short = json!({"title": "Printer on fire"});
    let long = json!({"title": "The printer on the third floor is on fire again"});
    for (arguments, is_short) in [(&short, true), (&long, false)] {
        let out = toolbox
            .call("create_ticket", arguments.to_string().as_str(), &ctx)
            .await;
        let records = audit.records();
        let hash = records
            .last()
            .and_then(|r| r.arguments_hash.clone())
            .expect("an arguments hash");
        let canonical = toolsmith::policy::canonical_json(arguments);
        assert_eq!(hash, toolsmith::policy::arguments_hash(arguments));
        assert_eq!(canonical.len() < 32, is_short, "{canonical}");
        let part = if is_short {
            canonical.as_bytes().to_vec()
        } else {
            digest_bytes(&hash)
        };
        let expected = key_from_parts(&[b"create_ticket", b"ada", b"run_1", &part]);
        let data: serde_json::Value = serde_json::from_str(out.data().unwrap().get()).unwrap();
        assert_eq!(data["key"].as_str(), Some(expected.as_str()));
        assert_eq!(
            expected,
            derive_idempotency_key("create_ticket", arguments, Some("ada"), Some("run_1"))
        );
    }
}

#[test]
fn derived_keys_normalise_numbers_and_key_order() {
    let args = json!({"n": 5.0, "list": [1, {"b": 2, "a": 1}]});
    let a = derive_idempotency_key("t", &args, None, None);
    let b = derive_idempotency_key(
        "t",
        &json!({"list": [1, {"a": 1, "b": 2}], "n": 5}),
        None,
        None,
    );
    assert_eq!(a, b);
    assert_ne!(a, derive_idempotency_key("u", &json!({"n": 5}), None, None));
    assert_ne!(a, derive_idempotency_key("t", &args, None, Some("run")));
    assert_ne!(a, derive_idempotency_key("t", &args, Some("ada"), None));
    let _ = Arc::new(MemoryIdempotencyStore::default());
}

#[tokio::test(start_paused = true)]
async fn a_full_memory_store_evicts_the_oldest_results_never_running_calls() {
    let store = MemoryIdempotencyStore::new(10);
    let ttl = Duration::from_secs(3600);
    store.reserve("running", "fp", ttl).await.unwrap();
    for i in 0..100 {
        let key = format!("k{i}");
        tokio::time::advance(Duration::from_millis(10)).await;
        assert!(matches!(
            store.reserve(&key, "fp", ttl).await.unwrap(),
            Reservation::Reserved
        ));
        store.complete(&key, "fp", "{}", ttl).await.unwrap();
    }
    assert!(
        matches!(
            store.lookup("k99").await.unwrap(),
            Some(Reservation::Done { .. })
        ),
        "the newest result is kept"
    );
    assert!(
        store.lookup("k0").await.unwrap().is_none(),
        "the oldest result made room"
    );
    assert!(
        matches!(
            store.lookup("running").await.unwrap(),
            Some(Reservation::InProgress { .. })
        ),
        "a running call keeps its reservation"
    );
}

#[tokio::test(start_paused = true)]
async fn the_memory_store_is_bounded_in_bytes() {
    let budget = 256 << 10;
    let store = MemoryIdempotencyStore::new(1_000_000).with_max_bytes(budget);
    let ttl = Duration::from_secs(3600);
    store.reserve("running", "fp", ttl).await.unwrap();
    let envelope = format!(r#"{{"status":"success","data":"{}"}}"#, "x".repeat(10_000));
    for i in 0..500 {
        let key = format!("k{i}");
        tokio::time::advance(Duration::from_millis(10)).await;
        store.reserve(&key, "fp", ttl).await.unwrap();
        store.complete(&key, "fp", &envelope, ttl).await.unwrap();
        assert!(
            store.size_in_bytes() <= budget,
            "{} bytes kept after {i} results",
            store.size_in_bytes()
        );
    }
    assert!(store.len() < 30, "{} keys", store.len());
    assert!(matches!(
        store.lookup("k499").await.unwrap(),
        Some(Reservation::Done { ref envelope, .. }) if envelope.len() > 10_000
    ));
    assert!(store.lookup("k0").await.unwrap().is_none());
    assert!(matches!(
        store.lookup("running").await.unwrap(),
        Some(Reservation::InProgress { .. })
    ));
    // A result larger than a sixteenth of the budget: the key remembers the call was done,
    // so a repeat is not run again, and says its result was not kept.
    let huge = format!(r#"{{"status":"success","data":"{}"}}"#, "y".repeat(budget));
    store.reserve("huge", "fp", ttl).await.unwrap();
    store.complete("huge", "fp", &huge, ttl).await.unwrap();
    assert!(store.size_in_bytes() <= budget);
    let Some(Reservation::Done { envelope, .. }) = store.lookup("huge").await.unwrap() else {
        panic!("the call is remembered");
    };
    assert!(envelope.len() < 1_000, "{envelope}");
    assert!(envelope.contains("already done"), "{envelope}");
}

/// Writes a big report. Writes data. Not for small notes.
#[tool(effect = "write", allow(unbounded_string))]
async fn write_big_report(
    /// How many bytes.
    size: usize,
) -> String {
    RUNS_BIG.fetch_add(1, Ordering::SeqCst);
    "r".repeat(size)
}

static RUNS_BIG: AtomicUsize = AtomicUsize::new(0);

#[tokio::test]
async fn a_write_whose_result_is_too_large_to_keep_is_still_done_once() {
    // Given inline (no result store), the result is too large for the idempotency store.
    let toolbox = Toolbox::new()
        .with(WriteBigReport)
        .with_defaults(toolsmith::policy::Defaults {
            large_results: toolsmith::output::LargeResults::Inline,
            ..toolsmith::policy::Defaults::default()
        })
        .with_state(
            toolsmith::state::State::memory()
                .with_idempotency(MemoryIdempotencyStore::default().with_max_bytes(64 << 10)),
        );
    let ctx = ctx();
    let first = toolbox
        .call("write_big_report", r#"{"size": 100000}"#, &ctx)
        .await;
    assert!(first.is_success());
    let again = toolbox
        .call("write_big_report", r#"{"size": 100000}"#, &ctx)
        .await;
    assert_eq!(RUNS_BIG.load(Ordering::SeqCst), 1, "not run twice");
    assert!(
        again.to_json().contains("already done"),
        "{}",
        again.to_json()
    );

    // By default the result goes to the result store, and the replay gives its reference.
    let toolbox = Toolbox::new().with(WriteBigReport).with_state(
        toolsmith::state::State::memory()
            .with_idempotency(MemoryIdempotencyStore::default().with_max_bytes(64 << 10)),
    );
    let first = toolbox
        .call("write_big_report", r#"{"size": 100001}"#, &ctx)
        .await;
    let again = toolbox
        .call("write_big_report", r#"{"size": 100001}"#, &ctx)
        .await;
    assert_eq!(RUNS_BIG.load(Ordering::SeqCst), 2, "not run twice");
    let (ToolOutcome::Stored(_, one), ToolOutcome::Stored(_, two)) = (&first, &again) else {
        panic!("{first} / {again}")
    };
    assert_eq!(one.uri, two.uri);
    let kept = toolbox.stored_result(&two.uri).await.unwrap().unwrap();
    assert_eq!(kept.len(), 100_003);
}

//! Idempotency with a real Redis: each test starts its own `redis-server` on 127.0.0.1 with a
//! free port and stops it. Exactly one execution among 1,000 concurrent duplicates, replay
//! across a restarted process, conflicts, and a clear retryable error when Redis is down.
//!
//! `scripts/test.sh` installs `redis-server` when it is missing and sets
//! `TOOLSMITH_REQUIRE_REDIS=1`; without both, these tests say so and pass.

#[path = "support/redis.rs"]
mod redis_server;

use std::net::TcpListener;

use redis_server::RedisServer;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use toolsmith::state::RedisStore;
use toolsmith::{ErrorCode, ToolCall, ToolContext, Toolbox, tool};

static CREATED: AtomicUsize = AtomicUsize::new(0);

/// Creates a ticket. Writes data. Not for incidents.
#[tool(effect = "write")]
async fn create_ticket(
    /// The title.
    #[arg(length(min = 1, max = 100))]
    title: String,
) -> String {
    tokio::time::sleep(Duration::from_millis(20)).await;
    let n = CREATED.fetch_add(1, Ordering::SeqCst) + 1;
    format!("T-{n} {title}")
}

static ALERTS: AtomicUsize = AtomicUsize::new(0);

/// Sends an alert. Writes data. Not for pages.
#[tool(effect = "write")]
async fn send_alert(
    /// The text.
    #[arg(length(min = 1, max = 100))]
    text: String,
) -> String {
    ALERTS.fetch_add(1, Ordering::SeqCst);
    text
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

fn redis_toolbox(url: &str) -> Toolbox {
    Toolbox::new()
        .with(CreateTicket)
        .with(PlaceOrder)
        .with(SendAlert)
        .with_defaults(toolsmith::policy::Defaults {
            concurrency: 1000,
            ..toolsmith::policy::Defaults::default()
        })
        .with_state(
            toolsmith::state::State::memory().with_idempotency(RedisStore::open(url).unwrap()),
        )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_thousand_concurrent_duplicates_run_once_and_survive_a_restart() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let toolbox = redis_toolbox(&redis.url);
    let before = CREATED.load(Ordering::SeqCst);
    let calls: Vec<ToolCall> = (0..1000)
        .map(|i| ToolCall {
            id: Some(format!("c{i}")),
            name: "create_ticket".into(),
            arguments: json!({"title": "Same"}),
        })
        .collect();
    let outcomes = toolbox
        .call_all(&calls, &ToolContext::new().with_run_id("run_1"))
        .await;
    assert_eq!(
        CREATED.load(Ordering::SeqCst) - before,
        1,
        "exactly one execution"
    );
    assert!(
        outcomes.iter().all(|o| o.is_success()),
        "{:?}",
        outcomes.iter().find(|o| !o.is_success())
    );
    let first = outcomes[0].data().unwrap().get().to_owned();
    assert!(outcomes.iter().all(|o| o.data().unwrap().get() == first));

    // A restarted process: a new toolbox on the same Redis replays.
    drop(toolbox);
    let restarted = redis_toolbox(&redis.url);
    let again = restarted
        .call(
            "create_ticket",
            r#"{"title": "Same"}"#,
            &ToolContext::new().with_run_id("run_1"),
        )
        .await;
    assert!(again.is_replay());
    assert_eq!(again.data().unwrap().get(), first);
    assert_eq!(CREATED.load(Ordering::SeqCst) - before, 1);
}

#[tokio::test]
async fn conflicts_are_seen_through_redis() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let toolbox = redis_toolbox(&redis.url);
    let first = toolbox
        .call(
            "place_order",
            r#"{"idempotency_key": "order-redis-0000001", "quantity": 1}"#,
            &ToolContext::new().with_run_id("run_1"),
        )
        .await;
    assert!(first.is_success(), "{first}");
    let other = toolbox
        .call(
            "place_order",
            r#"{"idempotency_key": "order-redis-0000001", "quantity": 9}"#,
            &ToolContext::new().with_run_id("run_1"),
        )
        .await;
    assert_eq!(
        other.error().unwrap().code(),
        ErrorCode::IdempotencyConflict
    );
}

#[tokio::test]
async fn redis_down_is_a_retryable_error_never_a_silent_duplicate() {
    // A port that accepts connections but never answers, held for the whole test so no other
    // server can take it: the store's deadline expires, as with a Redis that is down or hung.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("redis://127.0.0.1:{}/", silent.local_addr().unwrap().port());
    let toolbox = redis_toolbox(&url);
    let out = toolbox
        .call(
            "send_alert",
            r#"{"text": "While Redis is down"}"#,
            &ToolContext::new().with_run_id("run_1"),
        )
        .await;
    let err = out.error().unwrap();
    assert_eq!(err.code(), ErrorCode::UpstreamError);
    assert!(err.is_retryable());
    assert!(err.message().contains("was not run"), "{}", err.message());
    assert_eq!(ALERTS.load(Ordering::SeqCst), 0, "the tool did not run");
}

/// Lists every shipment. Read-only. Not for one shipment.
#[tool(effect = "read", allow(unbounded_list))]
fn list_shipments() -> Vec<u32> {
    (0..5_000).collect()
}

#[tokio::test]
async fn large_results_kept_in_redis_are_read_by_another_process() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let one = Toolbox::new().with(ListShipments).with_state(
        toolsmith::state::State::memory().with_results(RedisStore::open(&redis.url).unwrap()),
    );
    let out = one.call("list_shipments", "{}", &ToolContext::new()).await;
    let toolsmith::ToolOutcome::Stored(_, stored) = &out else {
        panic!("{out}")
    };
    // Another toolbox (another replica) on the same Redis reads it.
    let other = Toolbox::new().with_state(
        toolsmith::state::State::memory().with_results(RedisStore::open(&redis.url).unwrap()),
    );
    let kept = other.stored_result(&stored.uri).await.unwrap().unwrap();
    assert_eq!(
        serde_json::from_str::<Vec<u32>>(&kept).unwrap().len(),
        5_000
    );
    assert_eq!(
        other
            .stored_result("toolsmith://results/0123")
            .await
            .unwrap(),
        None
    );
}

#[tokio::test]
async fn a_running_key_is_held_by_its_lease_and_renewed_only_for_its_call() {
    use toolsmith::state::{IdempotencyStore, Reservation};
    let Some(server) = RedisServer::start() else {
        return;
    };
    let store = RedisStore::open(&server.url).unwrap();
    let lease = Duration::from_millis(300);
    assert_eq!(
        store.reserve("lease-a", "fp-1", lease).await.unwrap(),
        Reservation::Reserved
    );
    // Renewed by its own call, it outlives its first lease.
    tokio::time::sleep(Duration::from_millis(200)).await;
    store.renew("lease-a", "fp-1", lease).await.unwrap();
    // A renewal for other arguments changes nothing.
    store
        .renew("lease-a", "fp-2", Duration::from_secs(60))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(matches!(
        store.reserve("lease-a", "fp-1", lease).await.unwrap(),
        Reservation::InProgress { .. }
    ));
    // Not renewed (its process died), it is free after the lease.
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        store.reserve("lease-a", "fp-1", lease).await.unwrap(),
        Reservation::Reserved
    );
    // A finished call's result is kept for its time to live, not its lease.
    store
        .complete(
            "lease-a",
            "fp-1",
            "{\"status\":\"success\",\"data\":1}",
            Duration::from_secs(60),
        )
        .await
        .unwrap();
    store
        .renew("lease-a", "fp-1", Duration::from_millis(1))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(matches!(
        store.reserve("lease-a", "fp-1", lease).await.unwrap(),
        Reservation::Done { .. }
    ));
}

#[tokio::test]
async fn checkpoints_are_kept_in_redis_whole_and_for_their_time() {
    use toolsmith::state::CheckpointStore;
    let Some(server) = RedisServer::start() else {
        return;
    };
    let store = RedisStore::open(&server.url).unwrap();
    store
        .save("run-key", "{\"a\":1}", Duration::from_secs(60))
        .await
        .unwrap();
    store
        .save("run-key", "{\"a\":2}", Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(
        store.load("run-key").await.unwrap().as_deref(),
        Some("{\"a\":2}")
    );
    let huge = "x".repeat(toolsmith::state::MAX_CHECKPOINT_BYTES + 1);
    assert!(
        store
            .save("run-key", &huge, Duration::from_secs(60))
            .await
            .is_err()
    );
    assert_eq!(
        store.load("run-key").await.unwrap().as_deref(),
        Some("{\"a\":2}")
    );
    store
        .save("short", "{}", Duration::from_millis(50))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(120)).await;
    assert_eq!(store.load("short").await.unwrap(), None);
    store.remove("run-key").await.unwrap();
    assert_eq!(store.load("run-key").await.unwrap(), None);
}

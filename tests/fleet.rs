//! A fleet behaves like one: toolboxes sharing one Redis (as the processes of a fleet do)
//! share run budgets and circuit breakers exactly, and an unreachable Redis refuses calls with
//! a retryable error, never a duplicate or an unlimited call, until it is back.

#[path = "support/http.rs"]
mod http_exchange;
#[path = "support/redis.rs"]
mod redis_server;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use redis_server::RedisServer;
use serde_json::json;
use toolsmith::policy::{CircuitPolicy, RetryPolicy, RunBudget, SharedApprovals};
use toolsmith::state::RedisStore;
use toolsmith::{ErrorCode, ToolContext, ToolError, Toolbox, tool};

static LISTED: AtomicUsize = AtomicUsize::new(0);
static FETCHED: AtomicUsize = AtomicUsize::new(0);
static CHECKED: AtomicUsize = AtomicUsize::new(0);

/// Lists the open orders. Read-only. Not for closed orders.
#[tool(effect = "read", allow(unbounded_list))]
async fn list_orders() -> Vec<u32> {
    LISTED.fetch_add(1, Ordering::SeqCst);
    vec![1, 2]
}

/// Fetches the exchange rate from the bank. Read-only. Not for history.
#[tool(effect = "read")]
async fn fetch_rate(ctx: &ToolContext) -> Result<f64, ToolError> {
    FETCHED.fetch_add(1, Ordering::SeqCst);
    if ctx.get::<Healthy>().is_some() {
        // A healthy answer takes a moment, as a bank's would: a probe is still running when
        // another replica asks, instead of having closed the circuit already.
        tokio::time::sleep(Duration::from_millis(50)).await;
        Ok(1.08)
    } else {
        Err(ToolError::new(
            ErrorCode::UpstreamError,
            "The bank did not answer.",
        ))
    }
}

/// Checks the stock of an item. Read-only. Not for prices.
#[tool(effect = "read")]
async fn check_stock(
    /// The item.
    #[arg(length(min = 1, max = 40))]
    item: String,
) -> String {
    CHECKED.fetch_add(1, Ordering::SeqCst);
    format!("{item}: 3 left")
}

/// Marks a context whose bank answers.
/// Answers `pong`. Read-only. Not for real checks.
#[tool(effect = "read")]
async fn ping() -> String {
    "pong".to_owned()
}

/// Fetches an exchange rate from a bank that answers only when healthy. Read-only. Not for
/// payments.
#[tool(effect = "read")]
async fn fetch_fx(ctx: &ToolContext) -> Result<f64, ToolError> {
    if ctx.get::<Healthy>().is_some() {
        Ok(1.08)
    } else {
        Err(ToolError::new(
            ErrorCode::UpstreamError,
            "The bank did not answer.",
        ))
    }
}

struct Healthy;

/// One replica: a toolbox whose state is in the Redis at `url`.
fn replica(url: &str) -> Toolbox {
    Toolbox::new()
        .with(ListOrders)
        .with(FetchRate)
        .with(CheckStock)
        .with(Ping)
        .with(FetchFx)
        .with_state(toolsmith::state::State::shared(Arc::new(
            RedisStore::open(url).unwrap(),
        )))
        .with_defaults(toolsmith::policy::Defaults {
            budget: Some(RunBudget {
                max_calls: 10,
                ..Default::default()
            }),
            circuit: CircuitPolicy {
                failures: 3,
                cooldown: Duration::from_millis(400),
            },
            retry: RetryPolicy {
                max_attempts: 1,
                ..Default::default()
            },
            ..toolsmith::policy::Defaults::default()
        })
}

fn run(id: &str) -> ToolContext {
    ToolContext::new().with_run_id(id)
}

#[tokio::test]
async fn a_runs_budget_holds_exactly_across_replicas() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let replicas: Vec<Toolbox> = (0..3).map(|_| replica(&server.url)).collect();
    let before = LISTED.load(Ordering::SeqCst);
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..30 {
        let toolbox = replicas[i % 3].clone();
        calls.spawn(async move {
            let outcome = toolbox.call("list_orders", json!({}), &run("run-1")).await;
            outcome.error().map(|e| e.code())
        });
    }
    let outcomes = calls.join_all().await;
    assert_eq!(
        outcomes.iter().filter(|o| o.is_none()).count(),
        10,
        "{outcomes:?}"
    );
    assert!(
        outcomes
            .iter()
            .flatten()
            .all(|c| *c == ErrorCode::BudgetExhausted)
    );
    assert_eq!(LISTED.load(Ordering::SeqCst) - before, 10);
    // Another run has its own budget.
    assert!(
        replicas[0]
            .call("list_orders", json!({}), &run("run-2"))
            .await
            .is_success()
    );
}

#[tokio::test]
async fn a_circuit_opened_on_one_replica_is_open_on_all() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let (a, b) = (replica(&server.url), replica(&server.url));
    for _ in 0..3 {
        let failed = a.call("fetch_rate", json!({}), &ToolContext::new()).await;
        assert_eq!(failed.error().unwrap().code(), ErrorCode::UpstreamError);
    }
    let before = FETCHED.load(Ordering::SeqCst);
    let refused = b.call("fetch_rate", json!({}), &ToolContext::new()).await;
    let err = refused.error().unwrap();
    assert_eq!(err.code(), ErrorCode::CircuitOpen, "{err:?}");
    assert!(err.retry_after_ms().is_some_and(|ms| ms <= 400));
    assert_eq!(
        FETCHED.load(Ordering::SeqCst),
        before,
        "refused without a call"
    );

    // After the cooldown one probe goes, on either replica, and its success closes the
    // circuit for both.
    tokio::time::sleep(Duration::from_millis(450)).await;
    let healthy = ToolContext::new().with_extension(Healthy);
    let (first, second) = tokio::join!(
        a.call("fetch_rate", json!({}), &healthy),
        b.call("fetch_rate", json!({}), &healthy)
    );
    let codes = [
        first.error().map(|e| e.code()),
        second.error().map(|e| e.code()),
    ];
    assert!(codes.contains(&None), "{codes:?}");
    assert!(codes.contains(&Some(ErrorCode::CircuitOpen)), "{codes:?}");
    assert!(b.call("fetch_rate", json!({}), &healthy).await.is_success());
    assert!(a.call("fetch_rate", json!({}), &healthy).await.is_success());
}

/// While a shared circuit is clear (closed, no failure counted) a replica's calls cost Redis
/// nothing: it asks once, then takes the circuit for closed for `SHARED_CLEAR_FOR` (one
/// second). That is also the most it lags behind a circuit another replica opened.
#[tokio::test]
async fn a_clear_shared_circuit_costs_no_round_trip_and_a_replica_lags_at_most_a_second() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let slow_cooldown = |url: &str| {
        replica(url).with_defaults(toolsmith::policy::Defaults {
            circuit: CircuitPolicy {
                failures: 3,
                cooldown: Duration::from_secs(30),
            },
            retry: RetryPolicy {
                max_attempts: 1,
                ..Default::default()
            },
            ..toolsmith::policy::Defaults::default()
        })
    };
    let (a, b) = (slow_cooldown(&server.url), slow_cooldown(&server.url));
    let healthy = ToolContext::new().with_extension(Healthy);

    // The first call asks Redis; the next fifty ask nothing (one refresh at most, should a
    // second pass while they run).
    assert!(
        a.call("ping", json!({}), &ToolContext::new())
            .await
            .is_success()
    );
    let before = server.scripts_run();
    for _ in 0..50 {
        assert!(
            a.call("ping", json!({}), &ToolContext::new())
                .await
                .is_success()
        );
    }
    let asked = server.scripts_run() - before;
    assert!(
        asked <= 1,
        "{asked} scripts for 50 calls of a clear circuit"
    );

    // `a` has seen `fetch_fx` clear; `b` fails three times and opens its circuit.
    assert!(a.call("fetch_fx", json!({}), &healthy).await.is_success());
    for _ in 0..3 {
        let failed = b.call("fetch_fx", json!({}), &ToolContext::new()).await;
        assert_eq!(failed.error().unwrap().code(), ErrorCode::UpstreamError);
    }
    let refused = b.call("fetch_fx", json!({}), &healthy).await;
    assert_eq!(refused.error().unwrap().code(), ErrorCode::CircuitOpen);
    // Past the second `a` took the circuit for clear, `a` asks again and is refused too.
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let refused = a.call("fetch_fx", json!({}), &healthy).await;
    assert_eq!(
        refused.error().map(|e| e.code()),
        Some(ErrorCode::CircuitOpen),
        "{refused}"
    );
}

#[tokio::test]
async fn redis_down_refuses_calls_and_they_go_again_when_it_is_back() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let port = server.port();
    let toolbox = replica(&server.url);
    let ctx = run("run-down");
    assert!(
        toolbox
            .call("check_stock", json!({"item": "tea"}), &ctx)
            .await
            .is_success()
    );

    drop(server);
    let before = CHECKED.load(Ordering::SeqCst);
    for _ in 0..3 {
        let refused = toolbox
            .call("check_stock", json!({"item": "tea"}), &ctx)
            .await;
        let err = refused.error().expect("no shared state, no call");
        assert!(err.is_retryable(), "{err:?}");
        assert!(err.retry_after_ms().is_some());
    }
    assert_eq!(
        CHECKED.load(Ordering::SeqCst),
        before,
        "nothing ran while Redis was down"
    );

    let Some(_back) = RedisServer::start_on(port) else {
        return;
    };
    let outcome = toolbox
        .call("check_stock", json!({"item": "tea"}), &ctx)
        .await;
    assert!(outcome.is_success(), "{:?}", outcome.error());
    assert_eq!(CHECKED.load(Ordering::SeqCst), before + 1);
}

static REFUNDED: AtomicUsize = AtomicUsize::new(0);

/// Refunds an order. Writes money back: a person approves each refund. Not for discounts.
#[tool(effect = "write", requires_approval, idempotent)]
async fn refund_order(
    /// The order.
    #[arg(range(min = 1, max = 1_000_000))]
    order: u32,
) -> u32 {
    REFUNDED.fetch_add(1, Ordering::SeqCst);
    order
}

#[tokio::test]
async fn an_approval_given_through_one_replica_is_used_once_across_all() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let store = Arc::new(RedisStore::open(&server.url).unwrap());
    let approvals = SharedApprovals::new(Arc::clone(&store));
    let replicas: Vec<Toolbox> = (0..3)
        .map(|_| {
            replica(&server.url)
                .with(RefundOrder)
                .with_approver(approvals.clone())
        })
        .collect();
    let alice = || ToolContext::new().with_principal("alice");

    // Asked on one replica, waiting once for the whole fleet.
    let asked = replicas[0]
        .call("refund_order", json!({"order": 7}), &alice())
        .await;
    assert_eq!(asked.error().unwrap().code(), ErrorCode::ApprovalRequired);
    let again = replicas[1]
        .call("refund_order", json!({"order": 7}), &alice())
        .await;
    assert_eq!(again.error().unwrap().code(), ErrorCode::ApprovalRequired);
    let pending = approvals.pending().await.unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(
        (pending[0].tool.as_str(), pending[0].principal.as_deref()),
        ("refund_order", Some("alice"))
    );

    // Approved through another process's handle; the same call sent to all three at once
    // runs exactly once.
    SharedApprovals::new(store)
        .approve(&pending[0])
        .await
        .unwrap();
    let before = REFUNDED.load(Ordering::SeqCst);
    let mut calls = tokio::task::JoinSet::new();
    for toolbox in &replicas {
        let toolbox = toolbox.clone();
        calls.spawn(async move {
            let ctx = ToolContext::new().with_principal("alice");
            toolbox
                .call("refund_order", json!({"order": 7}), &ctx)
                .await
                .error()
                .map(|e| e.code())
        });
    }
    let outcomes = calls.join_all().await;
    assert_eq!(
        outcomes.iter().filter(|o| o.is_none()).count(),
        1,
        "{outcomes:?}"
    );
    assert!(
        outcomes
            .iter()
            .flatten()
            .all(|c| *c == ErrorCode::ApprovalRequired),
        "{outcomes:?}"
    );
    assert_eq!(REFUNDED.load(Ordering::SeqCst) - before, 1);
    assert!(approvals.pending().await.unwrap().len() <= 1);

    // Another principal's identical call is not covered; a denial holds everywhere.
    let bob = ToolContext::new().with_principal("bob");
    assert!(
        !replicas[2]
            .call("refund_order", json!({"order": 7}), &bob)
            .await
            .is_success()
    );
    let waiting = approvals.pending().await.unwrap();
    let bobs = waiting
        .iter()
        .find(|p| p.principal.as_deref() == Some("bob"))
        .unwrap();
    approvals.deny(bobs, "not his order").await.unwrap();
    let denied = replicas[0]
        .call("refund_order", json!({"order": 7}), &bob)
        .await;
    assert_eq!(denied.error().unwrap().code(), ErrorCode::ApprovalDenied);

    // Redis gone: refused, retryably, and not run.
    drop(server);
    let before = REFUNDED.load(Ordering::SeqCst);
    let down = replicas[1]
        .call("refund_order", json!({"order": 8}), &alice())
        .await;
    assert!(down.error().unwrap().is_retryable(), "{:?}", down.error());
    assert_eq!(REFUNDED.load(Ordering::SeqCst), before);
}

mod mcp {
    use super::*;
    use http_exchange::{exchange, message, whole_message};
    use toolsmith::caller::Elicited;
    use toolsmith::mcp::McpServer;

    /// A name, as the user gives it.
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Name {
        name: String,
    }

    /// Greets the user by the name they give. Read-only. Not for real work.
    #[tool(effect = "read")]
    async fn greet_user(ctx: &ToolContext) -> Result<String, ToolError> {
        match ctx.elicit_as::<Name>("user_name", "Your name?").await? {
            Elicited::Accepted(Name { name }) => Ok(format!("Hello, {name}!")),
            _ => Ok("Hello!".to_owned()),
        }
    }

    const STATE_KEY: &str = "the fleet's sealing key, 32 bytes or more of it";

    /// Three replicas of one MCP server with no sessions, sharing Redis and the sealing key.
    async fn fleet(url: &str) -> Vec<toolsmith::mcp::HttpServer> {
        let mut servers = Vec::new();
        for _ in 0..3 {
            let toolbox = replica(url).with(GreetUser);
            let server = McpServer::new(toolbox)
                .with_http(toolsmith::mcp::HttpOptions {
                    stateless: true,
                    ..Default::default()
                })
                .with_state_key(STATE_KEY)
                .bind_local_http(0)
                .await
                .unwrap();
            servers.push(server);
        }
        servers
    }

    async fn post(
        addr: std::net::SocketAddr,
        version: &str,
        method: &str,
        params: serde_json::Value,
    ) -> serde_json::Value {
        let body =
            json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
        let name = params["name"]
            .as_str()
            .map(|n| format!("mcp-name: {n}\r\n"))
            .unwrap_or_default();
        let request = format!(
            "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nmcp-protocol-version: {version}\r\nmcp-method: {method}\r\n{name}content-length: {}\r\n\r\n{body}",
            body.len()
        );
        message(&exchange(addr, request, whole_message).await)
    }

    #[tokio::test]
    async fn replicas_without_affinity_give_the_same_answers() {
        let Some(server) = RedisServer::start() else {
            return;
        };
        let servers = fleet(&server.url).await;
        let addrs: Vec<_> = servers.iter().map(|s| s.local_addr()).collect();

        // A 2025-11-25 client: its requests may land on any replica, with no session.
        let init = json!({"protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "c", "version": "1"}});
        let hello = post(addrs[0], "2025-11-25", "initialize", init).await;
        assert_eq!(hello["result"]["protocolVersion"], "2025-11-25", "{hello}");
        let mut answers = Vec::new();
        for addr in &addrs {
            let call = json!({"name": "ping", "arguments": {}});
            let answer = post(*addr, "2025-11-25", "tools/call", call).await;
            answers.push(answer["result"].clone());
        }
        assert!(
            answers
                .iter()
                .all(|a| a == &answers[0] && a["isError"] == false),
            "{answers:?}"
        );

        // A 2026-07-28 exchange whose rounds land on different replicas.
        let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}});
        let first = post(
            addrs[0],
            "2026-07-28",
            "tools/call",
            json!({"name": "greet_user", "arguments": {}, "_meta": meta}),
        )
        .await;
        assert_eq!(first["result"]["resultType"], "input_required", "{first}");
        let state = first["result"]["requestState"].clone();
        let second = post(
            addrs[2],
            "2026-07-28",
            "tools/call",
            json!({"name": "greet_user",
            "arguments": {}, "_meta": meta, "requestState": state,
            "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Ada"}}}}),
        )
        .await;
        let text = second["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        assert!(text.contains("Hello, Ada!"), "{second}");

        for server in servers {
            server.shutdown().await.unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_for_a_call_that_did_not_run_stays_for_the_fleet() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let store = Arc::new(RedisStore::open(&server.url).unwrap());
    let approvals = SharedApprovals::new(Arc::clone(&store));
    let replicas: Vec<Toolbox> = (0..2)
        .map(|_| {
            replica(&server.url)
                .with(RefundOrder)
                .with_approver(approvals.clone())
                .with_defaults(toolsmith::policy::Defaults {
                    budget: Some(RunBudget {
                        max_calls: 1,
                        ..Default::default()
                    }),
                    ..toolsmith::policy::Defaults::default()
                })
        })
        .collect();
    let carol = ToolContext::new()
        .with_principal("carol")
        .with_run_id("run-carol-1");
    let asked = replicas[0]
        .call("refund_order", json!({"order": 9}), &carol)
        .await;
    assert_eq!(asked.error().unwrap().code(), ErrorCode::ApprovalRequired);
    approvals
        .approve(&approvals.pending().await.unwrap()[0])
        .await
        .unwrap();
    // The run's one call is spent elsewhere: the approved refund is refused before it runs.
    assert!(
        replicas[0]
            .call("list_orders", json!({}), &carol)
            .await
            .is_success()
    );
    let refused = replicas[1]
        .call("refund_order", json!({"order": 9}), &carol)
        .await;
    assert_eq!(refused.error().unwrap().code(), ErrorCode::BudgetExhausted);
    // The approval stayed for the fleet, unused: the same call on the other replica passes
    // the approval gate unasked (and meets the spent budget again).
    let before = REFUNDED.load(Ordering::SeqCst);
    let again = replicas[0]
        .call("refund_order", json!({"order": 9}), &carol)
        .await;
    assert_eq!(again.error().unwrap().code(), ErrorCode::BudgetExhausted);
    assert_eq!(REFUNDED.load(Ordering::SeqCst), before);
    // It is this run's: the same refund in another run of carol's waits for its own.
    let other = ToolContext::new()
        .with_principal("carol")
        .with_run_id("run-carol-2");
    let asked = replicas[1]
        .call("refund_order", json!({"order": 9}), &other)
        .await;
    assert_eq!(asked.error().unwrap().code(), ErrorCode::ApprovalRequired);
    assert_eq!(approvals.pending().await.unwrap().len(), 1);
}

/// Files a note for review. Writes. Not for drafts.
#[tool(effect = "write", requires_approval, idempotent)]
async fn file_note(
    /// The note.
    #[arg(length(max = 300_000))]
    text: String,
) -> usize {
    text.len()
}

#[tokio::test]
async fn the_waiting_approvals_in_redis_are_bounded_by_count_and_bytes() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let store = Arc::new(RedisStore::open(&server.url).unwrap());
    let approvals = SharedApprovals::new(Arc::clone(&store));
    let toolbox = replica(&server.url)
        .with(FileNote)
        .with(RefundOrder)
        .with_approver(approvals.clone());
    let ctx = ToolContext::new().with_principal("ada");
    // By bytes: 400 requests of 200 KiB (80 MB if kept), bounded to 64 MiB.
    for i in 0..400 {
        let text = format!("{i:06}{}", "x".repeat(200 * 1024));
        let out = toolbox
            .call("file_note", json!({ "text": text }), &ctx)
            .await;
        assert_eq!(out.error().unwrap().code(), ErrorCode::ApprovalRequired);
    }
    let pending = approvals.pending().await.unwrap();
    let bytes: usize = pending
        .iter()
        .map(|p| serde_json::to_string(&p.arguments).unwrap().len())
        .sum();
    assert!(bytes <= 64 << 20, "{bytes} bytes waiting");
    assert!(
        pending.len() < 400 && pending.len() > 200,
        "{}",
        pending.len()
    );
    let newest = |p: &toolsmith::policy::PendingApproval| {
        p.arguments["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("000399"))
    };
    assert!(pending.iter().any(newest), "the newest is kept");
    // By count: 4,100 small requests, at most 4,096 kept.
    for order in 1..=4_100 {
        let out = toolbox
            .call("refund_order", json!({ "order": order }), &ctx)
            .await;
        assert_eq!(out.error().unwrap().code(), ErrorCode::ApprovalRequired);
    }
    let pending = approvals.pending().await.unwrap();
    assert_eq!(pending.len(), 4_096);
    // A decision takes its request off the list and out of the bound's count.
    approvals.approve(&pending[0]).await.unwrap();
    assert_eq!(approvals.pending().await.unwrap().len(), 4_095);
}

/// The task store in Redis: a record read by anyone, messages taken once, oldest first, at
/// most `MAX_TASK_MESSAGES` waiting, and none left for a task no replica shares.
#[tokio::test]
async fn the_task_store_keeps_records_and_bounded_messages() {
    use toolsmith::state::{MAX_TASK_MESSAGES, TaskStore};
    let Some(server) = RedisServer::start() else {
        return;
    };
    let store = RedisStore::open(&server.url).unwrap();
    let minute = Duration::from_secs(60);
    store.post("nobody", "cancel", minute).await.unwrap();
    assert!(store.take("nobody").await.unwrap().is_empty());
    store.publish("t", r#"{"v":1}"#, minute).await.unwrap();
    store.publish("t", r#"{"v":2}"#, minute).await.unwrap();
    assert_eq!(
        store.read("t").await.unwrap().as_deref(),
        Some(r#"{"v":2}"#)
    );
    for n in 0..MAX_TASK_MESSAGES {
        store.post("t", &n.to_string(), minute).await.unwrap();
    }
    assert!(store.post("t", "one too many", minute).await.is_err());
    let taken = store.take("t").await.unwrap();
    assert_eq!(taken.len(), MAX_TASK_MESSAGES);
    assert_eq!(taken[0], "0");
    assert!(store.take("t").await.unwrap().is_empty());
    store
        .publish("gone", "{}", Duration::from_millis(20))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(60)).await;
    assert_eq!(store.read("gone").await.unwrap(), None);
}

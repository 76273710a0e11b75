//! The fleet as real processes: one `redis-server` and three `fleet_replica` processes (the
//! example), each an MCP server over streamable HTTP on a free loopback port with no sessions,
//! calls spread across them as a load balancer with no affinity would. A run's budget holds
//! exactly; a circuit opened by one replica is open on all; a rate limit holds for the fleet
//! within 10%; an approval is used once; a write sent to all three at once runs once; Redis
//! killed mid-run gives retryable errors and no duplicate, and calls go again when it is back.
//!
//! Needs the example built (`scripts/test.sh` builds every example first) and `redis-server`.

#[path = "support/http.rs"]
mod http_exchange;
#[path = "support/redis.rs"]
mod redis_server;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use http_exchange::{exchange, message, whole_message};
use redis_server::RedisServer;
use serde_json::{Value, json};
use toolsmith::policy::SharedApprovals;
use toolsmith::state::RedisStore;

/// A `fleet_replica` process, killed when dropped.
struct Replica {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn example() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let path = exe
        .parent()?
        .parent()?
        .join("examples")
        .join("fleet_replica");
    path.exists().then_some(path)
}

fn start(binary: &Path, redis: &str, log: &Path) -> Replica {
    let mut child = Command::new(binary)
        .args([redis, "127.0.0.1:0", &log.display().to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the replica starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("its stdout"))
        .read_line(&mut line)
        .expect("it prints its URL");
    let addr = line
        .trim()
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .parse()
        .expect("a loopback address");
    Replica { child, addr }
}

/// The fleet: Redis, three replicas, and the file each writes its tool runs to.
struct Fleet {
    redis: Option<RedisServer>,
    port: u16,
    replicas: Vec<Replica>,
    logs: Vec<PathBuf>,
}

impl Fleet {
    fn start() -> Option<Self> {
        let Some(binary) = example() else {
            assert!(
                std::env::var_os("TOOLSMITH_REQUIRE_REDIS").is_none(),
                "build the examples first (scripts/test.sh does)"
            );
            return None;
        };
        let redis = RedisServer::start()?;
        let port = redis.port();
        let dir =
            std::env::temp_dir().join(format!("toolsmith-fleet-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).ok()?;
        let logs: Vec<PathBuf> = (0..3)
            .map(|i| dir.join(format!("replica-{i}.log")))
            .collect();
        let replicas = logs
            .iter()
            .map(|log| start(&binary, &redis.url, log))
            .collect();
        Some(Self {
            redis: Some(redis),
            port,
            replicas,
            logs,
        })
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// How many times the tool runs written `what` happened, over all replicas.
    fn runs(&self, what: &str) -> usize {
        self.logs
            .iter()
            .map(|log| {
                std::fs::read_to_string(log)
                    .unwrap_or_default()
                    .lines()
                    .filter(|l| *l == what)
                    .count()
            })
            .sum()
    }

    /// Calls `tool` on replica `i` (a 2025-11-25 request with no session), in run `run` for
    /// user `user`; the `tools/call` result.
    async fn call(&self, i: usize, tool: &str, arguments: Value, run: &str, user: &str) -> Value {
        let addr = self.replicas[i % self.replicas.len()].addr;
        // A run named in `_meta` is an id of 16 characters or more.
        let meta =
            json!({"toolsmith/run": format!("{run}-of-the-fleet-test"), "toolsmith/user": user});
        call_at(addr, tool, arguments, meta).await
    }
}

/// One `tools/call` to the replica at `addr`; its result.
async fn call_at(addr: SocketAddr, tool: &str, arguments: Value, meta: Value) -> Value {
    let params = json!({"name": tool, "arguments": arguments, "_meta": meta});
    let body =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-11-25\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    message(&exchange(addr, request, whole_message).await)["result"].clone()
}

/// The error code of a `tools/call` result (`None` for a success).
fn code(result: &Value) -> Option<String> {
    if result["isError"] != true {
        return None;
    }
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    let envelope: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    Some(
        envelope["error"]["code"]
            .as_str()
            .unwrap_or("unreadable")
            .to_owned(),
    )
}

fn retryable(result: &Value) -> bool {
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    let envelope: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    envelope["error"]["retryable"] == true
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_processes_on_one_redis_behave_as_one() {
    let Some(mut fleet) = Fleet::start() else {
        return;
    };
    let fleet_ref = &fleet;

    // A run's budget of 10 calls, 30 calls spread over the three: exactly 10 run.
    let mut codes = Vec::new();
    for i in 0..30 {
        codes.push(code(
            &fleet_ref
                .call(i, "list_orders", json!({}), "run-budget", "ada")
                .await,
        ));
    }
    assert_eq!(
        codes.iter().filter(|c| c.is_none()).count(),
        10,
        "{codes:?}"
    );
    assert!(
        codes.iter().flatten().all(|c| c == "budget_exhausted"),
        "{codes:?}"
    );
    assert_eq!(fleet.runs("list_orders"), 10);

    // Three failures on replica 0 open the circuit; replicas 1 and 2 refuse without a call.
    for n in 0..3 {
        let failed = fleet
            .call(0, "fetch_rate", json!({}), &format!("run-c{n}"), "ada")
            .await;
        assert_eq!(code(&failed).as_deref(), Some("upstream_error"));
    }
    for i in [1, 2] {
        let refused = fleet
            .call(i, "fetch_rate", json!({}), &format!("run-o{i}"), "ada")
            .await;
        assert_eq!(code(&refused).as_deref(), Some("circuit_open"), "{refused}");
    }
    assert_eq!(fleet.runs("fetch_rate"), 3);

    // A clear circuit costs Redis nothing per call: `add` (no rate limit, and no run budget
    // for a call without a run) asks once, then takes its circuit for closed for a second.
    let add = json!({"a": 1, "b": 2});
    let first = call_at(fleet.replicas[0].addr, "add", add.clone(), json!({})).await;
    assert!(code(&first).is_none(), "{first}");
    let before = redis_server::scripts_run(fleet.port);
    for _ in 0..20 {
        let result = call_at(fleet.replicas[0].addr, "add", add.clone(), json!({})).await;
        assert!(code(&result).is_none(), "{result}");
    }
    let asked = redis_server::scripts_run(fleet.port) - before;
    assert!(
        asked <= 1,
        "{asked} scripts for 20 calls of a clear circuit"
    );

    // A limit of 20 calls a second for the fleet: 3 s of calls as fast as four clients send
    // them, spread over the replicas, admit 61 (20 a second, and the first at once), ±10%.
    let started = Instant::now();
    let mut clients = Vec::new();
    for c in 0..4 {
        let addrs: Vec<SocketAddr> = fleet.replicas.iter().map(|r| r.addr).collect();
        clients.push(tokio::spawn(async move {
            let mut admitted = 0;
            let mut n = c;
            while started.elapsed() < Duration::from_secs(3) {
                let addr = addrs[n % 3];
                n += 1;
                let meta = json!({"toolsmith/run": format!("run-rate-{c}-{n}-of-the-fleet-test")});
                let result = call_at(addr, "look_up", json!({"word": "tide"}), meta).await;
                if code(&result).is_none() {
                    admitted += 1;
                }
            }
            admitted
        }));
    }
    let mut admitted = 0;
    for client in clients {
        admitted += client.await.unwrap();
    }
    let seconds = started.elapsed().as_secs_f64();
    let expected = 20.0 * seconds + 1.0;
    let off = (f64::from(admitted) - expected).abs() / expected;
    eprintln!(
        "rate limit of 20/s over 3 replicas: {admitted} admitted in {seconds:.2} s (expected {expected:.0})"
    );
    assert!(
        off <= 0.10,
        "{admitted} admitted in {seconds:.2} s, expected about {expected:.0}"
    );

    // An approval given once lets the run's call run once, though sent to the three
    // replicas at once.
    let asked = fleet
        .call(0, "refund_order", json!({"order": 7}), "run-refund", "ada")
        .await;
    assert_eq!(
        code(&asked).as_deref(),
        Some("approval_required"),
        "{asked}"
    );
    let approvals = SharedApprovals::new(Arc::new(RedisStore::open(&fleet.url()).unwrap()));
    let pending = approvals.pending().await.unwrap();
    assert_eq!(pending.len(), 1);
    approvals.approve(&pending[0]).await.unwrap();
    let (a, b, c) = tokio::join!(
        fleet_ref.call(0, "refund_order", json!({"order": 7}), "run-refund", "ada"),
        fleet_ref.call(1, "refund_order", json!({"order": 7}), "run-refund", "ada"),
        fleet_ref.call(2, "refund_order", json!({"order": 7}), "run-refund", "ada"),
    );
    let codes = [code(&a), code(&b), code(&c)];
    // One runs on the approval; the others are that run's (its answer replayed, or still
    // running), never a second refund.
    assert!(
        codes
            .iter()
            .all(|c| c.is_none() || c.as_deref() == Some("in_progress")),
        "{codes:?}"
    );
    assert_eq!(fleet.runs("refund_order 7"), 1);
    // The approval was the run's: the same refund in another run waits for its own.
    let other = fleet_ref
        .call(
            1,
            "refund_order",
            json!({"order": 7}),
            "run-refund-b",
            "ada",
        )
        .await;
    assert_eq!(
        code(&other).as_deref(),
        Some("approval_required"),
        "{other}"
    );
    assert_eq!(fleet.runs("refund_order 7"), 1);

    // The same write sent to all three at once (one run, so one derived idempotency key) runs
    // once; the others get its result.
    let (a, b, c) = tokio::join!(
        fleet_ref.call(
            0,
            "send_invoice",
            json!({"invoice": 42}),
            "run-invoice",
            "ada"
        ),
        fleet_ref.call(
            1,
            "send_invoice",
            json!({"invoice": 42}),
            "run-invoice",
            "ada"
        ),
        fleet_ref.call(
            2,
            "send_invoice",
            json!({"invoice": 42}),
            "run-invoice",
            "ada"
        ),
    );
    assert!(
        [&a, &b, &c].iter().all(|r| code(r).is_none()),
        "{a} {b} {c}"
    );
    assert_eq!(fleet.runs("send_invoice 42"), 1);

    // Redis killed mid-run: retryable errors, nothing runs; back on its port, calls go again.
    fleet.redis = None;
    for i in 0..3 {
        let down = fleet
            .call(i, "send_invoice", json!({"invoice": 43}), "run-down", "ada")
            .await;
        assert!(code(&down).is_some() && retryable(&down), "{down}");
    }
    assert_eq!(fleet.runs("send_invoice 43"), 0);
    fleet.redis = RedisServer::start_on(fleet.port);
    assert!(fleet.redis.is_some());
    let back = fleet
        .call(1, "send_invoice", json!({"invoice": 43}), "run-down", "ada")
        .await;
    assert!(code(&back).is_none(), "{back}");
    let again = fleet
        .call(2, "send_invoice", json!({"invoice": 43}), "run-down", "ada")
        .await;
    assert!(code(&again).is_none(), "{again}");
    assert_eq!(fleet.runs("send_invoice 43"), 1);
}

/// One MCP 2026-07-28 request to the replica at `addr` (no session; the client takes tasks
/// and elicitation) from `user`; its JSON-RPC answer.
async fn task_request(addr: SocketAddr, method: &str, mut params: Value, user: &str) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":
            {"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}},
        "toolsmith/user": user,
    });
    let name = params
        .get("name")
        .or_else(|| params.get("taskId"))
        .and_then(Value::as_str)
        .map(|n| format!("mcp-name: {n}\r\n"))
        .unwrap_or_default();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nmcp-protocol-version: 2026-07-28\r\nmcp-method: {method}\r\n{name}content-length: {}\r\n\r\n{body}",
        body.len()
    );
    message(&exchange(addr, request, whole_message).await)
}

/// `tasks/get` on `addr` until the task's status is `status` (or 10 s pass); the last answer.
async fn task_until(addr: SocketAddr, id: &str, user: &str, status: &str) -> Value {
    let mut got = Value::Null;
    for _ in 0..200 {
        got = task_request(addr, "tasks/get", json!({"taskId": id}), user).await;
        if got["result"]["status"] == status {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    got
}

/// A task made on one replica is known at once to the others, asks through any of them,
/// takes its answer from another, and is cancelled from a third; it stays its user's.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_mcp_task_made_on_one_replica_is_read_answered_and_cancelled_on_another() {
    let Some(fleet) = Fleet::start() else {
        return;
    };
    let addr = |i: usize| fleet.replicas[i].addr;
    let call = json!({"name": "export_orders", "arguments": {"ms": 50}});
    let created = task_request(addr(0), "tools/call", call, "ada").await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();

    // Known at once on another replica, and its question is seen there.
    let seen = task_request(addr(1), "tasks/get", json!({"taskId": id}), "ada").await;
    assert!(seen.get("error").is_none(), "{seen}");
    let asking = task_until(addr(1), &id, "ada", "input_required").await;
    assert_eq!(
        asking["result"]["inputRequests"]["format"]["method"], "elicitation/create",
        "{asking}"
    );
    // Another user is told of no such task, on every replica.
    for i in 0..3 {
        let refused = task_request(addr(i), "tasks/get", json!({"taskId": id}), "eve").await;
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
        let cancel = task_request(addr(i), "tasks/cancel", json!({"taskId": id}), "eve").await;
        assert_eq!(cancel["error"]["code"], -32602, "{cancel}");
    }
    // Answered on the third replica; the first runs on with the answer.
    let answer = json!({"taskId": id, "inputResponses": {"format": {"action": "accept", "content": {"format": "json"}}}});
    let ack = task_request(addr(2), "tasks/update", answer, "ada").await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    let done = task_until(addr(1), &id, "ada", "completed").await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    let text = done["result"]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("exported as json"), "{done}");
    assert_eq!(fleet.runs("export_orders json"), 1);

    // A long export, cancelled from another replica: it stops where it runs.
    let call = json!({"name": "export_orders", "arguments": {"ms": 60_000}});
    let created = task_request(addr(1), "tools/call", call, "ada").await;
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    task_until(addr(0), &id, "ada", "input_required").await;
    let answer = json!({"taskId": id, "inputResponses": {"format": {"action": "accept", "content": {"format": "csv"}}}});
    task_request(addr(0), "tasks/update", answer, "ada").await;
    task_until(addr(2), &id, "ada", "working").await;
    let ack = task_request(addr(2), "tasks/cancel", json!({"taskId": id}), "ada").await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    let ended = task_until(addr(0), &id, "ada", "cancelled").await;
    assert_eq!(ended["result"]["status"], "cancelled", "{ended}");
    assert_eq!(fleet.runs("export_orders cancelled"), 1);
}

//! One replica of a fleet: an MCP server over streamable HTTP, with no sessions, whose state
//! (idempotency, results, rate limits, run budgets, circuits, approvals, MCP tasks) is in a
//! shared Redis.
//! Start several on one Redis and put any load balancer in front (docs/deployment.md).
//!
//! ```sh
//! cargo run --example fleet_replica --features mcp,redis -- redis://127.0.0.1:6379/ 127.0.0.1:0 executions.log
//! cargo run --example fleet_replica --features mcp,redis -- memory 127.0.0.1:0 /dev/null --sessions
//! ```
//!
//! `memory` instead of a Redis URL keeps the state in the process (one process alone);
//! `--sessions` keeps 2025-11-25 sessions instead of serving every request on its own.
//!
//! The first line on stdout is the endpoint's URL. Each tool run appends a line to the log
//! file (the fleet tests count them). A request's run is `_meta["toolsmith/run"]` (an id of
//! 16 characters or more; the server refuses shorter ones) and its user
//! `_meta["toolsmith/user"]`. Ctrl-C stops it.

use std::io::Write;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use toolsmith::mcp::McpServer;
use toolsmith::policy::{
    CircuitPolicy, RateLimit, RetryPolicy, RunBudget, SharedApprovals, ToolPolicy,
};
use toolsmith::state::{RedisStore, State};
use toolsmith::{ErrorCode, ToolContext, ToolError, Toolbox, tool};

mod telemetry;
#[path = "tools/mod.rs"]
#[allow(dead_code)]
mod tools;

/// Where each tool run is written down.
#[derive(Clone)]
struct Executions(Arc<Mutex<std::fs::File>>);

fn executed(ctx: &ToolContext, what: &str) {
    if let Some(Executions(file)) = ctx.get::<Executions>()
        && let Ok(mut file) = file.lock()
    {
        let _ = writeln!(file, "{what}");
    }
}

/// Lists the open orders. Read-only. Not for closed orders.
#[tool(effect = "read", allow(unbounded_list))]
async fn list_orders(ctx: &ToolContext) -> Vec<u32> {
    executed(ctx, "list_orders");
    vec![1, 2, 3]
}

/// Fetches the exchange rate from the bank, which is down. Read-only. Not for history.
#[tool(effect = "read")]
async fn fetch_rate(ctx: &ToolContext) -> Result<f64, ToolError> {
    executed(ctx, "fetch_rate");
    Err(ToolError::new(
        ErrorCode::UpstreamError,
        "The bank did not answer.",
    ))
}

/// Looks a word up in the dictionary service. Read-only. Not for translations.
#[tool(effect = "read")]
async fn look_up(
    ctx: &ToolContext,
    /// The word.
    #[arg(length(min = 1, max = 40))]
    word: String,
) -> String {
    executed(ctx, "look_up");
    format!("{word}: a word")
}

/// Sends an invoice to a customer. Writes data: the customer gets an email. Not for quotes.
#[tool(effect = "write")]
async fn send_invoice(
    ctx: &ToolContext,
    /// The invoice.
    #[arg(range(min = 1, max = 1_000_000))]
    invoice: u32,
) -> u32 {
    executed(ctx, &format!("send_invoice {invoice}"));
    tokio::time::sleep(Duration::from_millis(50)).await;
    invoice
}

/// Refunds an order. Writes money back: a person approves each refund. Not for discounts.
#[tool(effect = "write", requires_approval, idempotent)]
async fn refund_order(
    ctx: &ToolContext,
    /// The order.
    #[arg(range(min = 1, max = 1_000_000))]
    order: u32,
) -> u32 {
    executed(ctx, &format!("refund_order {order}"));
    order
}

/// The format of an export, as the user chooses it.
#[derive(serde::Deserialize, toolsmith::schemars::JsonSchema)]
struct Format {
    /// `csv` or `json`.
    format: String,
}

/// Exports the orders: asks the user for the format, then works for `ms` milliseconds; an MCP
/// task for a client that takes tasks. Read-only. Not for a single order.
#[tool(effect = "read", timeout = "2m")]
async fn export_orders(
    ctx: &ToolContext,
    /// How long the export takes, in milliseconds.
    #[arg(range(max = 60_000))]
    ms: u64,
) -> Result<String, ToolError> {
    use toolsmith::caller::Elicited;
    let format = match ctx.elicit_as::<Format>("format", "Which format?").await? {
        Elicited::Accepted(Format { format }) => format,
        _ => "csv".to_owned(),
    };
    executed(ctx, &format!("export_orders {format}"));
    tokio::select! {
        () = tokio::time::sleep(Duration::from_millis(ms)) => Ok(format!("exported as {format}")),
        () = ctx.cancelled() => {
            executed(ctx, "export_orders cancelled");
            Err(ToolError::new(ErrorCode::Cancelled, "Stopped."))
        }
    }
}

/// The fleet's toolbox: every replica builds the same one (`memory`: state in the process).
fn toolbox(redis: &str) -> Result<Toolbox, String> {
    let one_try = ToolPolicy {
        max_attempts: Some(1),
        ..Default::default()
    };
    let toolbox = Toolbox::new()
        .with(ListOrders)
        .with(FetchRate)
        .with(LookUp)
        .with(SendInvoice)
        .with(RefundOrder)
        .with(ExportOrders)
        .with(tools::Add)
        .with(tools::SearchWeb);
    // The key signs cursors and stored results' ids: the same on every replica.
    let key = "the fleet's cursor key, 32 bytes or more of it";
    let toolbox = if redis == "memory" {
        toolbox
            .with_state(State::memory().with_key(key))
            .with_approver(toolsmith::policy::Approvals::new())
    } else {
        let store = Arc::new(RedisStore::open(redis).map_err(|e| e.to_string())?);
        toolbox
            .with_state(State::shared(Arc::clone(&store)).with_key(key))
            .with_approver(SharedApprovals::new(store))
    };
    Ok(toolbox
        .with_defaults(toolsmith::policy::Defaults {
            budget: Some(RunBudget {
                max_calls: 10,
                ..Default::default()
            }),
            circuit: CircuitPolicy {
                failures: 3,
                cooldown: Duration::from_secs(60),
            },
            retry: RetryPolicy {
                max_attempts: 1,
                ..Default::default()
            },
            ..toolsmith::policy::Defaults::default()
        })
        .with_tool_policy(
            "look_up",
            ToolPolicy {
                rate_limit: Some(RateLimit::per_second(20)),
                ..one_try
            },
        ))
}

/// The server as an OAuth resource server for its endpoint at `addr`, trusting `issuer`'s
/// tokens; unchanged without an issuer.
fn protect(server: McpServer, issuer: Option<&str>, addr: &str) -> Result<McpServer, String> {
    let Some(issuer) = issuer else {
        return Ok(server);
    };
    #[cfg(feature = "mcp-auth")]
    {
        use toolsmith::mcp::{Authorization, JwtVerifier};
        let resource = format!("http://{addr}/mcp");
        server
            .with_authorization(
                Authorization::new(&resource, JwtVerifier::new(issuer, &resource))
                    .with_authorization_server(issuer),
            )
            .map_err(|err| err.to_string())
    }
    #[cfg(not(feature = "mcp-auth"))]
    {
        let _ = (server, addr);
        Err(format!(
            "--auth {issuer} needs the feature mcp-auth: cargo build --example fleet_replica --features mcp,redis,mcp-auth"
        ))
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let _telemetry = telemetry::export();
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    // `--auth ISSUER`: an OAuth resource server trusting ISSUER's JWTs (feature `mcp-auth`).
    let issuer = match args.iter().position(|a| a == "--auth") {
        Some(at) if at + 1 < args.len() => {
            let issuer = args.remove(at + 1);
            args.remove(at);
            Some(issuer)
        }
        Some(_) => {
            eprintln!("--auth needs the issuer's URL");
            return ExitCode::FAILURE;
        }
        None => None,
    };
    let (sessions, args): (Vec<&String>, Vec<&String>) =
        args.iter().partition(|a| a.as_str() == "--sessions");
    let [redis, addr, log] = args.as_slice() else {
        eprintln!(
            "usage: fleet_replica <redis url|memory> <address> <log file> [--sessions] [--auth <issuer URL>]"
        );
        return ExitCode::FAILURE;
    };
    let toolbox = match toolbox(redis) {
        Ok(toolbox) => toolbox,
        Err(err) => {
            eprintln!("{err}");
            return ExitCode::FAILURE;
        }
    };
    let log = match std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
    {
        Ok(file) => Executions(Arc::new(Mutex::new(file))),
        Err(err) => {
            eprintln!("cannot open the log: {err}");
            return ExitCode::FAILURE;
        }
    };
    let server = McpServer::new(toolbox)
        .with_name("fleet-replica", env!("CARGO_PKG_VERSION"))
        .with_task_tool("export_orders", toolsmith::mcp::TaskSupport::Optional);
    let server = if sessions.is_empty() {
        server.with_http(toolsmith::mcp::HttpOptions {
            stateless: true,
            ..Default::default()
        })
    } else {
        server.with_http(toolsmith::mcp::HttpOptions {
            max_sessions: 100_000,
            ..Default::default()
        })
    };
    let server = server
        .with_state_key("the fleet's sealing key, 32 bytes or more of it")
        .with_context(move |ctx, request| {
            let meta = request.meta();
            let mut ctx = ctx.with_extension(log.clone());
            if let Some(run) = meta.get("toolsmith/run").and_then(|v| v.as_str()) {
                ctx = ctx.with_run_id(run);
            }
            if let Some(user) = meta.get("toolsmith/user").and_then(|v| v.as_str()) {
                ctx = ctx.with_principal(user);
            }
            ctx
        });
    let server = match protect(server, issuer.as_deref(), addr) {
        Ok(server) => server,
        Err(err) => {
            eprintln!("{err}");
            return ExitCode::FAILURE;
        }
    };
    let http = match server.bind_http(addr.as_str()).await {
        Ok(http) => http,
        Err(err) => {
            eprintln!("cannot serve: {err}");
            return ExitCode::FAILURE;
        }
    };
    println!("{}", http.url());
    let _ = tokio::signal::ctrl_c().await;
    match http.shutdown().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("{err}");
            ExitCode::FAILURE
        }
    }
}

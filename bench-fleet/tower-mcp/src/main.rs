//! The load benchmark's second baseline: the same two tools as `fleet_replica` (`add`,
//! `search_web`) on tower-mcp 0.25, built with its `ToolBuilder` and served by its
//! `HttpTransport` with no sessions (its SEP-1442 stateless path) and plain JSON answers. Its
//! schema validation is on (feature `schema-validation`), so an unknown field, a query out of
//! its length or a count out of its range is refused, as toolsmith refuses them.
//!
//! ```sh
//! cargo run --release --manifest-path bench-fleet/tower-mcp/Cargo.toml -- 127.0.0.1:0            # no sessions
//! cargo run --release --manifest-path bench-fleet/tower-mcp/Cargo.toml -- 127.0.0.1:0 --sessions # 2025-11-25 sessions
//! ```
//!
//! The first line on stdout is the endpoint's URL.

use std::process::ExitCode;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tower_mcp::stateless::StatelessConfig;
use tower_mcp::transport::http::HttpTransport;
use tower_mcp::{CallToolResult, McpRouter, ToolBuilder};

/// The arguments of `add`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct AddArgs {
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
}

/// A recent window.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum DateRestrict {
    /// The last day.
    D1,
    /// The last week.
    W1,
    /// The last month.
    M1,
}

/// The arguments of `search_web`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    /// Search keywords in natural language; never a URL or SQL.
    #[schemars(length(min = 2, max = 300))]
    query: String,
    /// How many results to return.
    #[schemars(range(min = 1, max = 10))]
    #[serde(default = "five")]
    num_results: u8,
    /// Only results from this recent window; omit for no limit.
    date_restrict: Option<DateRestrict>,
}

fn five() -> u8 {
    5
}

/// One search hit.
#[derive(Serialize)]
struct Hit {
    title: String,
    url: String,
}

/// What a search found.
#[derive(Serialize)]
struct SearchResults {
    hits: Vec<Hit>,
}

fn router() -> McpRouter {
    let add = ToolBuilder::new("add")
        .description("Add two integers. Pure; no side effects. Not for floating-point numbers.")
        .read_only()
        .handler(|AddArgs { a, b }: AddArgs| async move {
            Ok(CallToolResult::text(a.saturating_add(b).to_string()))
        })
        .build();
    let search = ToolBuilder::new("search_web")
        .description("Search the web for real-time information. Read-only.")
        .read_only()
        .handler(|args: SearchArgs| async move {
            let window = args
                .date_restrict
                .map_or_else(|| "any time".to_owned(), |d| format!("{d:?}"));
            let hits = (1..=args.num_results)
                .map(|i| Hit {
                    title: format!("Result {i} for {:?} ({window})", args.query),
                    url: format!("https://example.com/{i}"),
                })
                .collect();
            let text = serde_json::to_string(&SearchResults { hits })?;
            Ok(CallToolResult::text(text))
        })
        .build();
    McpRouter::new()
        .server_info("tower-mcp-baseline", "0.0.0")
        .tool(add)
        .tool(search)
}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(addr) = args.first() else {
        eprintln!("usage: tower_mcp <address> [--sessions]");
        return ExitCode::FAILURE;
    };
    let sessions = args.iter().any(|a| a == "--sessions");
    let mut transport = HttpTransport::new(router()).max_sessions(100_000);
    if !sessions {
        transport = transport.stateless(StatelessConfig::new());
    }
    let listener = match tokio::net::TcpListener::bind(addr.as_str()).await {
        Ok(listener) => listener,
        Err(err) => {
            eprintln!("cannot bind {addr}: {err}");
            return ExitCode::FAILURE;
        }
    };
    match listener.local_addr() {
        Ok(local) => println!("http://{local}/mcp"),
        Err(err) => {
            eprintln!("{err}");
            return ExitCode::FAILURE;
        }
    }
    let app = transport.into_router_at("/mcp");
    match axum::serve(listener, app).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("{err}");
            ExitCode::FAILURE
        }
    }
}

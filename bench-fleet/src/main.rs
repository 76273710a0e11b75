//! The load benchmark's baseline: the same two tools as `fleet_replica` (`add`, `search_web`)
//! on a bare rmcp server, with rmcp's own `#[tool]` macro, served over streamable HTTP by the
//! same axum, with no validation beyond serde and no execution policy.
//!
//! ```sh
//! cargo run --release --manifest-path bench-fleet/Cargo.toml -- 127.0.0.1:0            # no sessions
//! cargo run --release --manifest-path bench-fleet/Cargo.toml -- 127.0.0.1:0 --sessions # 2025-11-25 sessions
//! ```
//!
//! The first line on stdout is the endpoint's URL.

use std::process::ExitCode;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServerHandler, schemars, tool, tool_handler, tool_router};

/// The arguments of `add`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
}

/// The arguments of `search_web`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct SearchArgs {
    /// Search keywords in natural language; never a URL or SQL.
    query: String,
    /// How many results to return.
    num_results: Option<u8>,
}

#[derive(Clone)]
struct Bare {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Bare {
    #[tool(
        description = "Add two integers. Pure; no side effects. Not for floating-point numbers."
    )]
    fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> String {
        a.saturating_add(b).to_string()
    }

    #[tool(description = "Search the web for real-time information. Read-only.")]
    fn search_web(&self, Parameters(args): Parameters<SearchArgs>) -> String {
        let hits: Vec<serde_json::Value> = (1..=args.num_results.unwrap_or(5))
            .map(|i| {
                serde_json::json!({"title": format!("Result {i} for {:?} (any time)", args.query),
                    "url": format!("https://example.com/{i}")})
            })
            .collect();
        serde_json::json!({"hits": hits}).to_string()
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Bare {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(addr) = args.first() else {
        eprintln!("usage: bare_rmcp <address> [--sessions]");
        return ExitCode::FAILURE;
    };
    let sessions = args.iter().any(|a| a == "--sessions");
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(sessions)
        .with_json_response(!sessions);
    let service: StreamableHttpService<Bare, LocalSessionManager> = StreamableHttpService::new(
        || {
            Ok(Bare {
                tool_router: Bare::tool_router(),
            })
        },
        Default::default(),
        config,
    );
    let router = axum::Router::new().nest_service("/mcp", service);
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
    match axum::serve(listener, router).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("{err}");
            ExitCode::FAILURE
        }
    }
}

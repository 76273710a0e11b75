//! A protected MCP server: an OAuth resource server whose tools need scopes, and whose callers
//! are who their access tokens say.
//!
//! ```sh
//! # ISSUER is an authorization server that publishes its keys (its metadata names a jwks_uri)
//! cargo run --example mcp_auth --features mcp-auth -- http://127.0.0.1:9000
//! cargo run --example mcp_auth --features mcp-auth -- http://127.0.0.1:9000 127.0.0.1:8001
//! ```
//!
//! The first line on stdout is the endpoint's URL, which is also the resource the server's
//! tokens must be issued for; Ctrl-C stops it. A request without a token is answered 401 with
//! the metadata's address; `close_ticket` needs `tickets:write`, and a token without it gets
//! 403 with the scope to ask for. `tests/mcp_auth.rs` runs this example against a real
//! authorization server.

mod telemetry;

use std::process::ExitCode;

use toolsmith::mcp::{Authorization, JwtVerifier, McpServer};
use toolsmith::{ToolContext, Toolbox, tool};

/// Reads a ticket for the caller. Read-only. Not for changing tickets.
#[tool(effect = "read", scopes = ["tickets:read"])]
fn read_ticket(
    ctx: &ToolContext,
    /// The ticket's number.
    #[arg(range(min = 1, max = 100_000))]
    id: u64,
) -> String {
    // The principal is the token's subject: no header, no hook.
    let user = ctx.principal().unwrap_or("nobody");
    format!("ticket {id}, read by {user}: the printer is on fire")
}

/// Closes a ticket for the caller. Writes the ticket. Not for reopening tickets.
#[tool(effect = "write", scopes = ["tickets:write"])]
fn close_ticket(
    ctx: &ToolContext,
    /// The ticket's number.
    #[arg(range(min = 1, max = 100_000))]
    id: u64,
) -> String {
    let user = ctx.principal().unwrap_or("nobody");
    format!("ticket {id} closed by {user}")
}

#[tokio::main]
async fn main() -> ExitCode {
    let _telemetry = telemetry::export();
    let mut args = std::env::args().skip(1);
    let Some(issuer) = args.next() else {
        eprintln!(
            "mcp_auth: give the authorization server's issuer URL, then optionally HOST:PORT"
        );
        return ExitCode::FAILURE;
    };
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:8001".to_owned());
    match serve(&issuer, &addr).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("mcp_auth: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(issuer: &str, addr: &str) -> Result<(), String> {
    // The resource is this endpoint: tokens must be issued for it (their `aud`).
    let resource = format!("http://{addr}/mcp");
    let toolbox = Toolbox::new().with(ReadTicket).with(CloseTicket);
    let server = McpServer::new(toolbox)
        .with_authorization(
            Authorization::new(&resource, JwtVerifier::new(issuer, &resource))
                .with_authorization_server(issuer)
                .with_scopes_supported(["tickets:read", "tickets:write"])
                .with_write_scopes(["*:write"]),
        )
        .map_err(|err| err.to_string())?;
    let http = server.bind_http(addr).await.map_err(|e| e.to_string())?;
    println!("{}", http.url());
    tokio::signal::ctrl_c().await.map_err(|e| e.to_string())?;
    http.shutdown().await.map_err(|e| e.to_string())
}

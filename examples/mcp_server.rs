//! The quickstart's tools as an MCP server.
//!
//! ```sh
//! cargo run --example mcp_server --features mcp                        # stdio
//! cargo run --example mcp_server --features mcp -- --http              # http://127.0.0.1:8000/mcp
//! cargo run --example mcp_server --features mcp -- --http 127.0.0.1:0  # a free port
//! cargo run --example mcp_server --features mcp -- --page-size 2       # tools/list pages of 2
//! ```
//!
//! On stdio the client is the local user; over HTTP the `x-user` header names the user (a
//! stand-in for real authentication). `calendar.create_event` needs a user. In HTTP mode the
//! first line on stdout is the endpoint's URL; Ctrl-C stops the server.

mod telemetry;
mod tools;

use std::process::ExitCode;

use toolsmith::mcp::McpServer;

/// What the command line asks for.
struct Options {
    /// `Some(address)` for streamable HTTP (empty: the loopback default), `None` for stdio.
    http: Option<String>,
    page_size: Option<usize>,
}

fn options() -> Result<Options, String> {
    let mut options = Options {
        http: None,
        page_size: None,
    };
    let mut args = std::env::args().skip(1).peekable();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--http" => {
                // Without an address: the loopback interface, port 8000.
                let addr = args.next_if(|a| !a.starts_with("--"));
                options.http = Some(addr.unwrap_or_default());
            }
            "--page-size" => {
                let n = args.next().and_then(|n| n.parse().ok()).filter(|&n| n > 0);
                options.page_size = Some(n.ok_or("--page-size takes a positive number")?);
            }
            other => {
                return Err(format!(
                    "unknown argument `{other}`; use `[--http [ADDR]] [--page-size N]`"
                ));
            }
        }
    }
    Ok(options)
}

#[tokio::main]
async fn main() -> ExitCode {
    let _telemetry = telemetry::export();
    let result = match options() {
        Ok(options) => run(options).await,
        Err(message) => Err(message),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("mcp_server: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn run(options: Options) -> Result<(), String> {
    let mut server = McpServer::new(tools::toolbox())
        .with_name("toolsmith-quickstart", env!("CARGO_PKG_VERSION"))
        .with_instructions("Search the web, add integers and create calendar events.");
    if let Some(n) = options.page_size {
        server = server.with_limits(toolsmith::mcp::ServerLimits {
            page_size: n,
            ..Default::default()
        });
    }
    match options.http {
        None => {
            let server = server.with_context(|ctx, _| ctx.with_principal("local-user"));
            server.serve_stdio().await.map_err(|e| e.to_string())
        }
        Some(addr) => serve_http(server, &addr).await.map_err(|e| e.to_string()),
    }
}

async fn serve_http(server: McpServer, addr: &str) -> std::io::Result<()> {
    let server = server.with_context(|ctx, request| match request.header("x-user") {
        Some(user) => ctx.with_principal(user),
        None => ctx,
    });
    let http = if addr.is_empty() {
        server.bind_local_http(8000).await?
    } else {
        server.bind_http(addr).await?
    };
    println!("{}", http.url());
    tokio::signal::ctrl_c().await?;
    http.shutdown().await
}

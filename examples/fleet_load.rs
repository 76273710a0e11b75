//! A load generator for MCP servers over streamable HTTP (the load benchmark,
//! `scripts/bench-fleet.sh`): `tools/call` requests from N concurrent clients for a while,
//! spread round-robin over one or more endpoints, each client on keep-alive connections of
//! its own; then calls per second and the latency percentiles. Or, with `--sessions N`, opens
//! N 2025-11-25 sessions and holds them (for the memory a session costs the server).
//!
//! ```sh
//! cargo run --release --example fleet_load -- --urls http://127.0.0.1:8000/mcp --tool add --clients 16 --seconds 5
//! cargo run --release --example fleet_load -- --urls http://127.0.0.1:8000/mcp --sessions 1000
//! ```
//!
//! `--token T` sends `authorization: Bearer T` with every request (a protected server).
//!
//! Prints one JSON line: `{"clients", "calls", "errors", "calls_per_s", "p50_ms", "p99_ms"}`.

mod telemetry;

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

struct Options {
    urls: Vec<SocketAddr>,
    tool: String,
    clients: usize,
    seconds: f64,
    sessions: usize,
    /// The `authorization` header line every request carries, if any.
    authorization: String,
}

/// The `authorization` header line of every request (`--token`), set once at the start.
static AUTHORIZATION: std::sync::OnceLock<String> = std::sync::OnceLock::new();

fn options() -> Result<Options, String> {
    let mut args = std::env::args().skip(1);
    let mut out = Options {
        urls: Vec::new(),
        tool: "add".to_owned(),
        clients: 1,
        seconds: 5.0,
        sessions: 0,
        authorization: String::new(),
    };
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--urls" => {
                for url in value.split(',') {
                    let addr = url
                        .trim_start_matches("http://")
                        .trim_end_matches("/mcp")
                        .parse()
                        .map_err(|e| format!("{url}: {e}"))?;
                    out.urls.push(addr);
                }
            }
            "--tool" => out.tool = value,
            "--clients" => out.clients = value.parse().map_err(|e| format!("--clients: {e}"))?,
            "--seconds" => out.seconds = value.parse().map_err(|e| format!("--seconds: {e}"))?,
            "--sessions" => out.sessions = value.parse().map_err(|e| format!("--sessions: {e}"))?,
            "--token" => out.authorization = format!("authorization: Bearer {value}\r\n"),
            other => return Err(format!("unknown option {other}")),
        }
    }
    if out.urls.is_empty() {
        return Err("--urls is required".to_owned());
    }
    Ok(out)
}

fn arguments(tool: &str) -> Value {
    match tool {
        "search_web" => json!({"query": "rust mcp servers", "num_results": 5}),
        _ => json!({"a": 2, "b": 3}),
    }
}

/// A keep-alive connection to one endpoint.
struct Connection {
    addr: SocketAddr,
    stream: BufReader<TcpStream>,
}

impl Connection {
    async fn open(addr: SocketAddr) -> std::io::Result<Self> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(Self {
            addr,
            stream: BufReader::new(stream),
        })
    }

    /// One POST; the response's session id (if any) and body. The server answers with a
    /// `Content-Length` (JSON) or closes an event stream at its end.
    async fn post(
        &mut self,
        body: &str,
        session: Option<&str>,
    ) -> std::io::Result<(Option<String>, String)> {
        let session = session
            .map(|s| format!("mcp-session-id: {s}\r\n"))
            .unwrap_or_default();
        let request = format!(
            "POST /mcp HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-11-25\r\n{}{session}content-length: {}\r\n\r\n{body}",
            self.addr,
            AUTHORIZATION.get().map_or("", String::as_str),
            body.len()
        );
        self.stream.get_mut().write_all(request.as_bytes()).await?;
        let mut length = None;
        let mut chunked = false;
        let mut id = None;
        loop {
            let mut line = String::new();
            if self.stream.read_line(&mut line).await? == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            let lower = line.to_ascii_lowercase();
            if let Some(n) = lower.strip_prefix("content-length:") {
                length = n.trim().parse::<usize>().ok();
            } else if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
                chunked = true;
            } else if let Some(value) = lower.strip_prefix("mcp-session-id:") {
                let start = line.len() - value.len();
                id = Some(line[start..].trim().to_owned());
            }
        }
        let mut body = Vec::new();
        if let Some(n) = length {
            body.resize(n, 0);
            self.stream.read_exact(&mut body).await?;
        } else if chunked {
            loop {
                let mut size = String::new();
                self.stream.read_line(&mut size).await?;
                let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
                let mut chunk = vec![0; n + 2];
                self.stream.read_exact(&mut chunk).await?;
                if n == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..n]);
                // An event stream of one answer: done once it holds the result.
                if String::from_utf8_lossy(&body).contains("\"result\"") {
                    break;
                }
            }
        }
        Ok((id, String::from_utf8_lossy(&body).into_owned()))
    }
}

/// One client: calls for `seconds`, round-robin over the endpoints; its latencies and errors.
async fn client(
    urls: Vec<SocketAddr>,
    tool: String,
    until: Instant,
    first: usize,
) -> (Vec<Duration>, usize) {
    let mut connections = Vec::new();
    for addr in &urls {
        match Connection::open(*addr).await {
            Ok(c) => connections.push(c),
            Err(_) => return (Vec::new(), 1),
        }
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments(&tool)}})
    .to_string();
    let (mut latencies, mut errors) = (Vec::new(), 0);
    let mut n = first;
    while Instant::now() < until {
        let i = n % connections.len();
        n += 1;
        let started = Instant::now();
        match connections[i].post(&body, None).await {
            Ok((_, answer))
                if answer.contains("\"result\"") && !answer.contains("\"isError\":true") =>
            {
                latencies.push(started.elapsed());
            }
            Ok(_) => errors += 1,
            Err(_) => {
                errors += 1;
                match Connection::open(urls[i]).await {
                    Ok(c) => connections[i] = c,
                    Err(_) => return (latencies, errors),
                }
            }
        }
    }
    (latencies, errors)
}

async fn hold_sessions(addr: SocketAddr, sessions: usize) -> Result<(), String> {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "load", "version": "1"}}})
    .to_string();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let mut open = 0;
    for _ in 0..sessions {
        let mut c = Connection::open(addr).await.map_err(|e| e.to_string())?;
        let (id, _) = c.post(&init, None).await.map_err(|e| e.to_string())?;
        let id = id.ok_or("the server gave no session id")?;
        let mut c = Connection::open(addr).await.map_err(|e| e.to_string())?;
        let _ = c.post(&initialized, Some(&id)).await;
        open += 1;
    }
    println!("{}", json!({"sessions": open}));
    // Held until the script has measured the server and stops this process.
    tokio::time::sleep(Duration::from_secs(3600)).await;
    Ok(())
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)].as_secs_f64() * 1000.0
}

#[tokio::main]
async fn main() -> ExitCode {
    let _telemetry = telemetry::export();
    let options = match options() {
        Ok(options) => options,
        Err(err) => {
            eprintln!("{err}");
            return ExitCode::FAILURE;
        }
    };
    let _ = AUTHORIZATION.set(options.authorization.clone());
    if options.sessions > 0 {
        return match hold_sessions(options.urls[0], options.sessions).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("{err}");
                ExitCode::FAILURE
            }
        };
    }
    let started = Instant::now();
    let until = started + Duration::from_secs_f64(options.seconds);
    let mut clients = tokio::task::JoinSet::new();
    for c in 0..options.clients {
        clients.spawn(client(options.urls.clone(), options.tool.clone(), until, c));
    }
    let mut latencies = Vec::new();
    let mut errors = 0;
    for (l, e) in clients.join_all().await {
        latencies.extend(l);
        errors += e;
    }
    let elapsed = started.elapsed().as_secs_f64();
    latencies.sort_unstable();
    println!(
        "{}",
        json!({
            "clients": options.clients,
            "calls": latencies.len(),
            "errors": errors,
            "calls_per_s": (latencies.len() as f64 / elapsed).round(),
            "p50_ms": (percentile(&latencies, 50.0) * 1000.0).round() / 1000.0,
            "p99_ms": (percentile(&latencies, 99.0) * 1000.0).round() / 1000.0,
        })
    );
    ExitCode::SUCCESS
}

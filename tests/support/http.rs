//! Raw HTTP exchanges with an MCP server on a loopback port: one request, read until the
//! answer holds what the test waits for.

#![allow(dead_code)]

use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Sends one HTTP request and reads the answer until `done` holds for what came so far, or
/// the server closes; then drops the connection.
pub async fn exchange(
    addr: std::net::SocketAddr,
    request: String,
    done: impl Fn(&str) -> bool,
) -> String {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut seen = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), async {
        let mut buf = [0u8; 4096];
        loop {
            let n = stream.read(&mut buf).await.unwrap_or(0);
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
            if done(&String::from_utf8_lossy(&seen)) {
                break;
            }
        }
    });
    read.await.expect("the server answers within 10 s");
    String::from_utf8_lossy(&seen).into_owned()
}

/// Whether an HTTP answer so far holds a JSON-RPC message to its closing brace (an SSE `data:`
/// line, or a plain JSON body).
pub fn whole_message(answer: &str) -> bool {
    answer.lines().any(|l| {
        let l = l.trim_end();
        (l.starts_with("data: {") || l.starts_with("{\"jsonrpc\"")) && l.ends_with('}')
    })
}

/// The JSON-RPC message in an HTTP answer (plain JSON or one SSE `data:` line).
pub fn message(answer: &str) -> Value {
    let body = answer.split("\r\n\r\n").nth(1).unwrap_or_default();
    let json = body
        .lines()
        .find_map(|l| l.strip_prefix("data: ").filter(|d| d.starts_with('{')))
        .or_else(|| body.lines().find(|l| l.starts_with('{')))
        .unwrap_or("null");
    serde_json::from_str(json).unwrap_or(Value::Null)
}

/// A `POST /mcp` of MCP 2025-11-25 carrying `body`, in the session `session` if any.
pub fn post_2025(addr: std::net::SocketAddr, session: Option<&str>, body: &Value) -> String {
    let body = body.to_string();
    let session = session
        .map(|s| format!("mcp-session-id: {s}\r\n"))
        .unwrap_or_default();
    format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-11-25\r\n{session}content-length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// Opens an MCP 2025-11-25 session over HTTP: `initialize`, then `notifications/initialized`;
/// the session's id.
pub async fn open_session(addr: std::net::SocketAddr) -> String {
    let init = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "c", "version": "1"}}});
    let answer = exchange(addr, post_2025(addr, None, &init), |s| {
        s.contains("\"result\"")
    })
    .await;
    let session = answer
        .lines()
        .find_map(|l| l.strip_prefix("mcp-session-id: "))
        .expect("a session id")
        .trim()
        .to_owned();
    let initialized = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let accepted = exchange(addr, post_2025(addr, Some(&session), &initialized), |s| {
        s.contains("\r\n\r\n")
    })
    .await;
    assert!(accepted.starts_with("HTTP/1.1 202"), "{accepted}");
    session
}

/// One MCP 2026-07-28 request with these client capabilities and `_meta` entries.
pub async fn request_2026(
    addr: std::net::SocketAddr,
    method: &str,
    name: &str,
    mut params: Value,
    capabilities: Value,
    run: Option<&str>,
) -> Value {
    params["_meta"] = serde_json::json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities});
    if let Some(run) = run {
        params["_meta"]["toolsmith/run"] = serde_json::json!(run);
    }
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 9, "method": method, "params": params})
        .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nmcp-protocol-version: 2026-07-28\r\nmcp-method: {method}\r\nmcp-name: {name}\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    message(&exchange(addr, request, whole_message).await)
}

/// A task's `tasks/get` answer once it is no longer working (polled every 25 ms, up to
/// `tries` times).
pub async fn task_end(
    addr: std::net::SocketAddr,
    id: &str,
    caps: &serde_json::Value,
    tries: u32,
) -> serde_json::Value {
    for _ in 0..tries {
        let got = request_2026(
            addr,
            "tasks/get",
            id,
            serde_json::json!({"taskId": id}),
            caps.clone(),
            None,
        )
        .await;
        if got["result"]["status"] != "working" {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("task {id} still working")
}

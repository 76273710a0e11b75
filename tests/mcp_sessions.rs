//! HTTP sessions of MCP 2025-11-25 that rest between requests: a resting session answers as
//! an awake one, keeps the client's log level, hears of tool-list changes made while it
//! rested, and is deleted as any session. (One whose call stream was dropped stays awake for
//! the call to be resumed: `tests/mcp.rs`, `a_dropped_sse_stream_resumes_from_its_last_event_id`.)
#![cfg(feature = "mcp")]

#[path = "support/http.rs"]
mod http_exchange;

use std::time::Duration;

use http_exchange::{exchange, message, open_session, post_2025, whole_message};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use toolsmith::caller::LogLevel;
use toolsmith::mcp::{HttpOptions, HttpServer, McpServer};
use toolsmith::policy::Switch;
use toolsmith::{ToolContext, Toolbox, tool};

/// Says hello, logging a note at info level first. Read-only. Not for real work.
#[tool(effect = "read")]
async fn chatty_hello(ctx: &ToolContext) -> String {
    ctx.log(LogLevel::Info, "saying hello").await;
    "hello".to_owned()
}

/// Deletes nothing at all. Not for real work.
#[tool(effect = "read")]
fn late_tool() -> bool {
    true
}

/// A server whose sessions rest as soon as they are idle.
async fn serve(toolbox: Toolbox) -> HttpServer {
    McpServer::new(toolbox)
        .with_http(HttpOptions {
            session_worker_idle: Duration::ZERO,
            ..HttpOptions::default()
        })
        .bind_local_http(0)
        .await
        .unwrap()
}

/// One request in `session`, read to its answer (`id` 7).
async fn request(addr: std::net::SocketAddr, session: &str, method: &str, params: Value) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    exchange(addr, post_2025(addr, Some(session), &body), |s| {
        // A refusal (a plain-text body), or the answer: a whole message with the request's id.
        (s.starts_with("HTTP/1.1 4") && s.contains("\r\n\r\n"))
            || (whole_message(s)
                && s.lines()
                    .any(|l| l.contains("\"id\":7") && l.trim_end().ends_with('}')))
    })
    .await
}

/// Waits long enough for the server's sweep to put idle workers to rest.
async fn let_it_rest() {
    tokio::time::sleep(Duration::from_millis(150)).await;
}

/// Opens the session's stream for notifications.
async fn listen(addr: std::net::SocketAddr, session: &str) -> tokio::net::TcpStream {
    let get = format!(
        "GET /mcp HTTP/1.1\r\nhost: {addr}\r\naccept: text/event-stream\r\nmcp-protocol-version: 2025-11-25\r\nmcp-session-id: {session}\r\n\r\n"
    );
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(get.as_bytes()).await.unwrap();
    stream
}

/// What a stream for notifications carries within `wait`, or until it holds `until`.
async fn heard(stream: &mut tokio::net::TcpStream, until: &str, wait: Duration) -> String {
    let mut seen = Vec::new();
    let _ = tokio::time::timeout(wait, async {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stream.read(&mut buf).await {
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
            if String::from_utf8_lossy(&seen).contains(until) {
                break;
            }
        }
    })
    .await;
    String::from_utf8_lossy(&seen).into_owned()
}

#[tokio::test]
async fn a_resting_session_answers_as_an_awake_one_and_keeps_its_log_level() {
    let http = serve(Toolbox::new().with(ChattyHello)).await;
    let addr = http.local_addr();
    let session = open_session(addr).await;
    let_it_rest().await;

    // Woken by the call: the tool runs and its info log reaches the client's stream.
    let mut notes = listen(addr, &session).await;
    let first = request(
        addr,
        &session,
        "tools/call",
        json!({"name": "chatty_hello"}),
    )
    .await;
    assert!(first.contains(r#"\"data\":\"hello\""#), "{first}");
    let log = heard(&mut notes, "saying hello", Duration::from_secs(5)).await;
    assert!(log.contains("saying hello"), "{log}");
    drop(notes);

    // The client asks for errors only; the session rests; its choice holds when it wakes.
    let level = request(
        addr,
        &session,
        "logging/setLevel",
        json!({"level": "error"}),
    )
    .await;
    assert!(level.contains("\"result\":{}"), "{level}");
    let_it_rest().await;
    let mut notes = listen(addr, &session).await;
    let second = request(
        addr,
        &session,
        "tools/call",
        json!({"name": "chatty_hello"}),
    )
    .await;
    assert!(second.contains(r#"\"data\":\"hello\""#), "{second}");
    let log = heard(&mut notes, "saying hello", Duration::from_millis(300)).await;
    assert!(!log.contains("saying hello"), "info is below error: {log}");
    drop(notes);

    // Many wakes in a row, each answered.
    for _ in 0..5 {
        let_it_rest().await;
        let ping = request(addr, &session, "ping", json!({})).await;
        assert_eq!(message(&ping)["result"], json!({}), "{ping}");
    }
    http.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_change_of_tools_while_resting_is_told_on_the_next_notification_stream() {
    let late = Switch::new(false);
    let http = serve(
        Toolbox::new()
            .with(LateTool)
            .with_enabled_when("late_tool", late.clone()),
    )
    .await;
    let addr = http.local_addr();
    let session = open_session(addr).await;
    let listed = request(addr, &session, "tools/list", json!({})).await;
    assert!(!listed.contains("late_tool"), "{listed}");
    let_it_rest().await;

    late.set(true);
    let_it_rest().await;
    // The client opens its stream for notifications: the change is there.
    let get = format!(
        "GET /mcp HTTP/1.1\r\nhost: {addr}\r\naccept: text/event-stream\r\nmcp-protocol-version: 2025-11-25\r\nmcp-session-id: {session}\r\n\r\n"
    );
    let notes = exchange(addr, get, |s| {
        s.contains("notifications/tools/list_changed")
    })
    .await;
    assert!(
        notes.contains("notifications/tools/list_changed"),
        "{notes}"
    );
    let listed = request(addr, &session, "tools/list", json!({})).await;
    assert!(listed.contains("late_tool"), "{listed}");
    http.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_deleted_resting_session_is_gone() {
    let http = serve(Toolbox::new().with(ChattyHello)).await;
    let addr = http.local_addr();
    let session = open_session(addr).await;
    let_it_rest().await;
    let delete = format!(
        "DELETE /mcp HTTP/1.1\r\nhost: {addr}\r\nmcp-protocol-version: 2025-11-25\r\nmcp-session-id: {session}\r\ncontent-length: 0\r\n\r\n"
    );
    let deleted = exchange(addr, delete, |s| s.contains("\r\n\r\n")).await;
    assert!(deleted.starts_with("HTTP/1.1 202"), "{deleted}");
    let after = request(addr, &session, "ping", json!({})).await;
    assert!(after.starts_with("HTTP/1.1 404"), "{after}");
    http.shutdown().await.unwrap();
}

/// `request` (an HTTP request's text) sent as `user` (an `x-user` header).
fn as_user(request: String, user: &str) -> String {
    request.replacen("\r\n", &format!("\r\nx-user: {user}\r\n"), 1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_is_its_openers_alone() {
    let server = McpServer::new(Toolbox::new().with(ChattyHello))
        .with_context(|ctx, request| match request.header("x-user") {
            Some(user) => ctx.with_principal(user),
            None => ctx,
        })
        .bind_local_http(0)
        .await
        .unwrap();
    let addr = server.local_addr();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "c", "version": "1"}}});
    let answer = exchange(addr, as_user(post_2025(addr, None, &init), "ada"), |s| {
        s.contains("\"result\"")
    })
    .await;
    let session = answer
        .lines()
        .find_map(|l| l.strip_prefix("mcp-session-id: "))
        .expect("a session id")
        .trim()
        .to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let accepted = exchange(
        addr,
        as_user(post_2025(addr, Some(&session), &initialized), "ada"),
        |s| s.contains("\r\n\r\n"),
    )
    .await;
    assert!(accepted.starts_with("HTTP/1.1 202"), "{accepted}");
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "chatty_hello", "arguments": {}}});
    let done = |s: &str| {
        (s.starts_with("HTTP/1.1 4") && s.contains("\r\n\r\n"))
            || (whole_message(s)
                && s.lines()
                    .any(|l| l.contains("\"id\":7") && l.trim_end().ends_with('}')))
    };
    // Another principal, and no principal, with the session's id: an unknown session.
    for other in [
        as_user(post_2025(addr, Some(&session), &call), "mallory"),
        post_2025(addr, Some(&session), &call),
    ] {
        let refused = exchange(addr, other, done).await;
        assert!(refused.starts_with("HTTP/1.1 404"), "{refused}");
        assert!(!refused.contains("hello\""), "{refused}");
    }
    let get = format!(
        "GET /mcp HTTP/1.1\r\nhost: {addr}\r\nx-user: mallory\r\naccept: text/event-stream\r\nmcp-protocol-version: 2025-11-25\r\nmcp-session-id: {session}\r\n\r\n"
    );
    let refused = exchange(addr, get, |s| s.contains("\r\n\r\n")).await;
    assert!(refused.starts_with("HTTP/1.1 404"), "{refused}");
    // Its opener goes on.
    let answer = exchange(
        addr,
        as_user(post_2025(addr, Some(&session), &call), "ada"),
        done,
    )
    .await;
    assert!(answer.contains("hello"), "{answer}");
}

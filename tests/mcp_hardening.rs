//! The MCP transports against a hostile or careless client: every stdio line gets an answer,
//! messages are bounded, HTTP checks Host and Origin, sessions are capped and expire, calls
//! in flight are bounded, and nothing echoes a client's input unbounded.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use toolsmith::mcp::McpServer;
use toolsmith::{Toolbox, tool};

/// Add two integers. Pure; no side effects. Not for floating-point numbers.
#[tool(effect = "read")]
fn add(
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
) -> i64 {
    a.saturating_add(b)
}

/// Wait a while, then answer. Read-only. Not for real work.
#[tool(effect = "read")]
async fn wait_a_while(
    /// Milliseconds to wait.
    #[arg(range(min = 0, max = 10000))]
    ms: u64,
) -> u64 {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    ms
}

fn server() -> McpServer {
    McpServer::new(Toolbox::new().with(Add).with(WaitAWhile))
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"hostile","version":"1"}}}"#;

/// A raw stdio client: bytes in, lines out.
struct Pipe {
    write: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    lines: tokio::io::Lines<BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
}

impl Pipe {
    async fn connect(server: McpServer) -> Self {
        let (client, server_end) = tokio::io::duplex(1 << 16);
        tokio::spawn(server.serve(tokio::io::split(server_end)));
        let (read, write) = tokio::io::split(client);
        let mut pipe = Self {
            write,
            lines: BufReader::new(read).lines(),
        };
        pipe.send(INITIALIZE.as_bytes()).await;
        let init = pipe.read().await;
        assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
        pipe.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .await;
        pipe
    }

    async fn send(&mut self, line: &[u8]) {
        self.write.write_all(line).await.unwrap();
        self.write.write_all(b"\n").await.unwrap();
    }

    async fn read(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(10), self.lines.next_line())
            .await
            .expect("an answer within 10 s")
            .unwrap()
            .expect("the server keeps the connection open");
        serde_json::from_str(&line).unwrap()
    }

    /// The server still answers a good request after whatever came before.
    async fn still_serves(&mut self, id: u64) {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 2, "b": 3}}});
        self.send(call.to_string().as_bytes()).await;
        let answer = self.read().await;
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["result"]["structuredContent"], Value::Null);
        assert!(
            answer["result"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains(r#""data":5"#),
            "{answer}"
        );
    }
}

fn parse_error(answer: &Value) -> &str {
    assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
    assert_eq!(answer["id"], Value::Null, "{answer}");
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    answer["error"]["message"].as_str().unwrap()
}

#[tokio::test]
async fn every_stdio_line_gets_an_answer_and_the_server_goes_on() {
    let mut pipe = Pipe::connect(server()).await;
    // Not JSON.
    pipe.send(b"{\"jsonrpc\": \"2.0\", \"id\": 7, ").await;
    let message = parse_error(&pipe.read().await).to_owned();
    assert!(message.starts_with("Parse error"), "{message}");
    pipe.still_serves(10).await;
    // Not UTF-8.
    pipe.send(b"{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"\xff\xfe\"}")
        .await;
    assert!(parse_error(&pipe.read().await).contains("UTF-8"));
    pipe.still_serves(11).await;
    // Longer than the message limit: skipped to its end, never held whole.
    let long = format!(
        r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{{"name":"add","arguments":{{"a":1,"b":1,"pad":"{}"}}}}}}"#,
        "x".repeat(5 << 20)
    );
    pipe.send(long.as_bytes()).await;
    // Answered with the request's id, read from the line's start: the client waiting for
    // request 9 hears back.
    let answer = pipe.read().await;
    assert_eq!(answer["id"], 9, "{answer}");
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("longer than")
    );
    pipe.still_serves(12).await;
    // Within the size limit but over a value limit: its id too.
    let many = format!(
        r#"{{"jsonrpc":"2.0","id":"many-1","method":"tools/call","params":{{"name":"add","arguments":{{"a":[{}]}}}}}}"#,
        vec!["0"; 200_000].join(",")
    );
    pipe.send(many.as_bytes()).await;
    let answer = pipe.read().await;
    assert_eq!(answer["id"], "many-1", "{answer}");
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    pipe.still_serves(20).await;
    // A key twice: an ambiguous message is not read at all.
    pipe.send(br#"{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"a":9,"b":1}}}"#)
        .await;
    let message = parse_error(&pipe.read().await).to_owned();
    assert!(message.contains("/params/arguments/a"), "{message}");
    pipe.still_serves(14).await;
    // JSON, but not a request: -32600 with its id.
    pipe.send(br#"{"jsonrpc":"2.0","id":15,"result":"#).await;
    parse_error(&pipe.read().await);
    pipe.send(br#"[1, 2, 3]"#).await;
    let answer = pipe.read().await;
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    pipe.send(br#"{"id": 16, "hello": "world"}"#).await;
    let answer = pipe.read().await;
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert_eq!(answer["id"], 16, "{answer}");
    // A repeated key deep under long keys: the answer's pointer is cut, not as long as the path.
    let key = "\\b".repeat(30);
    let open: String = (0..60).map(|_| format!(r#"{{"{key}":"#)).collect();
    let deep = format!(r#"{open}{{"x":1,"x":2}}{}"#, "}".repeat(60));
    pipe.send(deep.as_bytes()).await;
    let answer = pipe.read().await;
    parse_error(&answer);
    assert!(
        answer.to_string().len() < 1_024,
        "{} bytes",
        answer.to_string().len()
    );
    // Blank lines are skipped without an answer.
    pipe.send(b"   ").await;
    pipe.send(b"\r").await;
    pipe.still_serves(17).await;
}

#[tokio::test]
async fn stdio_answers_are_bounded_and_escaped() {
    let mut pipe = Pipe::connect(server()).await;
    let name = format!("{}\u{1b}[2J", "n".repeat(1 << 20));
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": name, "arguments": {}}});
    pipe.send(call.to_string().as_bytes()).await;
    let answer = pipe.read().await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let text = answer.to_string();
    assert!(text.len() < 2_000, "{} bytes", text.len());
    assert!(!text.contains("\\u001b"), "{text}");
    // Exact numbers on MCP: the arguments object is read as the transport's parser made it.
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": i64::MAX, "b": 0}}});
    pipe.send(call.to_string().as_bytes()).await;
    let answer = pipe.read().await;
    assert!(
        answer.to_string().contains("9223372036854775807"),
        "{answer}"
    );
    pipe.send(br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"add","arguments":{"a":-9223372036854775809,"b":0}}}"#)
        .await;
    let answer = pipe.read().await;
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(answer.to_string().contains("invalid_arguments"), "{answer}");
}

#[tokio::test]
async fn calls_in_flight_are_bounded() {
    let mut pipe = Pipe::connect(server().with_limits(toolsmith::mcp::ServerLimits {
        max_in_flight: 2,
        ..Default::default()
    }))
    .await;
    for id in 20..23 {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "wait_a_while", "arguments": {"ms": 500}}});
        pipe.send(call.to_string().as_bytes()).await;
    }
    // The third is refused at once, retryable; the first two finish.
    let refused = pipe.read().await;
    assert_eq!(refused["id"], 22, "{refused}");
    assert_eq!(refused["result"]["isError"], true);
    let text = refused["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("rate_limited"), "{text}");
    let mut done = vec![
        pipe.read().await["id"].clone(),
        pipe.read().await["id"].clone(),
    ];
    done.sort_by_key(|v| v.as_u64());
    assert_eq!(done, [json!(20), json!(21)]);
    pipe.still_serves(30).await;
}

// ---------------------------------------------------------------------------------------------
// HTTP

async fn http(addr: SocketAddr, request: &str) -> String {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), async {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stream.read(&mut buf).await {
            if n == 0 {
                break;
            }
            response.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&response);
            if text.contains("\"result\"")
                || (text.starts_with("HTTP/1.1 4") || text.starts_with("HTTP/1.1 5"))
                    && text.contains("\r\n\r\n")
            {
                break;
            }
        }
    });
    read.await.expect("the server answers within 10 s");
    String::from_utf8_lossy(&response).into_owned()
}

fn post(host: &str, extra: &str, body: &str) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

#[tokio::test]
async fn http_checks_host_and_origin() {
    let http_server = server()
        .with_http(toolsmith::mcp::HttpOptions {
            allowed_origins: vec!["https://app.example.com".into()],
            ..Default::default()
        })
        .bind_local_http(0)
        .await
        .unwrap();
    let addr = http_server.local_addr();
    let host = addr.to_string();
    let ok = http(addr, &post(&host, "", INITIALIZE)).await;
    assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
    for origin in [
        "http://localhost:3000",
        "http://127.0.0.1",
        "https://app.example.com",
    ] {
        let response = http(
            addr,
            &post(&host, &format!("Origin: {origin}\r\n"), INITIALIZE),
        )
        .await;
        assert!(response.starts_with("HTTP/1.1 200"), "{origin}: {response}");
    }
    for origin in [
        "https://evil.example.com",
        "http://app.example.com",
        "null",
        "https://localhost.evil.example.com",
        "http://[::1].evil.example.com",
    ] {
        let response = http(
            addr,
            &post(&host, &format!("Origin: {origin}\r\n"), INITIALIZE),
        )
        .await;
        assert!(response.starts_with("HTTP/1.1 403"), "{origin}: {response}");
    }
    for bad_host in [
        "[::1].evil.example.com",
        "[::1]evil",
        "localhost.evil.example.com",
        "evil.example.com",
        "localhost@evil.example.com",
    ] {
        let response = http(addr, &post(bad_host, "", INITIALIZE)).await;
        assert!(
            response.starts_with("HTTP/1.1 403") || response.starts_with("HTTP/1.1 400"),
            "{bad_host}: {response}"
        );
    }
    let response = http(
        addr,
        &post(&format!("[::1]:{}", addr.port()), "", INITIALIZE),
    )
    .await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    http_server.shutdown().await.unwrap();
}

#[tokio::test]
async fn http_bodies_are_bounded_and_checked_before_parsing() {
    let http_server = server().bind_local_http(0).await.unwrap();
    let addr = http_server.local_addr();
    let host = addr.to_string();
    let duplicate = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","method":"tools/list","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}"#;
    let response = http(addr, &post(&host, "", duplicate)).await;
    assert!(response.starts_with("HTTP/1.1 400"), "{response}");
    assert!(
        response.contains("-32700") && response.contains("/method"),
        "{response}"
    );
    // Many values in a small body: refused by the value limit, never parsed into a tree.
    let many = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"add","arguments":{{"a":[{}]}}}}}}"#,
        vec!["0"; 200_000].join(",")
    );
    let response = http(addr, &post(&host, "", &many)).await;
    assert!(response.starts_with("HTTP/1.1 400"), "{response}");
    // Answered with the request's id, read from the body's start.
    assert!(response.contains(r#""id":1"#), "{response}");
    // A batch gets a JSON-RPC error, as on stdio.
    let batch =
        r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]"#;
    let response = http(addr, &post(&host, "", batch)).await;
    assert!(response.starts_with("HTTP/1.1 400"), "{response}");
    assert!(
        response.contains("application/json") && response.contains("-32600"),
        "{response}"
    );
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":"big-7","method":"tools/call","params":{{"pad":"{}"}}}}"#,
        "x".repeat(5 << 20)
    );
    let response = http(addr, &post(&host, "", &huge)).await;
    assert!(
        response.starts_with("HTTP/1.1 413"),
        "{}",
        &response[..200.min(response.len())]
    );
    // Answered with its id, read from the body's start; the rest was never held.
    assert!(
        response.contains(r#""id":"big-7""#) && response.contains("-32700"),
        "{response}"
    );
    http_server.shutdown().await.unwrap();
}

#[tokio::test]
async fn http_sessions_are_capped_and_expire() {
    let http_server = server()
        .with_http(toolsmith::mcp::HttpOptions {
            max_sessions: 2,
            session_idle_timeout: Duration::from_millis(500),
            ..Default::default()
        })
        .bind_local_http(0)
        .await
        .unwrap();
    let addr = http_server.local_addr();
    let host = addr.to_string();
    for _ in 0..2 {
        let response = http(addr, &post(&host, "", INITIALIZE)).await;
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    }
    let response = http(addr, &post(&host, "", INITIALIZE)).await;
    assert!(response.starts_with("HTTP/1.1 503"), "{response}");
    assert!(
        response.to_ascii_lowercase().contains("retry-after"),
        "{response}"
    );
    // A request that needs no session is never refused for the cap: MCP 2026-07-28.
    let call = r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let modern = format!(
        "POST /mcp HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nmcp-protocol-version: 2026-07-28\r\nmcp-method: tools/call\r\nmcp-name: add\r\ncontent-length: {}\r\n\r\n{call}",
        call.len()
    );
    let response = http(addr, &modern).await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    // The envelope travels as text inside the result: its quotes are escaped.
    assert!(response.contains(r#"\"data\":5"#), "{response}");
    // Idle sessions are closed, which makes room.
    tokio::time::sleep(Duration::from_millis(700)).await;
    let response = http(addr, &post(&host, "", INITIALIZE)).await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    http_server.shutdown().await.unwrap();
}

#[test]
#[should_panic(expected = "McpServer::with_state_key: the secret is 11 bytes long")]
fn a_short_state_key_is_refused_where_the_server_is_built() {
    let _ = server().with_state_key("eleven-byte");
}

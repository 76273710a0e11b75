//! An MCP client in process: newline-delimited JSON-RPC over an in-memory pipe, as a client
//! writes it.

#![allow(dead_code)]

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use tokio::io::{ReadHalf, WriteHalf};
use toolsmith::mcp::McpServer;

/// A client speaking newline-delimited JSON-RPC to the server over an in-memory pipe.
pub struct Client {
    writer: WriteHalf<DuplexStream>,
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    /// Messages read while waiting for something else.
    pub pending: Vec<Value>,
    next_id: u64,
}

impl Client {
    /// Connects and completes the `initialize` handshake; returns the initialize result too.
    pub async fn connect(server: McpServer) -> (Self, Value) {
        Self::connect_with(server, json!({})).await
    }

    /// Connects declaring these client capabilities.
    pub async fn connect_with(server: McpServer, capabilities: Value) -> (Self, Value) {
        let (client_end, server_end) = tokio::io::duplex(1 << 20);
        tokio::spawn(server.serve(tokio::io::split(server_end)));
        let (read, writer) = tokio::io::split(client_end);
        let mut client = Self {
            writer,
            lines: BufReader::new(read).lines(),
            pending: Vec::new(),
            next_id: 1,
        };
        let init = client
            .request(
                "initialize",
                json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": capabilities,
                    "clientInfo": {"name": "pipe-test", "version": "1.0.0"}
                }),
            )
            .await;
        client
            .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        (client, init)
    }

    pub async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.writer.write_all(line.as_bytes()).await.unwrap();
    }

    pub async fn read(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(10), self.lines.next_line())
            .await
            .expect("the server answers within 10 s")
            .unwrap()
            .expect("the server keeps the connection open");
        serde_json::from_str(&line).unwrap()
    }

    /// The next message matching `wanted`, keeping the others for later.
    pub async fn wait_for(&mut self, wanted: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.pending.iter().position(&wanted) {
            return self.pending.remove(i);
        }
        loop {
            let message = self.read().await;
            if wanted(&message) {
                return message;
            }
            self.pending.push(message);
        }
    }

    pub fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Sends a request and returns the whole response (`result` or `error`).
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.id();
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        self.wait_for(|m| m["id"] == id).await
    }

    pub async fn call(&mut self, name: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": name, "arguments": arguments}))
            .await
    }
}

pub fn envelope(result: &Value) -> Value {
    let text = result["content"][0]["text"].as_str().unwrap();
    serde_json::from_str(text).unwrap()
}

//! One line of the MCP stdio transport: no input may panic, and every line that is not a
//! message is answered with a JSON-RPC error of bounded size.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use toolsmith::Toolbox;
use toolsmith::mcp::McpServer;

fn server() -> &'static McpServer {
    static SERVER: OnceLock<McpServer> = OnceLock::new();
    SERVER.get_or_init(|| McpServer::new(Toolbox::new()).with_limits(toolsmith::mcp::ServerLimits {
            max_message_bytes: Some(64 << 10),
            ..Default::default()
        }))
}

fuzz_target!(|data: &[u8]| {
    // A line has no newline: the transport splits on it.
    let line = data.split(|b| *b == b'\n').next().unwrap_or_default();
    if let Err(answer) = server().frame_line(line) {
        assert!(answer.len() < 2_048, "{} bytes", answer.len());
        let parsed: serde_json::Value = serde_json::from_str(&answer).expect("JSON");
        assert_eq!(parsed["jsonrpc"], "2.0");
        let code = parsed["error"]["code"].as_i64().expect("a code");
        assert!(code == -32700 || code == -32600, "{code}");
    }
});

//! Serving a [`Toolbox`](crate::toolbox::Toolbox) to Model Context Protocol clients, on stdio or streamable HTTP.
//!
//! [`McpServer`] speaks MCP 2025-11-25 and 2026-07-28 (each client gets the revision it asks
//! for; 2026-07-28 needs no session) through [rmcp](https://docs.rs/rmcp), the official Rust
//! SDK; toolsmith supplies what the protocol carries:
//!
//! - `tools/list`: the tools enabled for the request's context, each as
//!   [`Dialect::Mcp`](crate::dialect::Dialect::Mcp) exports it (name, title, description, `inputSchema`, `outputSchema`,
//!   `annotations` from the tool's effect and hints), in pages of
//!   [`ServerLimits::page_size`] tools;
//! - `tools/call`: [`Toolbox::call`](crate::toolbox::Toolbox::call) with its validation and execution policy; the outcome is a
//!   `CallToolResult` (text content, `structuredContent` for object outputs, `isError` for tool
//!   and argument errors, whose text is the actionable error envelope); an unknown or disabled
//!   tool and an invalid cursor are JSON-RPC `-32602` errors;
//! - a replayed result (a duplicate of a write already done, answered from the idempotency
//!   store) carries `_meta: {"toolsmith/replayed": true}`, as the envelope says `"replayed": true`;
//! - a call that needs a person's approval and has none asks the client's user through
//!   elicitation (a form with one `approve` checkbox, naming the tool and its arguments with
//!   sensitive ones redacted; on 2026-07-28, an input request of the call's round) when the
//!   client supports it; a client that does not gets the
//!   `approval_required` error as any caller would;
//! - `notifications/cancelled` fires the call's [`ToolContext::cancellation`](crate::context::ToolContext::cancellation) signal;
//! - `notifications/tools/list_changed` goes to every connected client when the toolbox's
//!   enabled tools change ([`Toolbox::tools_changed`](crate::toolbox::Toolbox::tools_changed), [`Switch`](crate::policy::Switch)).
//!
//! The tool's context carries the request as an [`McpRequest`] extension, the request id as
//! its call id, the W3C `traceparent` trace id when the client sends one, and whatever
//! [`with_context`](McpServer::with_context) adds (a principal from an HTTP header, say).
//!
//! ```no_run
//! use toolsmith::{tool, Toolbox};
//! use toolsmith::mcp::McpServer;
//!
//! /// Add two integers. Pure; no side effects. Not for floating-point numbers.
//! #[tool(effect = "read")]
//! fn add(
//!     /// The first addend.
//!     a: i64,
//!     /// The second addend.
//!     b: i64,
//! ) -> i64 {
//!     a.saturating_add(b)
//! }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), toolsmith::mcp::ServeError> {
//!     McpServer::new(Toolbox::new().with(Add)).serve_stdio().await
//! }
//! ```

// The rooms, after rmcp's own split: the server's settings (`server`), the protocol handler
// (`handler`), the call path (`call`, with `rounds` for MCP 2026-07-28's sealed state,
// `tasks` and `elicit`), the transports (`transport`, `http_guard` with `stateless` for a
// plain call answered in place, `sessions` for HTTP sessions that rest between requests, `stdio`), what a tool's
// caller offers it (`caller`, `delegate`), and the request type (`request`).
mod answer;
#[cfg(feature = "mcp-auth")]
mod auth;
mod call;
mod caller;
mod delegate;
mod elicit;
mod handler;
mod http_guard;
mod options;
mod request;
mod rounds;
mod server;
mod sessions;
mod stateless;
mod stdio;
mod tasks;
mod traced;
mod transport;

/// rmcp, the MCP SDK this server is built on, for handlers composed with it
/// ([`McpServer::with_handler`]) without a dependency of their own.
pub use rmcp;

#[cfg(feature = "mcp-auth")]
pub use auth::{
    Authorization, IntrospectionVerifier, JwtAlgorithm, JwtVerifier, ScopeError, ScopeListing,
    TokenError, TokenVerifier, Verified,
};
pub use options::{
    DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_SESSIONS, DEFAULT_PAGE_SIZE, DEFAULT_SESSION_IDLE,
    DEFAULT_SESSION_WORKER_IDLE, HttpOptions, MIN_MESSAGE_BYTES, ServerLimits,
};
pub use request::McpRequest;
pub use server::{HTTP_PATH, McpServer, PROTOCOL_VERSION, RUN_META, RunScope};
pub use tasks::TaskSupport;
pub use transport::{HttpServer, ServeError};

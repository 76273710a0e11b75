//! A server's settings as values ([`HttpOptions`], [`ServerLimits`]), and the message limits
//! its tools' own limits imply.

use crate::limits::InputLimits;
use crate::toolbox::Toolbox;

use super::tasks;

/// Tools per `tools/list` page unless [`ServerLimits::page_size`] says otherwise.
pub const DEFAULT_PAGE_SIZE: usize = 100;

/// Open HTTP sessions unless [`HttpOptions::max_sessions`] says otherwise: a session in use
/// holds a worker task and its buffers (tens of kilobytes) and a resting one a small record,
/// so a client that opens sessions without end must not exhaust the server.
pub const DEFAULT_MAX_SESSIONS: usize = 256;

/// How long an HTTP session may go without a request before it is closed, unless
/// [`HttpOptions::session_idle_timeout`] says otherwise (rmcp's own default).
pub const DEFAULT_SESSION_IDLE: std::time::Duration = std::time::Duration::from_secs(300);

/// How long a session's worker is kept after the session's last request, unless
/// [`HttpOptions::session_worker_idle`] says otherwise.
pub const DEFAULT_SESSION_WORKER_IDLE: std::time::Duration = std::time::Duration::from_secs(5);

/// Tool calls admitted at once, per server, unless [`ServerLimits::max_in_flight`] or the
/// toolbox's own `Defaults::max_in_flight` says otherwise; a call beyond it is answered at
/// once with a retryable `rate_limited` error.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 64;

/// The least bytes one JSON-RPC message may take (rmcp's own HTTP body limit): room for a
/// call whose arguments are at their limit, and the envelope around them.
pub const MIN_MESSAGE_BYTES: usize = 4 << 20;

/// How a server serves streamable HTTP ([`McpServer::with_http`](super::McpServer::with_http)). Each field's default is
/// the one a server has without it.
#[derive(Clone, Debug)]
pub struct HttpOptions {
    /// The `Host` header values answered (default the loopback names `localhost`,
    /// `127.0.0.1` and `::1`); serving beyond the loopback interface needs the public ones.
    /// A request for another host gets 403, which keeps web pages from reaching a local
    /// server through DNS rebinding.
    pub allowed_hosts: Vec<String>,
    /// The browser origins answered besides loopback ones (`http://localhost`,
    /// `http://127.0.0.1`, `http://[::1]`, any port), as `https://app.example.com` (any port)
    /// or `https://app.example.com:8443`; `*` allows every origin. A request with another
    /// `Origin` gets 403, as the MCP transport specification requires; a request without one
    /// (not from a browser) is not affected. None by default.
    pub allowed_origins: Vec<String>,
    /// How many HTTP sessions may be open at once ([`DEFAULT_MAX_SESSIONS`]); an `initialize`
    /// beyond it gets 503 with `Retry-After`, after idle sessions are closed. Requests
    /// without a session (MCP 2026-07-28) are never refused for it.
    pub max_sessions: usize,
    /// How long an HTTP session may go without a request before it is closed
    /// ([`DEFAULT_SESSION_IDLE`]).
    pub session_idle_timeout: std::time::Duration,
    /// How long a session's worker (rmcp's task for the session, with its channels and
    /// buffers: tens of kilobytes) is kept after the session's last request when no stream of
    /// it is open ([`DEFAULT_SESSION_WORKER_IDLE`]). Then the session rests as a small record
    /// (its `initialize` parameters and log level, under a kilobyte) until its next request,
    /// which starts a new worker and replays the handshake to it first; the client sees no
    /// difference. A session also rests right after its handshake. Zero rests every worker
    /// as soon as it is idle; [`session_idle_timeout`](Self::session_idle_timeout) or more
    /// keeps workers for as long as their sessions.
    pub session_worker_idle: std::time::Duration,
    /// Whether 2025-11-25 requests are served without sessions too (off by default), so that
    /// a fleet behind a load balancer needs no session affinity: each request carries all it
    /// needs. Such clients get no `Mcp-Session-Id`, no log level kept between requests, no
    /// `tools/list_changed` pushed, and no resumable streams. MCP 2026-07-28 requests are
    /// served so anyway. Share the keys state depends on across the fleet too:
    /// [`McpServer::with_state_key`](super::McpServer::with_state_key) for 2026-07-28 rounds, and the toolbox's `State`
    /// (docs/deployment.md).
    pub stateless: bool,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            allowed_origins: Vec::new(),
            max_sessions: DEFAULT_MAX_SESSIONS,
            session_idle_timeout: DEFAULT_SESSION_IDLE,
            session_worker_idle: DEFAULT_SESSION_WORKER_IDLE,
            stateless: false,
        }
    }
}

/// A server's limits ([`McpServer::with_limits`](super::McpServer::with_limits)). Each field's default is the one a server
/// has without it.
#[derive(Clone, Debug)]
pub struct ServerLimits {
    /// The most bytes one JSON-RPC message may take, on stdio (one line) and HTTP (one body).
    /// `None` (the default): twice the largest `max_bytes` of the tools' limits plus room
    /// for the envelope, and at least [`MIN_MESSAGE_BYTES`]. A longer message is answered
    /// with a `-32700` parse error (HTTP 413) with its id when it can be read, and never held
    /// whole.
    pub max_message_bytes: Option<usize>,
    /// How many tool calls may be admitted at once across all of the server's clients
    /// ([`DEFAULT_MAX_IN_FLIGHT`]): the bound the server sets on its toolbox
    /// (`Defaults::max_in_flight`, which `McpServer::new` keeps when the toolbox has one).
    /// A call beyond it is turned away at the toolbox's door, busy, with a retryable
    /// `rate_limited` tool error instead of queueing without bound.
    pub max_in_flight: usize,
    /// Tools per `tools/list` page ([`DEFAULT_PAGE_SIZE`]).
    pub page_size: usize,
    /// How long a task and its result are kept from its start (five minutes): a task still
    /// running then is stopped and reported failed, and a finished one is forgotten a while
    /// after.
    pub task_ttl: std::time::Duration,
}

impl Default for ServerLimits {
    fn default() -> Self {
        Self {
            max_message_bytes: None,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            page_size: DEFAULT_PAGE_SIZE,
            task_ttl: tasks::DEFAULT_TASK_TTL,
        }
    }
}

/// The input limits of a toolbox and of each of its tools.
pub(super) fn tool_limits(toolbox: &Toolbox) -> Vec<InputLimits> {
    toolbox
        .input_limits()
        .copied()
        .into_iter()
        .chain(
            toolbox
                .definitions()
                .filter_map(|d| d.input_limits().copied()),
        )
        .collect()
}

/// The limits on one message: the largest of the tools' (and the toolbox's) limits, with
/// room for the JSON-RPC envelope around the arguments.
pub(super) fn message_limits(tools: &[InputLimits]) -> InputLimits {
    let most = |f: fn(&InputLimits) -> usize| {
        tools
            .iter()
            .map(f)
            .chain(std::iter::once(f(&InputLimits::DEFAULT)))
            .max()
            .unwrap_or(0)
    };
    InputLimits::DEFAULT
        .with_max_bytes(
            most(|l| l.max_bytes)
                .saturating_mul(2)
                .saturating_add(64 << 10)
                .max(MIN_MESSAGE_BYTES),
        )
        .with_max_depth(most(|l| l.max_depth).saturating_add(4))
        .with_max_nodes(most(|l| l.max_nodes).saturating_add(1024))
        .with_max_members(most(|l| l.max_members).max(64))
        .with_max_items(most(|l| l.max_items))
}

//! Serving a [`Toolbox`] to Model Context Protocol clients, on stdio or streamable HTTP.
//!
//! [`McpServer`] speaks MCP 2025-11-25 and 2026-07-28 (each client gets the revision it asks
//! for; 2026-07-28 needs no session) through [rmcp](https://docs.rs/rmcp), the official Rust
//! SDK; toolsmith supplies what the protocol carries:
//!
//! - `tools/list`: the tools enabled for the request's context, each as
//!   [`Dialect::Mcp`] exports it (name, title, description, `inputSchema`, `outputSchema`,
//!   `annotations` from the tool's effect and hints), in pages of
//!   [`with_page_size`](McpServer::with_page_size) tools;
//! - `tools/call`: [`Toolbox::call`] with its validation and execution policy; the outcome is a
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
//! - `notifications/cancelled` fires the call's [`ToolContext::cancellation`] signal;
//! - `notifications/tools/list_changed` goes to every connected client when the toolbox's
//!   enabled tools change ([`Toolbox::tools_changed`], [`Switch`](crate::policy::Switch)).
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

use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomRequest,
    CustomResult, Implementation, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ServerCapabilities, ServerConfig, Tool as McpTool,
};
use rmcp::service::{ElicitationError, NotificationContext, RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::{Map, Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;

/// rmcp, the MCP SDK this server is built on, for handlers composed with it
/// ([`McpServer::with_handler`]) without a dependency of their own.
pub use rmcp;

mod caller;
mod delegate;
mod http_guard;
mod stdio;
mod tasks;

pub use tasks::TaskSupport;

use crate::context::ToolContext;
use crate::limits::InputLimits;
use crate::policy::{ApprovalDecision, ApprovalPrompt, ApprovalRequest, PromptForApproval};
use crate::provider::Dialect;
use crate::provider::mcp::CallResult;
use crate::toolbox::Toolbox;

/// The MCP revision served.
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// The `_meta` key in which a client names the run a `tools/call` belongs to: 16 to 128
/// printable ASCII characters, best a random id. Within an MCP session the named run is a
/// run inside that session; without a session (MCP 2026-07-28 over HTTP, a stateless server)
/// it is the run. See [`RunScope`].
pub const RUN_META: &str = "toolsmith/run";

/// Which run a call over MCP belongs to: what idempotency keys and run budgets are scoped to
/// (docs/idempotency.md). Set with [`McpServer::with_run_scope`].
///
/// A client's retry of a write in the same run replays the first result instead of running
/// it again. With no run, every call is an action of its own: a retry runs again, unless the
/// call carries its own `idempotency_key`.
///
/// ```
/// use toolsmith::mcp::{McpServer, RunScope};
/// let server = McpServer::new(toolsmith::Toolbox::new()).with_run_scope(RunScope::None);
/// # let _ = server;
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum RunScope {
    /// The default. The run is the MCP session: the connection on stdio (either revision) or
    /// an in-process transport, the `Mcp-Session-Id` of an HTTP session (2025-11-25). A
    /// client may name a run inside it in `_meta` ([`RUN_META`]). A request with no session
    /// (2026-07-28 over HTTP, a stateless server) belongs to the run the client names there,
    /// and to none if it names none.
    #[default]
    Session,
    /// No run from MCP: every call is an action of its own (unless a
    /// [`with_context`](McpServer::with_context) hook sets one).
    None,
}

/// The path of the streamable HTTP endpoint.
pub const HTTP_PATH: &str = "/mcp";

/// Tools per `tools/list` page unless [`McpServer::with_page_size`] says otherwise.
pub const DEFAULT_PAGE_SIZE: usize = 100;

/// Open HTTP sessions unless [`McpServer::with_max_sessions`] says otherwise: each holds a
/// worker task and its buffers (tens of kilobytes), so a client that opens sessions without
/// end must not exhaust the server.
pub const DEFAULT_MAX_SESSIONS: usize = 256;

/// How long an HTTP session may go without a request before it is closed, unless
/// [`McpServer::with_session_idle_timeout`] says otherwise (rmcp's own default).
pub const DEFAULT_SESSION_IDLE: std::time::Duration = std::time::Duration::from_secs(300);

/// Tool calls running at once, per server, unless [`McpServer::with_max_in_flight`] says
/// otherwise; a call beyond it is answered at once with a retryable `rate_limited` error.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 64;

/// The least bytes one JSON-RPC message may take (rmcp's own HTTP body limit): room for a
/// call whose arguments are at their limit, and the envelope around them.
pub const MIN_MESSAGE_BYTES: usize = 4 << 20;

/// The client requests of MCP 2025-11-25 this server knows. Not `tasks/result` and
/// `tasks/list`: tasks are served as the tasks extension of 2026-07-28 has them, which has
/// neither (a client asking for them is told the method is not found).
const PROTOCOL_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "tasks/get",
    "tasks/cancel",
];

/// Requests of 2025-11-25 that 2026-07-28 removed (stateless sessions, subscriptions and
/// log levels by other means).
const REMOVED_IN_2026_07_28: &[&str] = &[
    "initialize",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

type ContextHook = dyn Fn(ToolContext, &McpRequest) -> ToolContext + Send + Sync;

/// An MCP server for one toolbox.
///
/// Cheap to clone: clones share the toolbox and the list of connected clients. Build one,
/// then serve it with [`serve_stdio`](Self::serve_stdio), [`bind_http`](Self::bind_http) or,
/// since it is an [`rmcp::ServerHandler`], any rmcp transport.
#[derive(Clone)]
pub struct McpServer {
    config: Arc<Config>,
    peers: Arc<Peers>,
    /// What the connected client chose (its log level); one per connection.
    session: Arc<caller::Session>,
    /// Seals the state a call carries between rounds on MCP 2026-07-28.
    state_codec: Arc<rmcp::model::RequestStateCodec>,
}

#[derive(Clone)]
struct Config {
    toolbox: Toolbox,
    /// Each tool as MCP lists it, by name, converted once.
    tools: HashMap<Arc<str>, McpTool>,
    implementation: Implementation,
    instructions: Option<String>,
    page_size: usize,
    allowed_hosts: Vec<String>,
    allowed_origins: Vec<String>,
    context: Option<Arc<ContextHook>>,
    /// Resources, prompts and completions from a handler written with rmcp.
    delegate: Option<Arc<dyn delegate::Delegate>>,
    /// The limits on one message: what the tools' own limits allow, plus the envelope.
    message_limits: InputLimits,
    max_sessions: usize,
    session_idle: std::time::Duration,
    in_flight: Arc<tokio::sync::Semaphore>,
    max_in_flight: usize,
    /// Whether HTTP requests of MCP 2025-11-25 are served without sessions too.
    stateless_http: bool,
    /// Which run a call belongs to.
    runs: RunScope,
    /// The tools that run as tasks, and the tasks themselves.
    tasks: tasks::Tasks,
    /// The rounds' states already answered (by their nonce), until they expire.
    used_states: Arc<std::sync::Mutex<std::collections::HashMap<String, std::time::Instant>>>,
}

/// The connected clients that get `notifications/tools/list_changed`.
#[derive(Default)]
struct Peers {
    peers: Mutex<Vec<rmcp::Peer<RoleServer>>>,
    watching: std::sync::OnceLock<()>,
}

impl fmt::Debug for McpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServer")
            .field("tools", &self.config.toolbox.len())
            .field("name", &self.config.implementation.name)
            .field("page_size", &self.config.page_size)
            .finish_non_exhaustive()
    }
}

impl McpServer {
    /// A server for `toolbox`, introducing itself as `toolsmith` with this crate's version.
    ///
    /// ```
    /// use toolsmith::mcp::McpServer;
    /// let server = McpServer::new(toolsmith::Toolbox::new()).with_name("notes", "1.2.0");
    /// # let _ = server;
    /// ```
    #[must_use]
    pub fn new(toolbox: Toolbox) -> Self {
        let toolbox_limits: Vec<InputLimits> = toolbox
            .input_limits()
            .copied()
            .into_iter()
            .chain(
                toolbox
                    .definitions()
                    .filter_map(|d| d.input_limits().copied()),
            )
            .collect();
        let tools = toolbox
            .definitions()
            .filter_map(|def| {
                let exported = def.export(Dialect::Mcp).ok()?.clone();
                match serde_json::from_value::<McpTool>(exported) {
                    Ok(tool) => Some((Arc::from(def.name()), tool)),
                    Err(error) => {
                        tracing::error!(tool = def.name(), %error, "tool left out of the MCP list");
                        None
                    }
                }
            })
            .collect();
        Self {
            config: Arc::new(Config {
                toolbox,
                tools,
                implementation: Implementation::new("toolsmith", env!("CARGO_PKG_VERSION")),
                instructions: None,
                page_size: DEFAULT_PAGE_SIZE,
                allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
                allowed_origins: Vec::new(),
                context: None,
                delegate: None,
                message_limits: message_limits(&toolbox_limits),
                max_sessions: DEFAULT_MAX_SESSIONS,
                session_idle: DEFAULT_SESSION_IDLE,
                in_flight: Arc::new(tokio::sync::Semaphore::new(DEFAULT_MAX_IN_FLIGHT)),
                max_in_flight: DEFAULT_MAX_IN_FLIGHT,
                stateless_http: false,
                runs: RunScope::default(),
                tasks: tasks::Tasks::default(),
                used_states: Arc::default(),
            }),
            peers: Arc::default(),
            session: Arc::default(),
            state_codec: state_codec(crate::output::random_key()),
        }
    }

    /// Seals the state calls carry between rounds on MCP 2026-07-28 with a key made from
    /// `secret`, instead of one this server makes up: servers of one fleet share it, so that
    /// any of them can take the next round. At least 32 random bytes.
    ///
    /// # Panics
    ///
    /// When `secret` is shorter than 32 bytes: anyone could guess a short key and forge the
    /// sealed state, so it is refused where the server is built.
    #[must_use]
    pub fn with_state_key(mut self, secret: impl AsRef<[u8]>) -> Self {
        crate::output::check_secret("McpServer::with_state_key", secret.as_ref());
        self.state_codec = state_codec(crate::output::key_from_secret(secret.as_ref()));
        self
    }

    /// Runs the tool `name` as an MCP task when the client takes tasks (the
    /// `io.modelcontextprotocol/tasks` extension of MCP 2026-07-28), as `support` says: the
    /// client gets the task's id at once, polls `tasks/get` for its status and result, answers
    /// what the tool asks with `tasks/update`, and may cancel it with `tasks/cancel` (the tool's
    /// cancellation token fires; a tool still running a second later is dropped). A task's
    /// call holds one of the server's in-flight slots while it runs ([`with_max_in_flight`]);
    /// a task and its result are kept for [`with_task_ttl`] from its start.
    ///
    /// A task started with a principal (see [`with_context`](Self::with_context)) is that
    /// principal's: another principal's `tasks/get`, `tasks/update` or `tasks/cancel` is
    /// answered as for an unknown task. One started without a principal is open to whoever
    /// holds its id, a random UUID.
    ///
    /// [`with_max_in_flight`]: Self::with_max_in_flight
    /// [`with_task_ttl`]: Self::with_task_ttl
    ///
    /// ```
    /// use toolsmith::mcp::{McpServer, TaskSupport};
    /// let server = McpServer::new(toolsmith::Toolbox::new())
    ///     .with_task_tool("build_index", TaskSupport::Required)
    ///     .with_task_tool("deploy", TaskSupport::OnDetach);
    /// # let _ = server;
    /// ```
    #[must_use]
    pub fn with_task_tool(self, name: impl Into<String>, support: TaskSupport) -> Self {
        self.edit(|c| {
            c.tasks.tools.insert(name.into(), support);
        })
    }

    /// Mirrors the argument `param` of the tool `tool` into the HTTP header
    /// `Mcp-Param-{header}` (MCP 2026-07-28, SEP-2243), so that a load balancer or gateway
    /// can route on it without reading the body: `tools/list` marks the parameter with
    /// `x-mcp-header`, clients send the header, and the server refuses a call whose header
    /// is missing or differs from the body (`-32020`, HTTP 400) before the tool runs.
    ///
    /// # Panics
    ///
    /// When the server is built wrong, as `Toolbox::with` does: no tool `tool`, no top-level
    /// parameter `param` of type string, integer or boolean, a `header` that is not an HTTP
    /// token (RFC 9110: letters, digits and ``!#$%&'*+-.^_`|~``), or a header the tool already
    /// uses (in any case).
    ///
    /// ```
    /// #[toolsmith::tool(effect = "read")]
    /// /// The weather in a region now. Not for forecasts.
    /// fn current_weather(
    ///     /// The region, e.g. "eu-west".
    ///     #[arg(length(max = 40))]
    ///     region: String,
    /// ) -> String {
    ///     format!("sunny in {region}")
    /// }
    /// let server = toolsmith::mcp::McpServer::new(toolsmith::Toolbox::new().with(CurrentWeather))
    ///     .with_param_header("current_weather", "region", "Region");
    /// # let _ = server;
    /// ```
    #[must_use]
    pub fn with_param_header(self, tool: &str, param: &str, header: &str) -> Self {
        self.edit(|c| {
            let Some(listed) = c.tools.get_mut(tool) else {
                panic!("with_param_header: no tool `{tool}` is served");
            };
            if let Err(problem) = add_param_header(listed, param, header) {
                panic!("with_param_header(`{tool}`, `{param}`, `{header}`): {problem}");
            }
        })
    }

    /// Serves every HTTP request on its own, with no session, whatever revision the client
    /// speaks: replicas of this server behind a load balancer with no session affinity give
    /// the same answers, as each request carries all it needs. MCP 2026-07-28 requests are
    /// served so anyway; this extends it to 2025-11-25 clients (rmcp's stateless mode), which
    /// then get no `Mcp-Session-Id`, no log level kept between requests, no
    /// `tools/list_changed` pushed, and no resumable streams. Share the keys that state
    /// depends on across the fleet too: [`with_state_key`](Self::with_state_key) for
    /// 2026-07-28 rounds, `Toolbox::with_cursor_key` for pages, and
    /// `Toolbox::with_shared_state` for idempotency, results, limits, budgets and circuits
    /// (docs/deployment.md).
    ///
    /// ```
    /// let server = toolsmith::mcp::McpServer::new(toolsmith::Toolbox::new())
    ///     .with_stateless_http()
    ///     .with_state_key("a secret of at least 32 random bytes, shared by the fleet");
    /// # let _ = server;
    /// ```
    #[must_use]
    pub fn with_stateless_http(self) -> Self {
        self.edit(|c| c.stateless_http = true)
    }

    /// How long a task and its result are kept from its start (default five minutes): a
    /// task still running then is stopped and reported failed, and a finished one is
    /// forgotten a while after.
    ///
    /// ```
    /// let server = toolsmith::mcp::McpServer::new(toolsmith::Toolbox::new())
    ///     .with_task_ttl(std::time::Duration::from_secs(3600));
    /// # let _ = server;
    /// ```
    #[must_use]
    pub fn with_task_ttl(self, ttl: std::time::Duration) -> Self {
        self.edit(|c| c.tasks.ttl = ttl.max(std::time::Duration::from_millis(1)))
    }

    /// This server for a new connection: the same tools and clients, a session of its own.
    fn for_session(&self) -> Self {
        Self {
            config: Arc::clone(&self.config),
            peers: Arc::clone(&self.peers),
            session: Arc::default(),
            state_codec: Arc::clone(&self.state_codec),
        }
    }

    fn edit(mut self, f: impl FnOnce(&mut Config)) -> Self {
        f(Arc::make_mut(&mut self.config));
        self
    }

    /// The name and version the server gives in `initialize` (`serverInfo`).
    #[must_use]
    pub fn with_name(self, name: impl Into<String>, version: impl Into<String>) -> Self {
        let implementation = Implementation::new(name, version);
        self.edit(|c| c.implementation = implementation)
    }

    /// The `instructions` the server gives in `initialize`: how to use its tools together.
    #[must_use]
    pub fn with_instructions(self, instructions: impl Into<String>) -> Self {
        let instructions = instructions.into();
        self.edit(|c| c.instructions = Some(instructions))
    }

    /// How many tools one `tools/list` page holds (at least 1; default
    /// [`DEFAULT_PAGE_SIZE`]). Longer lists come with a `nextCursor`.
    #[must_use]
    pub fn with_page_size(self, tools: usize) -> Self {
        self.edit(|c| c.page_size = tools.max(1))
    }

    /// The `Host` header values the HTTP endpoint accepts (default: `localhost`, `127.0.0.1`
    /// and `::1`, which protects a local server from DNS rebinding). Set this when serving
    /// on another address.
    #[must_use]
    pub fn with_allowed_hosts(self, hosts: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let hosts = hosts.into_iter().map(Into::into).collect();
        self.edit(|c| c.allowed_hosts = hosts)
    }

    /// The browser origins the HTTP endpoint accepts besides loopback ones (`http://localhost`,
    /// `http://127.0.0.1`, `http://[::1]`, any port), as `https://app.example.com` (any port)
    /// or `https://app.example.com:8443`; `*` allows every origin. A request with another
    /// `Origin` gets 403, as the MCP transport specification requires; a request without one
    /// (not from a browser) is not affected.
    ///
    /// ```
    /// let server = toolsmith::mcp::McpServer::new(toolsmith::Toolbox::new())
    ///     .with_allowed_origins(["https://app.example.com"]);
    /// # let _ = server;
    /// ```
    #[must_use]
    pub fn with_allowed_origins(
        self,
        origins: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        let origins = origins.into_iter().map(Into::into).collect();
        self.edit(|c| c.allowed_origins = origins)
    }

    /// The most bytes one JSON-RPC message may take, on stdio (one line) and HTTP (one
    /// body). By default twice the largest `max_bytes` of the tools' limits plus room for the
    /// envelope, and at least [`MIN_MESSAGE_BYTES`]. A longer message is answered with a
    /// `-32700` parse error (HTTP 413) and never held whole.
    ///
    /// ```
    /// let server = toolsmith::mcp::McpServer::new(toolsmith::Toolbox::new())
    ///     .with_max_message_bytes(16 << 20);
    /// # let _ = server;
    /// ```
    #[must_use]
    pub fn with_max_message_bytes(self, bytes: usize) -> Self {
        self.edit(|c| c.message_limits.max_bytes = bytes.max(1024))
    }

    /// How many HTTP sessions may be open at once (default [`DEFAULT_MAX_SESSIONS`]); an
    /// `initialize` beyond it gets 503 with `Retry-After`, after idle sessions are closed.
    #[must_use]
    pub fn with_max_sessions(self, sessions: usize) -> Self {
        self.edit(|c| c.max_sessions = sessions.max(1))
    }

    /// How long an HTTP session may go without a request before it is closed (default
    /// [`DEFAULT_SESSION_IDLE`]).
    #[must_use]
    pub fn with_session_idle_timeout(self, idle: std::time::Duration) -> Self {
        self.edit(|c| c.session_idle = idle)
    }

    /// How many tool calls may run at once across all of this server's clients (default
    /// [`DEFAULT_MAX_IN_FLIGHT`]). A call beyond it is answered at once with a retryable
    /// `rate_limited` tool error instead of queueing without bound.
    ///
    /// ```
    /// let server = toolsmith::mcp::McpServer::new(toolsmith::Toolbox::new())
    ///     .with_max_in_flight(8);
    /// # let _ = server;
    /// ```
    #[must_use]
    pub fn with_max_in_flight(self, calls: usize) -> Self {
        let calls = calls.max(1);
        self.edit(|c| {
            c.max_in_flight = calls;
            c.in_flight = Arc::new(tokio::sync::Semaphore::new(calls));
        })
    }

    /// Which run each call belongs to (default [`RunScope::Session`]): what idempotency keys
    /// and run budgets are scoped to. A [`with_context`](Self::with_context) hook can set
    /// another run with `ctx.with_run_id(..)`.
    ///
    /// ```
    /// use toolsmith::mcp::{McpServer, RunScope};
    /// let server = McpServer::new(toolsmith::Toolbox::new()).with_run_scope(RunScope::Session);
    /// # let _ = server;
    /// ```
    #[must_use]
    pub fn with_run_scope(self, runs: RunScope) -> Self {
        self.edit(|c| c.runs = runs)
    }

    /// Adds to each request's context: `hook` gets the context the server made (call id,
    /// cancellation, trace id, run) and the request, and returns the context the tool sees.
    ///
    /// ```
    /// use toolsmith::mcp::McpServer;
    ///
    /// let server = McpServer::new(toolsmith::Toolbox::new()).with_context(|ctx, request| {
    ///     match request.header("x-user") {
    ///         Some(user) => ctx.with_principal(user),
    ///         None => ctx,
    ///     }
    /// });
    /// # let _ = server;
    /// ```
    #[must_use]
    pub fn with_context(
        self,
        hook: impl Fn(ToolContext, &McpRequest) -> ToolContext + Send + Sync + 'static,
    ) -> Self {
        self.edit(|c| c.context = Some(Arc::new(hook)))
    }

    /// Serves the resources, prompts and completions of `handler`, an [`rmcp::ServerHandler`]
    /// written with rmcp's own API (its `#[prompt_router]`, its resource methods), from the
    /// same endpoint as the toolbox's tools. Its capabilities for resources, prompts and
    /// completions are advertised; its tool methods are not used (the toolbox serves the
    /// tools). Stored large results (`toolsmith://results/...`) are read by the server
    /// itself; every other `resources/read` goes to `handler`.
    ///
    /// ```
    /// use toolsmith::mcp::rmcp::{self, model::{ListPromptsResult, Prompt, ServerCapabilities, ServerConfig}};
    /// use toolsmith::mcp::McpServer;
    ///
    /// struct Prompts;
    /// impl rmcp::ServerHandler for Prompts {
    ///     fn get_info(&self) -> ServerConfig {
    ///         ServerConfig::new(ServerCapabilities::builder().enable_prompts().build())
    ///     }
    ///     async fn list_prompts(
    ///         &self,
    ///         _: Option<rmcp::model::PaginatedRequestParams>,
    ///         _: rmcp::service::RequestContext<rmcp::RoleServer>,
    ///     ) -> Result<ListPromptsResult, rmcp::ErrorData> {
    ///         Ok(ListPromptsResult::with_all_items(vec![Prompt::new("triage", Some("Triage a ticket"), None)]))
    ///     }
    /// }
    ///
    /// let server = McpServer::new(toolsmith::Toolbox::new()).with_handler(Prompts);
    /// # let _ = server;
    /// ```
    #[must_use]
    pub fn with_handler(self, handler: impl rmcp::ServerHandler + 'static) -> Self {
        self.edit(|c| c.delegate = Some(Arc::new(handler)))
    }

    /// What the stdio transport does with one line (without its newline): `Ok` when it is a
    /// message handed to the protocol, `Err(answer)` with the JSON-RPC error line written
    /// back otherwise, `Ok` for a blank line. For fuzzing the framing; not a stable API.
    #[doc(hidden)]
    pub fn frame_line(&self, line: &[u8]) -> Result<(), String> {
        stdio::frame(line, &self.config.message_limits)
    }

    /// The toolbox served.
    #[must_use]
    pub fn toolbox(&self) -> &Toolbox {
        &self.config.toolbox
    }

    /// Serves one client on this process's stdin and stdout until it disconnects. Logs must
    /// go to stderr: stdout carries the protocol.
    ///
    /// # Errors
    ///
    /// When the client does not complete the `initialize` handshake or the connection fails.
    pub async fn serve_stdio(self) -> Result<(), ServeError> {
        self.serve(rmcp::transport::stdio()).await
    }

    /// Serves one client over any byte stream carrying newline-delimited JSON-RPC (a pipe, a
    /// socket, `tokio::io::duplex` in tests) until it disconnects.
    ///
    /// ```
    /// use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    /// use toolsmith::mcp::McpServer;
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let (client, server) = tokio::io::duplex(1 << 16);
    /// tokio::spawn(McpServer::new(toolsmith::Toolbox::new()).serve(tokio::io::split(server)));
    /// let (read, mut write) = tokio::io::split(client);
    /// let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"doc","version":"1"}}}"#;
    /// write.write_all(format!("{initialize}\n").as_bytes()).await.unwrap();
    /// let answer = BufReader::new(read).lines().next_line().await.unwrap().unwrap();
    /// assert!(answer.contains(r#""protocolVersion":"2025-11-25""#));
    /// # });
    /// ```
    ///
    /// # Errors
    ///
    /// When the client does not complete the `initialize` handshake or the connection fails.
    pub async fn serve<R, W>(self, (read, write): (R, W)) -> Result<(), ServeError>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let transport = stdio::transport(read, write, self.config.message_limits);
        let running = ServiceExt::serve(self.for_session(), transport)
            .await
            .map_err(ServeError::new)?;
        running.waiting().await.map_err(ServeError::new)?;
        Ok(())
    }

    /// Serves streamable HTTP at `http://{addr}/mcp` until [`HttpServer::shutdown`]. Bind
    /// `127.0.0.1:0` for a free local port; serving beyond the loopback interface also needs
    /// [`with_allowed_hosts`](Self::with_allowed_hosts).
    ///
    /// ```no_run
    /// # async fn run(toolbox: toolsmith::Toolbox) -> std::io::Result<()> {
    /// use toolsmith::mcp::McpServer;
    ///
    /// let http = McpServer::new(toolbox).bind_http("127.0.0.1:8000").await?;
    /// println!("MCP endpoint: {}", http.url());
    /// http.wait().await
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// When the address cannot be bound.
    pub async fn bind_http(
        self,
        addr: impl tokio::net::ToSocketAddrs,
    ) -> std::io::Result<HttpServer> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let shutdown = CancellationToken::new();
        let config = StreamableHttpServerConfig::default()
            .with_allowed_hosts(self.config.allowed_hosts.clone())
            .with_max_request_body_bytes(self.config.message_limits.max_bytes)
            .with_legacy_session_mode(!self.config.stateless_http)
            // Without sessions, a call with nothing to stream is answered as plain JSON.
            .with_json_response(self.config.stateless_http)
            .with_cancellation_token(shutdown.child_token());
        let sessions = Arc::new(http_guard::Sessions::new(
            self.config.max_sessions,
            self.config.session_idle,
        ));
        let guard = Arc::new(http_guard::Guard {
            allowed_hosts: self.config.allowed_hosts.clone(),
            allowed_origins: self.config.allowed_origins.clone(),
            limits: self.config.message_limits,
            sessions: Arc::clone(&sessions),
        });
        let server = self;
        let service =
            StreamableHttpService::new(move || Ok(server.for_session()), sessions, config);
        let router = axum::Router::new().nest_service(HTTP_PATH, service).layer(
            axum::middleware::from_fn_with_state(guard, http_guard::guard),
        );
        let stop = shutdown.clone();
        let task = tokio::spawn(async move {
            axum::serve(listener, router)
                .with_graceful_shutdown(async move { stop.cancelled_owned().await })
                .await
        });
        Ok(HttpServer {
            addr,
            shutdown,
            task,
        })
    }

    /// Serves streamable HTTP on the loopback interface, `http://127.0.0.1:{port}/mcp` (port 0
    /// for a free one): the default place for a local server, out of reach of other machines.
    ///
    /// ```no_run
    /// # async fn run(toolbox: toolsmith::Toolbox) -> std::io::Result<()> {
    /// let http = toolsmith::mcp::McpServer::new(toolbox).bind_local_http(8000).await?;
    /// assert!(http.local_addr().ip().is_loopback());
    /// # http.shutdown().await
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// When the port cannot be bound.
    pub async fn bind_local_http(self, port: u16) -> std::io::Result<HttpServer> {
        self.bind_http((std::net::Ipv4Addr::LOCALHOST, port)).await
    }

    /// The context a request's tool runs in.
    fn context(
        &self,
        request: &McpRequest,
        cancellation: CancellationToken,
        peer: Option<&rmcp::Peer<RoleServer>>,
    ) -> ToolContext {
        let mut ctx = ToolContext::new()
            .with_call_id(request.id.as_str())
            .with_cancellation(cancellation);
        if let Some(peer) = peer
            && peer
                .supported_elicitation_modes()
                .contains(&rmcp::service::ElicitationMode::Form)
        {
            ctx = ctx.with_extension(PromptForApproval::new(Elicit { peer: peer.clone() }));
        }
        if let Some(trace_id) = request.trace_id() {
            ctx = ctx.with_trace_id(trace_id);
        }
        if let Ok(Some(run)) = self.run_of(request) {
            ctx = ctx.with_run_id(run);
        }
        if let Some(hook) = &self.config.context {
            ctx = hook(ctx, request);
        }
        ctx.with_extension(request.clone())
    }

    /// A round's state, opened: authentic, bound to `bound`, not expired, and not used
    /// before (each state answers one round).
    fn open_state(&self, sealed: &str, bound: &str) -> Option<SealedState> {
        let state: SealedState = self
            .state_codec
            .open_json_with(sealed, bound.as_bytes())
            .ok()?;
        let mut used = self.config.used_states.lock().ok()?;
        let now = std::time::Instant::now();
        used.retain(|_, until| *until > now);
        if used.len() >= MAX_USED_STATES {
            return None;
        }
        match used.entry(state.nonce.clone()) {
            std::collections::hash_map::Entry::Occupied(_) => None,
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(now + STATE_TTL);
                Some(state)
            }
        }
    }

    /// The principal of a request, as the server's context hook names it.
    fn principal_of(&self, context: &RequestContext<RoleServer>) -> Option<String> {
        let request = McpRequest::new(context, None);
        self.context(&request, CancellationToken::new(), None)
            .principal()
            .map(str::to_owned)
    }

    /// Refuses a task request for a task that is another principal's, as if it did not exist.
    fn task_of_caller(
        &self,
        id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.config
            .tasks
            .check(id, self.principal_of(context).as_deref())
    }

    /// The run a request belongs to ([`RunScope`]); `Err` for a run named in `_meta` that is
    /// not an id.
    fn run_of(&self, request: &McpRequest) -> Result<Option<String>, ErrorData> {
        if self.config.runs == RunScope::None {
            return Ok(None);
        }
        let named = match request.meta().get(RUN_META) {
            None | Some(Value::Null) => None,
            Some(Value::String(run))
                if (16..=128).contains(&run.len()) && run.bytes().all(|b| b.is_ascii_graphic()) =>
            {
                Some(run.as_str())
            }
            Some(_) => {
                return Err(ErrorData::invalid_params(
                    format!(
                        "`_meta.{RUN_META}` must be a string of 16 to 128 printable ASCII characters (a random id of the run); leave it out for the session's run"
                    ),
                    None,
                ));
            }
        };
        // The session id is a credential on HTTP: the run shows only a digest of it.
        let session = match &request.headers {
            Some(_) => request.header("mcp-session-id").map(|id| {
                let mut run = String::with_capacity(12 + 16);
                run.push_str("mcp-session-");
                let digest = crate::output::key_from_secret(id.as_bytes());
                crate::json::canonical::push_hex(&mut run, &digest[..8]);
                run
            }),
            None => Some(self.session.run().to_owned()),
        };
        Ok(match (session, named) {
            (Some(session), Some(named)) => Some(format!("{session}/{named}")),
            (Some(session), None) => Some(session),
            (None, named) => named.map(str::to_owned),
        })
    }

    /// The `-32602` answer to a call of a tool that is not offered in `ctx`.
    async fn unknown_tool(&self, name: &str, ctx: &ToolContext) -> ErrorData {
        let available: Vec<&str> = self
            .config
            .toolbox
            .definitions_for(ctx)
            .await
            .into_iter()
            .map(|def| def.name())
            .collect();
        ErrorData::invalid_params(
            format!("Unknown tool: {}", crate::echo::echo(name)),
            Some(json!({ "available": available })),
        )
    }

    /// Remembers a client for list-changed notifications, and starts the task that sends
    /// them on the first client.
    fn watch(&self, peer: rmcp::Peer<RoleServer>) {
        if let Ok(mut peers) = self.peers.peers.lock() {
            peers.retain(|p| !p.is_transport_closed());
            peers.push(peer);
        }
        self.peers.watching.get_or_init(|| {
            let mut changes = self.config.toolbox.subscribe_changes();
            changes.mark_unchanged();
            let peers = Arc::downgrade(&self.peers);
            tokio::spawn(async move {
                // Ends when the toolbox (the sender) or the server (the peers) is gone.
                while changes.changed().await.is_ok() {
                    let Some(peers) = peers.upgrade() else { break };
                    let live: Vec<_> = match peers.peers.lock() {
                        Ok(mut list) => {
                            list.retain(|p| !p.is_transport_closed());
                            list.clone()
                        }
                        Err(_) => break,
                    };
                    for peer in live {
                        if let Err(error) = peer.notify_tool_list_changed().await {
                            tracing::debug!(%error, "tools/list_changed not delivered");
                        }
                    }
                }
            });
        });
    }
}

impl ServerHandler for McpServer {
    #[allow(deprecated)] // MCP 2025-11-25 logging; rmcp deprecates it for the next revision
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_resources()
            .enable_logging()
            .build();
        if let Some(delegate) = &self.config.delegate {
            let theirs = delegate.capabilities();
            if theirs.resources.is_some() {
                capabilities.resources = theirs.resources;
            }
            capabilities.prompts = theirs.prompts;
            capabilities.completions = theirs.completions;
        }
        if !self.config.tasks.tools.is_empty() {
            capabilities
                .extensions
                .get_or_insert_with(Default::default)
                .insert(
                    rmcp::model::TASKS_EXTENSION_ID.to_owned(),
                    Default::default(),
                );
        }
        let mut info = ServerConfig::new(capabilities)
            .with_server_info(self.config.implementation.clone())
            .with_protocol_version(ProtocolVersion::V_2025_11_25);
        if let Some(instructions) = &self.config.instructions {
            info = info.with_instructions(instructions.clone());
        }
        info
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        // Each client gets the revision it asks for, of these two (rmcp negotiates).
        std::borrow::Cow::Owned(vec![
            ProtocolVersion::V_2025_11_25,
            ProtocolVersion::V_2026_07_28,
        ])
    }

    /// rmcp hands over requests it could not parse as custom requests; one with a method of
    /// the protocol has malformed params, which MCP answers with `-32602`.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let method = request.method.as_str();
        // Methods MCP 2026-07-28 removed are unknown to a client that negotiated it.
        if at_least_2026_07_28(&context) && REMOVED_IN_2026_07_28.contains(&method) {
            return Err(not_offered(method));
        }
        let params = request.params.unwrap_or(Value::Null);
        let problem = match method {
            "tools/call" if params.is_null() => Some(
                "the params are missing; send {\"name\": string, \"arguments\": object}".to_owned(),
            ),
            "tools/call" => serde_json::from_value::<CallToolRequestParams>(params)
                .err()
                .map(|e| format!("{e}; send {{\"name\": string, \"arguments\": object}}")),
            "tools/list" => serde_json::from_value::<Option<PaginatedRequestParams>>(params)
                .err()
                .map(|e| format!("{e}; send {{\"cursor\": string}} or no params")),
            _ if PROTOCOL_METHODS.contains(&method) => Some("the params do not match".to_owned()),
            _ => None,
        };
        Err(match problem {
            Some(problem) => {
                ErrorData::invalid_params(format!("malformed {method} request: {problem}"), None)
            }
            None => ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                format!("method not found: {method}"),
                None,
            ),
        })
    }

    /// `logging/setLevel`: the least level of the log messages tools send this client.
    #[allow(deprecated)] // MCP 2025-11-25 logging; rmcp deprecates it for the next revision
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.session.set_log_level(request.level);
        Ok(())
    }

    /// MCP 2026-07-28 subscriptions: the notifications a client asks for, of those the server
    /// advertises (rmcp intersects them).
    fn accepted_subscription_filter(
        &self,
        requested: &rmcp::model::SubscriptionFilter,
    ) -> Option<rmcp::model::SubscriptionFilter> {
        Some(requested.clone())
    }

    /// One `subscriptions/listen` stream: `tools/list_changed` whenever the toolbox's enabled
    /// tools change, until the client ends it.
    async fn listen(&self, context: rmcp::service::SubscriptionContext) -> Result<(), ErrorData> {
        let mut changes = self.config.toolbox.subscribe_changes();
        loop {
            let changed = std::pin::pin!(changes.changed());
            let cancelled = std::pin::pin!(context.cancelled());
            match futures_util::future::select(changed, cancelled).await {
                futures_util::future::Either::Left((Ok(()), _)) => {
                    if context.accepted().tools_list_changed == Some(true)
                        && let Err(error) = context.sink().notify_tool_list_changed().await
                    {
                        tracing::debug!(%error, "tools/list_changed not delivered");
                    }
                }
                futures_util::future::Either::Left((Err(_), _)) => {
                    context.cancelled().await;
                    return Ok(());
                }
                futures_util::future::Either::Right(_) => return Ok(()),
            }
        }
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.watch(context.peer);
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let request_info = McpRequest::new(&context, None);
        let ctx = self.context(&request_info, context.ct.clone(), None);
        let start = match request.and_then(|r| r.cursor) {
            None => 0,
            Some(cursor) => cursor.parse::<usize>().map_err(|_| {
                ErrorData::invalid_params(
                    format!("invalid cursor {cursor:?}: pass back a nextCursor from tools/list"),
                    None,
                )
            })?,
        };
        let enabled = self.config.toolbox.definitions_for(&ctx).await;
        // Cursors are offsets this server handed out: within the list, and never its end.
        if start > 0 && start >= enabled.len() {
            return Err(ErrorData::invalid_params(
                format!("invalid cursor \"{start}\": pass back a nextCursor from tools/list"),
                None,
            ));
        }
        let end = start
            .saturating_add(self.config.page_size)
            .min(enabled.len());
        let tools = enabled[start..end]
            .iter()
            .filter_map(|def| self.config.tools.get(def.name()).cloned())
            .collect();
        let mut result = ListToolsResult::with_all_items(tools);
        if end < enabled.len() {
            result.next_cursor = Some(end.to_string());
        }
        Ok(result)
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, ErrorData> {
        match &self.config.delegate {
            Some(delegate) => delegate.list_resources(request, context).await,
            None => Ok(rmcp::model::ListResourcesResult::default()),
        }
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourceTemplatesResult, ErrorData> {
        match &self.config.delegate {
            Some(delegate) => delegate.list_resource_templates(request, context).await,
            None => Ok(rmcp::model::ListResourceTemplatesResult::default()),
        }
    }

    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        match &self.config.delegate {
            Some(delegate) => delegate.subscribe(request, context).await,
            None => Err(not_offered("resources/subscribe")),
        }
    }

    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        match &self.config.delegate {
            Some(delegate) => delegate.unsubscribe(request, context).await,
            None => Err(not_offered("resources/unsubscribe")),
        }
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, ErrorData> {
        match &self.config.delegate {
            Some(delegate) => delegate.list_prompts(request, context).await,
            None => Ok(rmcp::model::ListPromptsResult::default()),
        }
    }

    async fn get_prompt(
        &self,
        request: rmcp::model::GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, ErrorData> {
        match &self.config.delegate {
            Some(delegate) => delegate.get_prompt(request, context).await,
            None => Err(ErrorData::invalid_params(
                "this server offers no prompts",
                None,
            )),
        }
    }

    async fn complete(
        &self,
        request: rmcp::model::CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CompleteResult, ErrorData> {
        match &self.config.delegate {
            Some(delegate) => delegate.complete(request, context).await,
            None => Ok(rmcp::model::CompleteResult::default()),
        }
    }

    /// Serves the results too large to give inline (`toolsmith://results/<id>`, linked from
    /// the tool result), while the result store keeps them.
    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, ErrorData> {
        let meta = request.meta;
        let uri = request.uri;
        let missing = || {
            ErrorData::resource_not_found(
                format!(
                    "no resource {}: stored results are kept for a limited time; call the tool again",
                    crate::echo::echo(&uri)
                ),
                None,
            )
        };
        if !uri.starts_with(crate::output::RESULT_URI_PREFIX) {
            return match &self.config.delegate {
                Some(delegate) => {
                    let mut request = rmcp::model::ReadResourceRequestParams::new(uri.clone());
                    request.meta = meta;
                    delegate.read_resource(request, context).await
                }
                None => Err(missing()),
            };
        }
        let reader = self.context(
            &McpRequest::new(&context, None),
            CancellationToken::new(),
            None,
        );
        match self.config.toolbox.stored_result_for(&uri, &reader).await {
            Ok(Some(text)) => Ok(rmcp::model::ReadResourceResult::new(vec![
                rmcp::model::ResourceContents::TextResourceContents {
                    uri: uri.clone(),
                    mime_type: Some("application/json".into()),
                    text,
                    meta: None,
                },
            ])
            .into()),
            Ok(None) => Err(missing()),
            Err(err) => {
                tracing::warn!(%err, "a stored result could not be read");
                Err(ErrorData::internal_error(
                    "the result store is unavailable; try again later",
                    None,
                ))
            }
        }
    }

    /// The tool `name` as listed: rmcp checks a call's `Mcp-Param-*` headers against it.
    fn get_tool(&self, name: &str) -> Option<McpTool> {
        self.config.tools.get(name).cloned()
    }

    /// `tasks/get`: a task's status, and its result once it has one.
    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, ErrorData> {
        self.task_of_caller(&request.task_id, &context)?;
        let task = self.config.tasks.manager.get_task(&request.task_id)?;
        Ok(rmcp::model::GetTaskResult::new(task))
    }

    /// `tasks/update`: the client's answers to what a task's tool asked.
    async fn update_task(
        &self,
        request: rmcp::model::UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.task_of_caller(&request.task_id, &context)?;
        self.config
            .tasks
            .manager
            .update_task(&request.task_id, request.input_responses)
    }

    /// `tasks/cancel`: asks a task to stop (it ends `cancelled` unless it finished first).
    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.task_of_caller(&request.task_id, &context)?;
        self.config.tasks.manager.cancel_task(&request.task_id)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let request_info = McpRequest::new(&context, Some(&request.name));
        self.run_of(&request_info)?;
        let modern = at_least_2026_07_28(&context);
        // A task tool runs as a task for a client that takes tasks (declared for the session
        // or in this request's `_meta`), on MCP 2026-07-28.
        let support = self.config.tasks.tools.get(&*request.name).copied();
        let takes_tasks = support.is_some()
            && modern
            && context
                .client_capabilities()
                .is_some_and(|caps| caps.supports_tasks());
        if support == Some(TaskSupport::Required) && !takes_tasks {
            return Err(ErrorData::missing_required_client_capability(
                rmcp::model::ClientCapabilities::builder()
                    .enable_tasks()
                    .build(),
            ));
        }
        let as_task = support.filter(|_| takes_tasks);
        // A task outlives its request: it is cancelled by `tasks/cancel`, not by the request.
        let cancellation = match as_task {
            Some(_) => CancellationToken::new(),
            None => context.ct.clone(),
        };
        let ctx = self.context(&request_info, cancellation.clone(), Some(&context.peer));
        let toolbox = &self.config.toolbox;
        let name = &*request.name;
        let Some(tool) = toolbox.resolve(Dialect::Mcp, name) else {
            return Err(self.unknown_tool(name, &ctx).await);
        };
        // A bounded number of calls at once: one beyond it is told to retry, not queued.
        let Ok(slot) = Arc::clone(&self.config.in_flight).try_acquire_owned() else {
            let outcome = crate::outcome::ToolOutcome::Error(
                crate::error::ToolError::new(
                    crate::error::ErrorCode::RateLimited,
                    format!(
                        "The server is running its limit of {} calls at once. Retry in a moment.",
                        self.config.max_in_flight
                    ),
                )
                .retry_after(std::time::Duration::from_secs(1))
                .with_trace_id(ctx.trace_id()),
            );
            let parts = CallResult::new(&outcome, Some(tool.definition()));
            return Ok(CallToolResponse::Complete(CallToolResult::error(vec![
                ContentBlock::text(parts.text),
            ])));
        };
        // MCP 2026-07-28 has no requests from server to client: what a tool asks of the
        // client goes out with an input-required result, and comes back with the next call.
        // What a round's state is bound to: the caller, the tool and the call's arguments.
        let arguments = Value::Object(request.arguments.clone().unwrap_or_default());
        let bound = state_binding(ctx.principal(), name, tool.definition(), &arguments);
        let round = if modern {
            let answers = match &request.request_state {
                Some(sealed) => match self.open_state(sealed, &bound) {
                    Some(state) if state.tool == name => {
                        // Only answers to what the server asked are taken.
                        let responses = request.input_responses.clone().unwrap_or_default();
                        let mut answers = state.answers;
                        answers.extend(
                            responses
                                .into_iter()
                                .filter(|(key, _)| state.asked.contains(key)),
                        );
                        answers
                    }
                    _ => {
                        return Err(ErrorData::invalid_params(
                            "the requestState is not valid for this call (changed, expired, already used, or issued for another caller, tool or arguments): call again without it to start over",
                            None,
                        ));
                    }
                },
                // Answers without the state of the round that asked are not taken: the call
                // starts over, and the tool asks again (a new input-required result, as the
                // MCP conformance suite expects of a retry with missing or wrong answers).
                None => std::collections::BTreeMap::new(),
            };
            let capabilities = request_info
                .meta()
                .get("io.modelcontextprotocol/clientCapabilities")
                .cloned();
            #[allow(deprecated)] // the per-request log level of MCP 2026-07-28
            let log_level = context.meta.log_level();
            Some(Arc::new(caller::Round::new(
                answers,
                capabilities,
                log_level,
            )))
        } else {
            None
        };
        let detach = as_task.map(|_| tasks::Detach::new());
        let ctx = ctx.with_caller(Arc::new(caller::McpCaller {
            peer: context.peer.clone(),
            progress_token: context.meta.get_progress_token(),
            session: Arc::clone(&self.session),
            logger: name.to_owned(),
            round: round.clone(),
            detach: detach.as_ref().map(|(detach, _)| Arc::clone(detach)),
        }));
        // The tasks kept are bounded: past the bound, a task call is told when to retry.
        if as_task.is_some()
            && let Err(wait) = self.config.tasks.admit()
        {
            let outcome = crate::outcome::ToolOutcome::Error(
                crate::error::ToolError::new(
                    crate::error::ErrorCode::RateLimited,
                    "The server keeps as many tasks as it can at once. Retry after the time given.",
                )
                .retry_after(wait)
                .with_trace_id(ctx.trace_id()),
            );
            return Ok(CallToolResponse::Complete(complete(
                name,
                tool.definition(),
                &outcome,
            )));
        }
        let outcome = match (as_task, detach) {
            (Some(support), Some((detach, wish))) => {
                let call = TaskCall {
                    config: Arc::clone(&self.config),
                    tool: Arc::clone(tool),
                    arguments,
                    ctx: ctx.clone(),
                    cancellation,
                    detach,
                    slot,
                };
                match call.start(support, wish, &context.ct).await {
                    Ok(task) => {
                        // Bound before its id leaves the server.
                        self.config.tasks.bind(&task.task_id, ctx.principal());
                        return Ok(CallToolResponse::Task(rmcp::model::CreateTaskResult::new(
                            task,
                        )));
                    }
                    Err(outcome) => outcome,
                }
            }
            _ => {
                let _slot = slot;
                toolbox.call(name, arguments, &ctx).await
            }
        };
        if let Some(round) = round {
            let pending = round.take_pending();
            // A tool that failed for want of a capability the request did not declare: the
            // request is refused as MCP 2026-07-28 says. One that went on without it is not.
            if let Some(capability) = round.missing()
                && pending.is_empty()
                && !outcome.is_success()
            {
                return Err(ErrorData::new(
                    rmcp::model::ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
                    format!(
                        "the tool needs the client capability `{capability}`, which this request does not declare"
                    ),
                    Some(json!({"requiredCapabilities": {capability: {}}})),
                ));
            }
            if !pending.is_empty() {
                let asked: Vec<String> = pending.keys().cloned().collect();
                let requests: rmcp::model::InputRequests =
                    serde_json::from_value(Value::Object(pending.into_iter().collect()))
                        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                let state = SealedState {
                    tool: name.to_owned(),
                    asked,
                    answers: round.answers.clone(),
                    nonce: crate::output::new_id(),
                };
                let options = rmcp::model::SealOptions::new()
                    .associated_data(bound.as_bytes())
                    .ttl(STATE_TTL);
                let sealed = self
                    .state_codec
                    .seal_json_with(&state, &options)
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                return Ok(CallToolResponse::InputRequired(
                    rmcp::model::InputRequiredResult::new(Some(requests), Some(sealed)),
                ));
            }
        }
        // The toolbox refuses a tool disabled in this context as an unknown one: for MCP that
        // is a protocol error too.
        if outcome
            .error()
            .is_some_and(|err| err.code() == crate::error::ErrorCode::UnknownTool)
        {
            return Err(self.unknown_tool(name, &ctx).await);
        }
        Ok(CallToolResponse::Complete(complete(
            name,
            tool.definition(),
            &outcome,
        )))
    }
}

/// A call of a task tool from a client that takes tasks, before it is started.
struct TaskCall {
    config: Arc<Config>,
    tool: Arc<dyn crate::tool::Tool>,
    arguments: Value,
    ctx: ToolContext,
    cancellation: CancellationToken,
    detach: Arc<tasks::Detach>,
    slot: tokio::sync::OwnedSemaphorePermit,
}

impl TaskCall {
    /// Starts the call: as a task at once, or (`OnDetach`) in the request until the tool
    /// detaches (a task), ends (its outcome) or the request is cancelled.
    async fn start(
        self,
        support: TaskSupport,
        wish: tokio::sync::oneshot::Receiver<()>,
        request: &CancellationToken,
    ) -> Result<rmcp::model::Task, crate::outcome::ToolOutcome> {
        let Self {
            config,
            tool,
            arguments,
            ctx,
            cancellation,
            detach,
            slot,
        } = self;
        let manager = config.tasks.manager.clone();
        let options = config.tasks.options();
        let stop = cancellation.clone();
        let run = {
            let config = Arc::clone(&config);
            let name = tool.definition().name().to_owned();
            // Dropped (the request ends, the task expires), the handle stops the call.
            move || {
                tokio_util::task::AbortOnDropHandle::new(tokio::spawn(async move {
                    config.toolbox.call(&name, arguments, &ctx).await
                }))
            }
        };
        let tasks = config.tasks.clone();
        let task =
            move |run, task: rmcp::task_manager::TaskContext| -> rmcp::task_manager::TaskFuture {
                detach.became(task.clone());
                let kept = tasks.keep();
                Box::pin(async move {
                    let result = finish_task(tool, run, task, cancellation, slot).await;
                    let bytes = match &result {
                        Ok(result) => serde_json::to_string(result).map_or(0, |t| t.len()),
                        Err(_) => 0,
                    };
                    kept.finished(bytes);
                    result
                })
            };
        if support != TaskSupport::OnDetach {
            return Ok(manager.spawn(options, |context| task(run(), context)));
        }
        let mut running = run();
        let detached = std::pin::pin!(async move { wish.await.is_ok() });
        let ended = std::pin::pin!(request.cancelled());
        let either = futures_util::future::select(detached, ended);
        match futures_util::future::select(&mut running, either).await {
            futures_util::future::Either::Left((joined, _)) => Err(joined_outcome(joined)),
            futures_util::future::Either::Right((
                futures_util::future::Either::Left((true, _)),
                _,
            )) => Ok(manager.spawn(options, |context| task(running, context))),
            futures_util::future::Either::Right(_) => {
                // The request was cancelled (the tool is told, as any call's tool is), or the
                // tool can no longer ask: wait for its end.
                if request.is_cancelled() {
                    stop.cancel();
                }
                Err(joined_outcome(running.await))
            }
        }
    }
}

/// A spawned call's outcome; a call that did not end (aborted) as an internal error.
fn joined_outcome(
    joined: Result<crate::outcome::ToolOutcome, tokio::task::JoinError>,
) -> crate::outcome::ToolOutcome {
    joined.unwrap_or_else(|err| {
        crate::outcome::ToolOutcome::Error(crate::error::ToolError::internal(format_args!(
            "the call stopped: {err}"
        )))
    })
}

/// A task's end: the tool's outcome as a `tools/call` result (an error the tool returns is a
/// completed task whose result is an error); a fault of the server (the tool panicked, or is
/// no longer offered) as a failed task with a JSON-RPC error; a cancellation as a cancelled
/// task once the tool has wound down (or its grace ran out).
async fn finish_task(
    tool: Arc<dyn crate::tool::Tool>,
    mut running: tokio_util::task::AbortOnDropHandle<crate::outcome::ToolOutcome>,
    task: rmcp::task_manager::TaskContext,
    cancellation: CancellationToken,
    slot: tokio::sync::OwnedSemaphorePermit,
) -> Result<CallToolResult, rmcp::task_manager::TaskExit> {
    let _slot = slot;
    let cancelled = std::pin::pin!(task.cancelled());
    let joined = match futures_util::future::select(&mut running, cancelled).await {
        futures_util::future::Either::Left((joined, _)) => joined,
        futures_util::future::Either::Right(((), _)) => {
            cancellation.cancel();
            match tokio::time::timeout(tasks::CANCEL_GRACE, &mut running).await {
                Ok(Ok(outcome)) if outcome.is_success() => Ok(outcome),
                // Dropping `running` stops the tool.
                _ => return Err(rmcp::task_manager::TaskExit::Cancelled),
            }
        }
    };
    let outcome = joined_outcome(joined);
    if let Some(err) = outcome.error()
        && (err.is_panic() || err.code() == crate::error::ErrorCode::UnknownTool)
    {
        let mut data = json!({"code": err.code().as_str()});
        if let Some(trace_id) = err.trace_id() {
            data["traceId"] = Value::String(trace_id.to_owned());
        }
        return Err(rmcp::task_manager::TaskExit::Error(
            ErrorData::internal_error(err.message().to_owned(), Some(data)),
        ));
    }
    let definition = tool.definition();
    Ok(complete(definition.name(), definition, &outcome))
}

/// The `tools/call` result of a finished call of the tool `name`.
fn complete(
    name: &str,
    definition: &crate::definition::ToolDefinition,
    outcome: &crate::outcome::ToolOutcome,
) -> CallToolResult {
    if crate::output::is_content_tool(definition) && outcome.is_success() {
        // Rich content: its parts are MCP content blocks already.
        let call = crate::provider::ToolCall {
            id: None,
            name: name.to_owned(),
            arguments: Value::Null,
        };
        let encoded =
            crate::provider::encode_result(Dialect::Mcp, &call, outcome, Some(definition));
        let content: Vec<ContentBlock> = encoded["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|block| serde_json::from_value(block.clone()).ok())
            .collect();
        return CallToolResult::success(content);
    }
    let parts = CallResult::new(outcome, Some(definition));
    let mut content = vec![ContentBlock::text(parts.text)];
    if let Some(notes) = parts.notes {
        content.push(ContentBlock::text(notes));
    }
    if let Some((uri, bytes, summary)) = parts.link {
        content.push(ContentBlock::resource_link(
            rmcp::model::Resource::new(uri, format!("result of {name}"))
                .with_description(summary)
                .with_mime_type("application/json")
                .with_size(u64::try_from(bytes).unwrap_or(u64::MAX)),
        ));
    }
    let mut result = if parts.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    result.structured_content = parts.structured;
    result.meta = parts.meta.map(rmcp::model::MetaObject);
    result
}

/// Marks the parameter `param` of `tool` with `x-mcp-header: header` (SEP-2243), when it
/// may carry one.
fn add_param_header(tool: &mut McpTool, param: &str, header: &str) -> Result<(), String> {
    const TCHAR: &str = "!#$%&'*+-.^_`|~";
    if header.is_empty()
        || !header
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || TCHAR.contains(c))
    {
        return Err("the header is not an HTTP token (RFC 9110)".to_owned());
    }
    let mut schema = (*tool.input_schema).clone();
    let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) else {
        return Err("the tool has no parameters".to_owned());
    };
    let taken = properties.values().any(|p| {
        p.get("x-mcp-header")
            .and_then(Value::as_str)
            .is_some_and(|h| h.eq_ignore_ascii_case(header))
    });
    if taken {
        return Err("the tool already uses this header".to_owned());
    }
    let Some(property) = properties.get_mut(param).and_then(Value::as_object_mut) else {
        return Err("the tool has no such parameter".to_owned());
    };
    let primitive = match property.get("type") {
        Some(Value::String(t)) => ["string", "integer", "boolean"].contains(&t.as_str()),
        _ => false,
    };
    if !primitive {
        return Err("only a string, integer or boolean parameter can be a header".to_owned());
    }
    property.insert("x-mcp-header".to_owned(), Value::String(header.to_owned()));
    tool.input_schema = Arc::new(schema);
    Ok(())
}

/// Whether the request was made on MCP 2026-07-28 or later (revisions are dates, so they
/// compare as text).
fn at_least_2026_07_28(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// The answer to a request for a method the server does not offer.
fn not_offered(method: &str) -> ErrorData {
    ErrorData::new(
        rmcp::model::ErrorCode::METHOD_NOT_FOUND,
        format!("method not found: {method}"),
        None,
    )
}

/// rmcp's sealing of request state, with a 32-byte key (its minimum length).
fn state_codec(key: [u8; 32]) -> Arc<rmcp::model::RequestStateCodec> {
    Arc::new(
        rmcp::model::RequestStateCodec::try_new(key.to_vec())
            .unwrap_or_else(|_| rmcp::model::RequestStateCodec::new_unchecked(key.to_vec())),
    )
}

/// What a call on MCP 2026-07-28 carries from one round to the next, sealed (rmcp's
/// `RequestStateCodec`: authenticated, so a changed state is refused, and bound to the caller,
/// the tool and the call's canonical arguments, with an expiry): the tool, what the server
/// asked, the answers so far, and a nonce that makes the state good for one round.
#[derive(serde::Serialize, serde::Deserialize)]
struct SealedState {
    tool: String,
    /// The keys of the input requests this round asked.
    asked: Vec<String>,
    nonce: String,
    answers: std::collections::BTreeMap<String, Value>,
}

/// At most this many answered rounds are remembered at once (each until its state expires);
/// past it, a state is refused as used, and the caller starts over.
const MAX_USED_STATES: usize = 100_000;

/// How long a round's state can be answered with.
const STATE_TTL: std::time::Duration = std::time::Duration::from_secs(600);

/// What a round's sealed state is bound to (its associated data): the principal, the tool and
/// the call's canonical arguments (as the toolbox reads them, so that a call sent in another
/// dialect still matches), each length-prefixed.
fn state_binding(
    principal: Option<&str>,
    tool: &str,
    definition: &crate::definition::ToolDefinition,
    arguments: &Value,
) -> String {
    let canonical = definition
        .canonical_arguments(arguments)
        .unwrap_or_else(|_| arguments.clone());
    let arguments = crate::json::canonical::canonical_json(&canonical);
    let principal = principal.unwrap_or("");
    format!(
        "toolsmith/round/v1\n{}:{principal}\n{}:{tool}\n{}:{arguments}",
        principal.len(),
        tool.len(),
        arguments.len()
    )
}

/// How long a person has to answer an approval form.
const APPROVAL_WAIT: std::time::Duration = std::time::Duration::from_secs(600);

/// Asks the client's user to approve a call, through elicitation.
struct Elicit {
    peer: rmcp::Peer<RoleServer>,
}

/// The approval form: one checkbox.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct ApprovalForm {
    /// Check to let this call run.
    approve: bool,
}

rmcp::elicit_safe!(ApprovalForm);

impl ApprovalPrompt for Elicit {
    fn ask<'a>(
        &'a self,
        request: &'a ApprovalRequest<'a>,
    ) -> crate::tool::BoxFuture<'a, Option<ApprovalDecision>> {
        Box::pin(async move {
            let def = request.definition;
            let arguments = request.redacted_arguments().to_string();
            let arguments = crate::echo::echo(&arguments);
            let what = def.title().unwrap_or_else(|| def.name());
            let message = format!(
                "The assistant wants to run \"{what}\" (`{}`), which needs your approval: {}\nArguments: {arguments}",
                def.name(),
                def.description()
            );
            let answer = self
                .peer
                .elicit_with_timeout::<ApprovalForm>(message, Some(APPROVAL_WAIT))
                .await;
            match answer {
                Ok(Some(ApprovalForm { approve: true })) => Some(ApprovalDecision::Approved),
                Ok(Some(ApprovalForm { approve: false })) | Err(ElicitationError::UserDeclined) => {
                    Some(ApprovalDecision::Denied("the user declined it".into()))
                }
                Err(ElicitationError::UserCancelled) => Some(ApprovalDecision::Denied(
                    "the user dismissed the approval request".into(),
                )),
                Ok(None) | Err(_) => {
                    tracing::debug!(
                        tool = def.name(),
                        "the client could not be asked for approval"
                    );
                    None
                }
            }
        })
    }
}

/// The limits on one message: the largest of the tools' (and the toolbox's) limits, with
/// room for the JSON-RPC envelope around the arguments.
fn message_limits(tools: &[InputLimits]) -> InputLimits {
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

/// The MCP request a tool runs for, in its context: `ctx.get::<McpRequest>()`.
///
/// ```
/// use toolsmith::{ToolContext, ToolError};
/// use toolsmith::mcp::McpRequest;
///
/// fn client_of(ctx: &ToolContext) -> Result<String, ToolError> {
///     let request = ctx.get::<McpRequest>().ok_or_else(|| ToolError::not_found("Not called over MCP."))?;
///     Ok(request.client_name().unwrap_or("unknown").to_owned())
/// }
/// # assert!(client_of(&ToolContext::new()).is_err());
/// ```
#[derive(Clone, Debug)]
pub struct McpRequest {
    id: String,
    tool: Option<String>,
    meta: Map<String, Value>,
    client: Option<Implementation>,
    protocol_version: Option<String>,
    headers: Option<http::HeaderMap>,
}

impl McpRequest {
    fn new(context: &RequestContext<RoleServer>, tool: Option<&str>) -> Self {
        Self {
            id: context.id.to_string(),
            tool: tool.map(str::to_owned),
            meta: context.meta.0.0.clone(),
            client: context.client_info(),
            protocol_version: context.protocol_version().map(|v| v.as_str().to_owned()),
            headers: context
                .extensions
                .get::<http::request::Parts>()
                .map(|parts| parts.headers.clone()),
        }
    }

    /// The JSON-RPC request id, as text (also the context's call id).
    #[must_use]
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The tool called (`None` for `tools/list`).
    #[must_use]
    pub fn tool(&self) -> Option<&str> {
        self.tool.as_deref()
    }

    /// The request's `_meta` object (empty when absent).
    #[must_use]
    pub fn meta(&self) -> &Map<String, Value> {
        &self.meta
    }

    /// The client's name from `initialize` (`clientInfo.name`).
    #[must_use]
    pub fn client_name(&self) -> Option<&str> {
        self.client.as_ref().map(|c| c.name.as_str())
    }

    /// The client's version from `initialize` (`clientInfo.version`).
    #[must_use]
    pub fn client_version(&self) -> Option<&str> {
        self.client.as_ref().map(|c| c.version.as_str())
    }

    /// The protocol revision negotiated.
    #[must_use]
    pub fn protocol_version(&self) -> Option<&str> {
        self.protocol_version.as_deref()
    }

    /// An HTTP request header (`None` on stdio).
    #[must_use]
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.as_ref()?.get(name)?.to_str().ok()
    }

    /// The W3C trace id of `_meta.traceparent` (`00-<trace id>-<span id>-<flags>`).
    fn trace_id(&self) -> Option<&str> {
        let traceparent = self.meta.get("traceparent")?.as_str()?;
        let trace_id = traceparent.split('-').nth(1)?;
        (trace_id.len() == 32 && trace_id.bytes().all(|b| b.is_ascii_hexdigit()))
            .then_some(trace_id)
    }
}

/// A running streamable HTTP endpoint (see [`McpServer::bind_http`]).
#[derive(Debug)]
pub struct HttpServer {
    addr: SocketAddr,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl HttpServer {
    /// The address bound.
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The endpoint's URL, `http://{addr}/mcp`.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let server = toolsmith::mcp::McpServer::new(toolsmith::Toolbox::new());
    /// let http = server.bind_local_http(0).await.unwrap();
    /// assert_eq!(http.url(), format!("http://127.0.0.1:{}/mcp", http.local_addr().port()));
    /// http.shutdown().await.unwrap();
    /// # });
    /// ```
    #[must_use]
    pub fn url(&self) -> String {
        format!("http://{}{HTTP_PATH}", self.addr)
    }

    /// Stops accepting connections, ends the sessions and waits for the server to finish.
    ///
    /// # Errors
    ///
    /// When the server failed while running.
    pub async fn shutdown(self) -> std::io::Result<()> {
        self.shutdown.cancel();
        self.wait().await
    }

    /// Serves until the server fails; it otherwise runs until [`shutdown`](Self::shutdown).
    ///
    /// # Errors
    ///
    /// When the server failed while running.
    pub async fn wait(self) -> std::io::Result<()> {
        match self.task.await {
            Ok(result) => result,
            Err(join) => Err(std::io::Error::other(join)),
        }
    }
}

/// Why serving a connection failed.
#[derive(Debug)]
pub struct ServeError(Box<dyn std::error::Error + Send + Sync>);

impl ServeError {
    fn new(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self(Box::new(error))
    }
}

impl fmt::Display for ServeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the MCP connection failed: {}", self.0)
    }
}

impl std::error::Error for ServeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.0)
    }
}

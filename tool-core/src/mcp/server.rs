//! The server's settings: the [`McpServer`] type, what it is built from, and the builders that set
//! it up.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use rmcp::model::{Implementation, Tool as McpTool};
use rmcp::service::RoleServer;
use serde_json::Value;

use super::options::{
    DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_SESSIONS, DEFAULT_PAGE_SIZE, DEFAULT_SESSION_IDLE,
    DEFAULT_SESSION_WORKER_IDLE, HttpOptions, ServerLimits, message_limits, tool_limits,
};
use super::request::McpRequest;
use super::rounds::state_codec;
use super::tasks::TaskSupport;
use super::{caller, delegate, stdio, tasks};
use crate::context::ToolContext;
use crate::limits::InputLimits;
use crate::provider::Dialect;
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

pub(super) type ContextHook = dyn Fn(ToolContext, &McpRequest) -> ToolContext + Send + Sync;

/// An MCP server for one toolbox.
///
/// Cheap to clone: clones share the toolbox and the list of connected clients. Build one,
/// then serve it with [`serve_stdio`](Self::serve_stdio), [`bind_http`](Self::bind_http) or,
/// since it is an [`rmcp::ServerHandler`], any rmcp transport.
#[derive(Clone)]
pub struct McpServer {
    pub(super) config: Arc<Config>,
    pub(super) peers: Arc<Peers>,
    /// What the connected client chose (its log level); one per connection.
    pub(super) session: Arc<caller::Session>,
    /// Seals the state a call carries between rounds on MCP 2026-07-28.
    pub(super) state_codec: Arc<rmcp::model::RequestStateCodec>,
}

#[derive(Clone)]
pub(super) struct Config {
    pub(super) toolbox: Toolbox,
    /// The resource server's check of every HTTP request's token, when set.
    #[cfg(feature = "mcp-auth")]
    pub(super) gate: Option<Arc<super::auth::gate::Gate>>,
    /// Each tool as MCP lists it, by name, converted once.
    pub(super) tools: HashMap<Arc<str>, McpTool>,
    pub(super) implementation: Implementation,
    pub(super) instructions: Option<String>,
    pub(super) page_size: usize,
    pub(super) allowed_hosts: Vec<String>,
    pub(super) allowed_origins: Vec<String>,
    pub(super) context: Option<Arc<ContextHook>>,
    /// Resources, prompts and completions from a handler written with rmcp.
    pub(super) delegate: Option<Arc<dyn delegate::Delegate>>,
    /// The limits on one message: what the tools' own limits allow, plus the envelope.
    pub(super) message_limits: InputLimits,
    pub(super) max_sessions: usize,
    pub(super) session_idle: std::time::Duration,
    pub(super) session_worker_idle: std::time::Duration,
    /// Whether HTTP requests of MCP 2025-11-25 are served without sessions too.
    pub(super) stateless_http: bool,
    /// Which run a call belongs to.
    pub(super) runs: RunScope,
    /// The tools that run as tasks, and the tasks themselves.
    pub(super) tasks: tasks::Tasks,
    /// The rounds' states already answered (by their nonce), until they expire.
    pub(super) used_states:
        Arc<std::sync::Mutex<std::collections::HashMap<String, std::time::Instant>>>,
}

/// The connected clients that get `notifications/tools/list_changed`.
#[derive(Default)]
pub(super) struct Peers {
    pub(super) peers: Mutex<Vec<rmcp::Peer<RoleServer>>>,
    pub(super) watching: std::sync::OnceLock<()>,
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

/// The toolbox's long-running tools (`#[tool(long_running)]`) as task tools a client may take
/// as tasks ([`TaskSupport::Optional`]); `with_task_tool` overrides each.
fn long_running_tasks(toolbox: &Toolbox) -> tasks::Tasks {
    let mut tasks = tasks::Tasks::default();
    for def in toolbox.definitions().filter(|def| def.long_running()) {
        tasks.tools.insert(def.name().into(), TaskSupport::Optional);
    }
    tasks
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
        let toolbox_limits = tool_limits(&toolbox);
        let tasks = long_running_tasks(&toolbox);
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
        // A stranger's calls must not queue without end: the toolbox's own bound, or this.
        let toolbox = if toolbox.bounds_in_flight() {
            toolbox
        } else {
            toolbox.bounded_in_flight(DEFAULT_MAX_IN_FLIGHT)
        };
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
                session_worker_idle: DEFAULT_SESSION_WORKER_IDLE,
                stateless_http: false,
                #[cfg(feature = "mcp-auth")]
                gate: None,
                runs: RunScope::default(),
                tasks,
                used_states: Arc::default(),
            }),
            peers: Arc::default(),
            session: Arc::default(),
            state_codec: state_codec(crate::keys::random_key()),
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
        crate::keys::check_secret("McpServer::with_state_key", secret.as_ref());
        self.state_codec = state_codec(crate::keys::key_from_secret(secret.as_ref()));
        self
    }

    /// Runs the tool `name` as an MCP task when the client takes tasks (the
    /// `io.modelcontextprotocol/tasks` extension of MCP 2026-07-28), as `support` says: the
    /// client gets the task's id at once, polls `tasks/get` for its status and result, answers
    /// what the tool asks with `tasks/update`, and may cancel it with `tasks/cancel` (the tool's
    /// cancellation token fires; a tool still running a second later is dropped). A task's
    /// call holds one of the server's in-flight slots while it runs
    /// ([`ServerLimits::max_in_flight`]); a task and its result are kept for
    /// [`ServerLimits::task_ttl`] from its start.
    ///
    /// A task started with a principal (see [`with_context`](Self::with_context)) is that
    /// principal's: another principal's `tasks/get`, `tasks/update` or `tasks/cancel` is
    /// answered as for an unknown task. One started without a principal is open to whoever
    /// holds its id, a random UUID.
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

    /// How the server serves streamable HTTP: the hosts and origins it answers, its
    /// sessions, and whether 2025-11-25 requests are served without sessions too, as one
    /// [`HttpOptions`] value.
    ///
    /// ```
    /// use toolsmith::mcp::{HttpOptions, McpServer};
    /// let server = McpServer::new(toolsmith::Toolbox::new())
    ///     .with_http(HttpOptions {
    ///         allowed_hosts: vec!["tools.example.com".into()],
    ///         stateless: true,
    ///         ..HttpOptions::default()
    ///     })
    ///     .with_state_key("a secret of at least 32 random bytes, shared by the fleet");
    /// # let _ = server;
    /// ```
    #[must_use]
    pub fn with_http(self, http: HttpOptions) -> Self {
        self.edit(|c| {
            c.allowed_hosts = http.allowed_hosts;
            c.allowed_origins = http.allowed_origins;
            c.max_sessions = http.max_sessions.max(1);
            c.session_idle = http.session_idle_timeout;
            c.session_worker_idle = http.session_worker_idle;
            c.stateless_http = http.stateless;
        })
    }

    /// The server's limits: message size, calls at once, tools per page and how long tasks
    /// are kept, as one [`ServerLimits`] value.
    ///
    /// ```
    /// use toolsmith::mcp::{McpServer, ServerLimits};
    /// let server = McpServer::new(toolsmith::Toolbox::new()).with_limits(ServerLimits {
    ///     max_in_flight: 8,
    ///     ..ServerLimits::default()
    /// });
    /// # let _ = server;
    /// ```
    #[must_use]
    pub fn with_limits(self, limits: ServerLimits) -> Self {
        let calls = limits.max_in_flight.max(1);
        self.edit(|c| {
            c.message_limits.max_bytes = match limits.max_message_bytes {
                Some(bytes) => bytes.max(1024),
                None => message_limits(&tool_limits(&c.toolbox)).max_bytes,
            };
            c.toolbox = c.toolbox.clone().bounded_in_flight(calls);
            c.page_size = limits.page_size.max(1);
            c.tasks.ttl = limits.task_ttl.max(std::time::Duration::from_millis(1));
        })
    }

    /// This server for a new connection: the same tools and clients, a session of its own.
    pub(super) fn for_session(&self) -> Self {
        self.for_session_with(Arc::default())
    }

    /// This server for a connection whose client's choices are `session`'s (a session woken
    /// from rest).
    pub(super) fn for_session_with(&self, session: Arc<caller::Session>) -> Self {
        Self {
            config: Arc::clone(&self.config),
            peers: Arc::clone(&self.peers),
            session,
            state_codec: Arc::clone(&self.state_codec),
        }
    }

    pub(super) fn edit(mut self, f: impl FnOnce(&mut Config)) -> Self {
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

    /// Makes the server over HTTP an OAuth resource server ([`Authorization`](super::Authorization)):
    /// it serves its RFC 9728 metadata, answers a request without a valid bearer token 401
    /// and a call whose token lacks a tool's scopes 403, and gives every call the token's
    /// grant (its subject as the principal). stdio is not affected.
    ///
    /// ```
    /// use toolsmith::mcp::{Authorization, JwtVerifier, McpServer};
    /// let resource = "http://127.0.0.1:8000/mcp";
    /// let server = McpServer::new(toolsmith::Toolbox::new()).with_authorization(
    ///     Authorization::new(resource, JwtVerifier::new("http://127.0.0.1:9000", resource))
    ///         .with_authorization_server("http://127.0.0.1:9000"),
    /// )?;
    /// # let _ = server;
    /// # Ok::<(), toolsmith::mcp::ScopeError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`ScopeError`](super::ScopeError) when a tool asks for a scope the server does not
    /// list in `scopes_supported` (no client could get it), or a read-only tool asks for a
    /// scope the server's rule names as a write scope
    /// ([`Authorization::with_write_scopes`](super::Authorization::with_write_scopes)).
    #[cfg(feature = "mcp-auth")]
    pub fn with_authorization(
        self,
        authorization: super::Authorization,
    ) -> Result<Self, super::ScopeError> {
        authorization.check_tools(&self.config.toolbox)?;
        let gate = Arc::new(super::auth::gate::Gate::new(
            authorization,
            &self.config.toolbox,
        ));
        Ok(self.edit(|c| c.gate = Some(gate)))
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
}

/// Marks the parameter `param` of `tool` with `x-mcp-header: header` (SEP-2243), when it
/// may carry one.
pub(super) fn add_param_header(
    tool: &mut McpTool,
    param: &str,
    header: &str,
) -> Result<(), String> {
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

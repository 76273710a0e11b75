//! An MCP server's tools as a toolset (feature `mcp-client`), through rmcp's client.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::arguments::Arguments;
use crate::context::ToolContext;
use crate::definition::ToolDefinition;
use crate::error::{ErrorCode, ToolError};
use crate::outcome::ToolOutcome;
use crate::spec::{Annotations, Effect};
use crate::tool::{BoxFuture, Tool};

use super::connect::McpClientOptions;
use super::names::{fit_name, valid_name};
use super::set::Toolset;
use super::token::{Client, Failed, Link, TokenSource, challenge_of};

/// Why an MCP server's tools could not be reached.
#[derive(Debug)]
#[non_exhaustive]
pub enum McpClientError {
    /// The server could not be started or connected to.
    Connect(String),
    /// The server did not answer a request as MCP says.
    Protocol(String),
    /// A tool the server listed cannot be offered (its name or schema).
    Tool {
        /// The tool's name, as the server gave it (cut short).
        name: String,
        /// Why.
        problem: String,
    },
    /// The server's tool list cannot be offered as it is: each problem names its tools
    /// (names listed twice, names a provider spells alike, names too long, descriptions
    /// that try to steer the model).
    Listing {
        /// Each problem, naming its tools.
        problems: Vec<String>,
    },
    /// The server did not answer within the toolset's timeout.
    Timeout(Duration),
}

impl fmt::Display for McpClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Connect(why) => write!(f, "the MCP server cannot be reached: {why}"),
            Self::Protocol(why) => write!(f, "the MCP server answered out of protocol: {why}"),
            Self::Tool { name, problem } => {
                write!(
                    f,
                    "the MCP server's tool `{name}` cannot be offered: {problem}"
                )
            }
            Self::Listing { problems } => write!(
                f,
                "the MCP server's tool list cannot be offered: {}",
                problems.join("; ")
            ),
            Self::Timeout(limit) => write!(
                f,
                "the MCP server did not answer within {} s",
                limit.as_secs_f64()
            ),
        }
    }
}

impl std::error::Error for McpClientError {}

impl From<Failed> for McpClientError {
    fn from(failed: Failed) -> Self {
        match failed {
            Failed::Connect(why) => Self::Connect(why),
            Failed::Timeout(limit) => Self::Timeout(limit),
        }
    }
}

/// What changed in a server's tool list since the listing the proxies were made from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListingChanges {
    /// Tools whose description, schema or annotations changed: their proxies refuse calls
    /// until [`McpToolset::tools`] is asked again (and the new definition reviewed).
    pub changed: Vec<String>,
    /// Tools that appeared.
    pub added: Vec<String>,
    /// Tools that are gone.
    pub removed: Vec<String>,
}

impl ListingChanges {
    /// Whether nothing changed.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.changed.is_empty() && self.added.is_empty() && self.removed.is_empty()
    }
}

/// The tools of one MCP server, over stdio or streamable HTTP, as a [`Toolset`] of proxies.
///
/// Each proxy's schema is the server's, and every call is **validated locally** against it
/// before anything is sent: a model's invalid call never reaches the server. The proxies'
/// definitions are **pinned** to the listing they were made from: [`refresh`](Self::refresh)
/// lists again and reports what changed, and the proxy of a tool whose definition changed
/// refuses calls until the application asks for [`tools`](Self::tools) again (a server that
/// silently changes what a tool does, after it was reviewed, is a known attack).
///
/// **A remote server is untrusted by default.** The MCP specification says clients must
/// treat a tool's annotations as untrusted unless they come from a trusted server, so a
/// tool's effect is `destructive` (its calls wait for a person's approval) unless the
/// application declares it read-only ([`with_read_only`](Self::with_read_only)) or marks
/// the server trusted ([`trusted`](Self::trusted)), when its annotations are believed:
/// `readOnlyHint` is `read`, `destructiveHint: false` is `write`, anything else
/// `destructive`. [`with_default_effect`](Self::with_default_effect) sets the effect of the
/// rest. The server's descriptions (the tool's, its title, its parameters') go through the
/// output checks before a model sees them (text that tries to steer a model is rewritten),
/// and a tool whose description still fails the `description_injection` lint is refused. A
/// listing with a name twice, names a provider spells alike, or names a toolbox cannot
/// offer is an error naming the tools, never a panic later. Every request to the server has
/// a timeout (60 s by default, as the official SDKs; [`with_timeout`](Self::with_timeout)).
/// Results are external data: they go through the toolbox's output checks like any tool's.
///
/// ```no_run
/// use toolsmith::toolset::McpToolset;
/// use toolsmith::Toolbox;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let mut command = tokio::process::Command::new("my-mcp-server");
/// command.arg("--stdio");
/// let files = McpToolset::stdio("files", command).await?.with_prefix("files");
/// let toolbox = Toolbox::new().with_toolset(files.tools().await?);
/// # let _ = toolbox; Ok(()) }
/// ```
pub struct McpToolset {
    name: Arc<str>,
    link: Arc<Link>,
    prefix: Option<String>,
    default_effect: Effect,
    /// Whether the server's annotations are believed.
    trusted: bool,
    /// The tools the application declares read-only, by their names on the server.
    read_only: BTreeSet<String>,
    /// How long a request may wait for the server.
    timeout: Duration,
    /// The fingerprint of each tool's definition at the last listing proxies were made from,
    /// and the tools found changed since.
    pinned: Arc<Mutex<Pinned>>,
}

#[derive(Default)]
struct Pinned {
    fingerprints: BTreeMap<String, String>,
    changed: Vec<String>,
}

impl McpToolset {
    /// The server `command` starts, spoken to over its stdin and stdout; `name` is what
    /// messages call the set.
    ///
    /// # Errors
    ///
    /// [`McpClientError::Connect`] when the command cannot start or the server does not
    /// initialize.
    pub async fn stdio(
        name: impl Into<Arc<str>>,
        command: tokio::process::Command,
    ) -> Result<Self, McpClientError> {
        let transport = rmcp::transport::TokioChildProcess::new(command)
            .map_err(|err| McpClientError::Connect(err.to_string()))?;
        let serving = super::answering::Answering::default().serve(transport);
        let client = tokio::time::timeout(DEFAULT_TIMEOUT, serving)
            .await
            .map_err(|_| McpClientError::Timeout(DEFAULT_TIMEOUT))?
            .map_err(|err| McpClientError::Connect(err.to_string()))?;
        Ok(Self::from_client(name, client))
    }

    /// The server at `url`, over streamable HTTP (`http://`; for `https://`, enable a TLS
    /// feature of `reqwest` in your own manifest), with MCP's `initialize` lifecycle and no
    /// token: [`http_with`](Self::http_with) with the default options.
    ///
    /// # Errors
    ///
    /// [`McpClientError::Connect`] when the server cannot be reached or does not initialize.
    pub async fn http(name: impl Into<Arc<str>>, url: &str) -> Result<Self, McpClientError> {
        Self::http_with(name, url, McpClientOptions::default()).await
    }

    /// The server at `url`, over streamable HTTP, with an access token from `source` (see
    /// [`TokenSource`]). A server that answers 401 (the token expired) or 403
    /// `insufficient_scope` (a tool needs more scopes) gets one new token (the scopes asked
    /// before and those it names) and the request once more; never in a loop. The source is
    /// told the server's URL, so that a token is asked for the server it is sent to.
    ///
    /// ```no_run
    /// use toolsmith::toolset::{ClientCredentials, McpToolset};
    ///
    /// # async fn run() -> Result<(), toolsmith::toolset::McpClientError> {
    /// let signed_in = ClientCredentials::new("http://127.0.0.1:9000/token", "desk-bot", "its secret")
    ///     .with_scopes(["tickets:read"]);
    /// let tickets = McpToolset::http_signed_in("tickets", "http://127.0.0.1:8000/mcp", signed_in).await?;
    /// # let _ = tickets.tools().await?; Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`McpClientError::Connect`] when no token could be had, or the server cannot be
    /// reached or does not initialize.
    pub async fn http_signed_in(
        name: impl Into<Arc<str>>,
        url: &str,
        source: impl TokenSource,
    ) -> Result<Self, McpClientError> {
        Self::http_with(name, url, McpClientOptions::default().with_sign_in(source)).await
    }

    /// The server at `url`, over streamable HTTP, as `options` say: the lifecycle (MCP
    /// 2026-07-28's `server/discover` or the `initialize` handshake), the token source, and
    /// the [`Caller`](crate::caller::Caller) that answers the server's elicitation forms.
    ///
    /// ```no_run
    /// use toolsmith::toolset::{Lifecycle, McpClientOptions, McpToolset};
    ///
    /// # async fn run() -> Result<(), toolsmith::toolset::McpClientError> {
    /// let options = McpClientOptions::default().with_lifecycle(Lifecycle::Auto);
    /// let remote = McpToolset::http_with("remote", "http://127.0.0.1:8000/mcp", options).await?;
    /// # let _ = remote.tools().await?; Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`McpClientError::Connect`] when no token could be had, or the server cannot be
    /// reached or does not answer the lifecycle's first request.
    pub async fn http_with(
        name: impl Into<Arc<str>>,
        url: &str,
        options: McpClientOptions,
    ) -> Result<Self, McpClientError> {
        let answering = super::answering::Answering {
            caller: options.caller,
        };
        let link = Link::http(
            url,
            options.sign_in,
            options.lifecycle.mode(),
            answering,
            DEFAULT_TIMEOUT,
        )
        .await?;
        Ok(Self::from_link(name, link))
    }

    fn from_client(name: impl Into<Arc<str>>, client: Client) -> Self {
        Self::from_link(name, Link::fixed(client))
    }

    fn from_link(name: impl Into<Arc<str>>, link: Link) -> Self {
        Self {
            name: name.into(),
            link: Arc::new(link),
            prefix: None,
            default_effect: Effect::Destructive,
            trusted: false,
            read_only: BTreeSet::new(),
            timeout: DEFAULT_TIMEOUT,
            pinned: Arc::default(),
        }
    }

    /// Believes the server's annotations (`readOnlyHint`, `destructiveHint`,
    /// `idempotentHint`, `openWorldHint`): for a server you run or otherwise trust. A
    /// tool's effect then follows its hints.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use toolsmith::toolset::McpToolset;
    ///
    /// # async fn run() -> Result<(), toolsmith::toolset::McpClientError> {
    /// // Our own server: its annotations are believed.
    /// let ours = McpToolset::http("ours", "http://127.0.0.1:8080/mcp").await?.trusted();
    /// // Someone else's: every tool waits for approval but the two we know only read.
    /// let theirs = McpToolset::http("theirs", "http://127.0.0.1:9090/mcp")
    ///     .await?
    ///     .with_read_only(["search", "fetch_page"])
    ///     .with_timeout(Duration::from_secs(20));
    /// # let _ = (ours.tools().await?, theirs.tools().await?); Ok(()) }
    /// ```
    #[must_use]
    pub fn trusted(mut self) -> Self {
        self.trusted = true;
        self
    }

    /// Declares the tools named (as the server names them) read-only: their calls run
    /// without approval, whatever the server's annotations say.
    #[must_use]
    pub fn with_read_only<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.read_only.extend(names.into_iter().map(Into::into));
        self
    }

    /// How long a request (a listing, a call) may wait for the server: 60 s by default.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Names the proxies `{prefix}_{tool}` (shortened with a stable hash past 64
    /// characters). Unlike [`Toolset::prefixed`], this is the proxies' own name, so two
    /// servers that both have a `search` give two tools of this process.
    #[must_use]
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Some(prefix.into());
        self
    }

    /// The effect of a tool the application did not declare read-only and (on a trusted
    /// server) whose annotations say neither `readOnlyHint` nor `destructiveHint: false`: by
    /// default `destructive`, as MCP presumes, so its calls wait for approval.
    #[must_use]
    pub fn with_default_effect(mut self, effect: Effect) -> Self {
        self.default_effect = effect;
        self
    }

    /// Lists the server's tools (every page) and makes a proxy of each, pinned to this
    /// listing.
    ///
    /// # Errors
    ///
    /// [`McpClientError`] when the server does not answer, or lists a tool whose name or
    /// schema cannot be offered.
    pub async fn tools(&self) -> Result<Toolset, McpClientError> {
        let listed = self.list().await?;
        let mut set = Toolset::new(Arc::clone(&self.name));
        let mut fingerprints = BTreeMap::new();
        let mut problems = Vec::new();
        let mut names: BTreeMap<String, String> = BTreeMap::new();
        // What a toolbox would refuse (names a provider spells alike, names too long) is
        // refused here, naming the tools, rather than at `with_toolset`.
        let mut table = super::names::NameTable::default();
        let origin = Arc::clone(&self.name);
        for tool in listed {
            let proxy = match self.proxy(&tool) {
                Ok(proxy) => proxy,
                Err(McpClientError::Tool { name, problem }) => {
                    problems.push(format!("`{name}`: {problem}"));
                    continue;
                }
                Err(other) => return Err(other),
            };
            let shown = proxy.definition.name().to_owned();
            if let Some(first) = names.insert(shown.clone(), proxy.remote.clone()) {
                problems.push(format!(
                    "`{}` and `{}` are both offered as `{}`",
                    crate::echo::echo(&first),
                    crate::echo::echo(&proxy.remote),
                    crate::echo::echo(&shown)
                ));
                continue;
            }
            if let Err(err) = table.insert(&proxy.definition, &shown, &origin) {
                problems.push(err.to_string());
                continue;
            }
            fingerprints.insert(proxy.remote.clone(), fingerprint(&tool));
            set = set.with(proxy);
        }
        if !problems.is_empty() {
            return Err(McpClientError::Listing { problems });
        }
        let mut pinned = self.pinned.lock().unwrap_or_else(PoisonError::into_inner);
        pinned.fingerprints = fingerprints;
        pinned.changed.clear();
        Ok(set)
    }

    /// Lists the server's tools again and says what changed since the proxies were made; the
    /// proxies of changed tools refuse calls from now on.
    ///
    /// # Errors
    ///
    /// [`McpClientError`] when the server does not answer.
    pub async fn refresh(&self) -> Result<ListingChanges, McpClientError> {
        let listed = self.list().await?;
        let now: BTreeMap<String, String> = listed
            .iter()
            .filter_map(|tool| Some((tool.get("name")?.as_str()?.to_owned(), fingerprint(tool))))
            .collect();
        let mut pinned = self.pinned.lock().unwrap_or_else(PoisonError::into_inner);
        let mut changes = ListingChanges::default();
        for (name, print) in &pinned.fingerprints {
            match now.get(name) {
                Some(new) if new != print => changes.changed.push(name.clone()),
                Some(_) => {}
                None => changes.removed.push(name.clone()),
            }
        }
        changes.added = now
            .keys()
            .filter(|name| !pinned.fingerprints.contains_key(*name))
            .cloned()
            .collect();
        for name in changes.changed.iter().chain(&changes.removed) {
            if !pinned.changed.contains(name) {
                pinned.changed.push(name.clone());
            }
        }
        if !changes.is_empty() {
            tracing::warn!(
                toolset = %self.name,
                changed = ?changes.changed,
                added = ?changes.added,
                removed = ?changes.removed,
                "an MCP server's tool list changed since its tools were offered"
            );
        }
        Ok(changes)
    }

    async fn list(&self) -> Result<Vec<Value>, McpClientError> {
        let client = self.link.client().await;
        let timeout = self.timeout;
        let list = |client: Arc<super::token::Connection>| async move {
            client
                .timed(
                    "tools/list",
                    None,
                    timeout,
                    |_| false,
                    client.list_all_tools(),
                )
                .await
        };
        let mut listed = list(Arc::clone(&client)).await;
        if let Ok(Err(err)) = &listed
            && let Some(challenge) = challenge_of(err)
            && self.link.renew(&client, challenge).await
        {
            listed = list(self.link.client().await).await;
        }
        let tools = listed
            .map_err(|_| McpClientError::Timeout(self.timeout))?
            .map_err(|err| McpClientError::Protocol(err.to_string()))?;
        tools
            .into_iter()
            .map(|tool| {
                serde_json::to_value(tool).map_err(|err| McpClientError::Protocol(err.to_string()))
            })
            .collect()
    }

    fn proxy(&self, tool: &Value) -> Result<McpProxy, McpClientError> {
        let remote = tool
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| McpClientError::Protocol("a listed tool has no name".into()))?
            .to_owned();
        let refuse = |problem: String| McpClientError::Tool {
            name: crate::echo::echo(&remote).into_owned(),
            problem,
        };
        let name = match &self.prefix {
            Some(prefix) => fit_name(&format!("{prefix}_{remote}")),
            None => remote.clone(),
        };
        if !valid_name(&name) {
            return Err(refuse(
                "its name is not 1 to 128 characters from A-Z, a-z, 0-9, `_`, `-` and `.`".into(),
            ));
        }
        // The server's words reach a model: through the output checks first.
        let description = crate::output::neutralize(
            tool.get("description")
                .and_then(Value::as_str)
                .unwrap_or_default(),
        );
        let mut schema = tool
            .get("inputSchema")
            .cloned()
            .unwrap_or_else(|| serde_json::json!({"type": "object"}));
        neutralize_texts(&mut schema, 0);
        let hints = tool.get("annotations").filter(|_| self.trusted);
        let hint = |key: &str| hints.and_then(|h| h.get(key)).and_then(Value::as_bool);
        let effect = if self.read_only.contains(&remote) || hint("readOnlyHint") == Some(true) {
            Effect::Read
        } else if hint("destructiveHint") == Some(false) {
            Effect::Write
        } else {
            self.default_effect
        };
        let annotations = Annotations {
            open_world: Some(hint("openWorldHint").unwrap_or(true)),
            idempotent: hint("idempotentHint"),
            ..Annotations::default()
        };
        let mut definition = ToolDefinition::new(name, description, schema)
            .with_effect(effect)
            .with_annotations(annotations)
            .with_remote(self.link.transport());
        if let Some(title) = tool.get("title").and_then(Value::as_str) {
            definition = definition.with_title(crate::output::neutralize(title));
        }
        if let Some(problem) = definition.problem() {
            return Err(refuse(problem.to_owned()));
        }
        if let Some(finding) = crate::lint::tool(&definition)
            .into_iter()
            .find(|f| f.lint == "description_injection")
        {
            return Err(refuse(finding.message));
        }
        Ok(McpProxy {
            remote,
            definition,
            link: Arc::clone(&self.link),
            pinned: Arc::clone(&self.pinned),
            timeout: self.timeout,
        })
    }
}

impl fmt::Debug for McpToolset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpToolset")
            .field("name", &self.name)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

/// The request timeout of a toolset, unless set: the official MCP SDKs' default.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Every `description` and `title` text of a schema through the output checks.
fn neutralize_texts(schema: &mut Value, depth: usize) {
    if depth > 128 {
        return;
    }
    match schema {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                match value {
                    Value::String(text) if key == "description" || key == "title" => {
                        *text = crate::output::neutralize(text);
                    }
                    other => neutralize_texts(other, depth + 1),
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                neutralize_texts(item, depth + 1);
            }
        }
        _ => {}
    }
}

/// A hash of what a model reads of a tool: its description, schemas and annotations.
fn fingerprint(tool: &Value) -> String {
    let mut seen = Map::new();
    for key in [
        "description",
        "inputSchema",
        "outputSchema",
        "annotations",
        "title",
    ] {
        if let Some(value) = tool.get(key) {
            seen.insert(key.to_owned(), value.clone());
        }
    }
    let digest = Sha256::digest(crate::json::canonical::canonical_json(&Value::Object(seen)));
    let mut hex = String::with_capacity(64);
    crate::json::canonical::push_hex(&mut hex, &digest);
    hex
}

/// A tool of an MCP server, called through the client.
struct McpProxy {
    /// The tool's name on the server.
    remote: String,
    definition: ToolDefinition,
    link: Arc<Link>,
    pinned: Arc<Mutex<Pinned>>,
    timeout: Duration,
}

impl McpProxy {
    async fn run(&self, arguments: Arguments<'_>, ctx: &ToolContext) -> ToolOutcome {
        let arguments = match self.definition.validate_in(arguments, ctx) {
            Ok(Value::Object(arguments)) => arguments,
            Ok(_) => Map::new(),
            Err(err) => return ToolOutcome::Error(err),
        };
        let changed = self
            .pinned
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .changed
            .contains(&self.remote);
        if changed {
            return ToolOutcome::Error(ToolError::new(
                ErrorCode::UpstreamError,
                format!(
                    "`{}` changed on its server since it was offered, so it was not called. Do not call it again in this conversation.",
                    self.definition.name()
                ),
            )
            .retryable(false));
        }
        let mut params = CallToolRequestParams::new(self.remote.clone()).with_arguments(arguments);
        let client = self.link.client().await;
        // The call's span is this client's `tools/call` span: the server continues its trace.
        let span = tracing::Span::current();
        if let Some(version) = client
            .peer_info()
            .map(|info| info.protocol_version.to_string())
        {
            span.record("mcp.protocol.version", version);
        }
        if let Some(traceparent) = crate::telemetry::traceparent(&span) {
            let mut meta = rmcp::model::RequestMetaObject::default();
            meta.0
                .insert("traceparent".to_owned(), Value::String(traceparent));
            params.meta = Some(meta);
        }
        let call = |client: Arc<super::token::Connection>, params: CallToolRequestParams| async move {
            let failed: fn(&rmcp::model::CallToolResult) -> bool =
                |result| result.is_error == Some(true);
            client
                .timed(
                    "tools/call",
                    Some(&self.remote),
                    self.timeout,
                    failed,
                    client.call_tool(params),
                )
                .await
        };
        let mut answered = call(Arc::clone(&client), params.clone()).await;
        // Asked to sign in again (401) or for more scopes (403): once, with a new token.
        if let Ok(Err(err)) = &answered
            && let Some(challenge) = challenge_of(err)
            && self.link.renew(&client, challenge).await
        {
            answered = call(self.link.client().await, params).await;
        }
        // Still refused: this client cannot get what the server asks for, and asking again
        // (a retry) would not change that.
        if let Ok(Err(err)) = &answered
            && challenge_of(err).is_some()
        {
            let mut refused = ToolError::permission_denied(format!(
                "`{}` needs an authorization its server did not give this application. Do not call it again in this conversation.",
                self.definition.name()
            ));
            refused.set_detail(err.to_string());
            return ToolOutcome::Error(refused);
        }
        let result = match answered {
            Ok(Ok(result)) => result,
            Err(_) => {
                // Whether it ran is not known: only a read may be tried again.
                return ToolOutcome::Error(
                    ToolError::upstream_error(format!(
                        "`{}` did not answer within {} s on its server.",
                        self.definition.name(),
                        self.timeout.as_secs_f64()
                    ))
                    .retryable(self.definition.effect() == Some(Effect::Read)),
                );
            }
            Ok(Err(err)) => {
                let mut refused = ToolError::upstream_error(format!(
                    "`{}` could not be reached on its server. Try again later.",
                    self.definition.name()
                ));
                refused.set_detail(err.to_string());
                return ToolOutcome::Error(refused);
            }
        };
        let result = serde_json::to_value(result).unwrap_or_default();
        let text: Vec<&str> = result
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|block| block.get("text").and_then(Value::as_str))
            .collect();
        let text = text.join("\n");
        if result.get("isError").and_then(Value::as_bool) == Some(true) {
            return ToolOutcome::Error(ToolError::upstream_error(format!(
                "`{}` failed on its server: {}",
                self.definition.name(),
                crate::echo::echo(&text)
            )));
        }
        let data = match result.get("structuredContent") {
            Some(structured) if !structured.is_null() => structured.clone(),
            _ => Value::String(text),
        };
        ToolOutcome::success(&data).unwrap_or_else(ToolOutcome::Error)
    }
}

impl Tool for McpProxy {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn call<'a>(
        &'a self,
        arguments: Arguments<'a>,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(self.run(arguments, ctx))
    }
}

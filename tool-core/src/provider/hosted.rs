//! Tools the provider runs (web search, web fetch, file search, code execution, computer use,
//! remote MCP servers), declared beside function tools in each provider's own versioned wire
//! form, and the hosted calls and results of a response read back into types.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::dialect::Dialect;

/// A tool the provider runs, declared in a request beside the toolbox's function tools
/// ([`ToolRequest::hosted`](super::ToolRequest::hosted)).
///
/// Each is exported in the provider's current versioned form; what a provider cannot express
/// is said at export: a tool it does not have is an error naming the provider
/// ([`RequestError::HostedUnsupported`](super::RequestError::HostedUnsupported)), a parameter
/// it does not take is left out with a note in the block's report. The companions a request
/// needs (Anthropic's beta headers, its `mcp_servers` field, Gemini's flag for mixing built-in
/// tools with functions) come back in the [`ToolBlock`](super::ToolBlock). docs/providers.md
/// has the table of what each provider takes.
///
/// ```
/// use toolsmith::provider::{HostedTool, ToolRequest, WebSearch};
/// use toolsmith::{Dialect, Toolbox};
///
/// let search = HostedTool::WebSearch(WebSearch { max_uses: Some(3), ..WebSearch::default() });
/// let request = ToolRequest { hosted: vec![search], ..ToolRequest::default() };
/// let block = Toolbox::new().provider(Dialect::Anthropic { strict: false }).request(&request).unwrap();
/// assert_eq!(block.fields["tools"][0]["type"], "web_search_20260318");
/// assert_eq!(block.fields["tools"][0]["max_uses"], 3);
/// // OpenAI's Chat Completions has no hosted tools: an error naming the provider.
/// assert!(Toolbox::new().provider(Dialect::OpenAiChat { strict: true }).request(&request).is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum HostedTool {
    /// Searching the web.
    WebSearch(WebSearch),
    /// Fetching a page the conversation names.
    WebFetch(WebFetch),
    /// Searching the application's own documents, stored with the provider.
    FileSearch(FileSearch),
    /// Running code in the provider's sandbox.
    CodeExecution(CodeExecution),
    /// Operating a computer's screen, keyboard and mouse. The provider defines the tool; the
    /// application carries out its actions.
    ComputerUse(ComputerUse),
    /// A remote MCP server the provider connects to.
    RemoteMcp(RemoteMcp),
    /// A provider's tool entry as written, for one dialect: a tool this type does not know
    /// yet. Exported as it is for that dialect, refused for any other.
    Raw(RawHosted),
}

/// Web search settings ([`HostedTool::WebSearch`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebSearch {
    /// At most this many searches per request (Anthropic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_uses: Option<u32>,
    /// Only results from these domains (OpenAI Responses, Anthropic).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_domains: Vec<String>,
    /// Never results from these domains (Anthropic, Gemini).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocked_domains: Vec<String>,
    /// Where the user is, for local results (OpenAI Responses, Anthropic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_location: Option<UserLocation>,
    /// How much of what was found the model is given (OpenAI Responses).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_size: Option<ContextSize>,
}

/// An approximate location for search results.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserLocation {
    /// A city, free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub city: Option<String>,
    /// A region or state, free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// A two-letter ISO 3166-1 country code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub country: Option<String>,
    /// An IANA time zone, like `Europe/Oslo`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
}

/// How much search context the model is given (OpenAI's `search_context_size`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ContextSize {
    /// Less context: cheaper and faster.
    Low,
    /// The provider's default.
    Medium,
    /// More context.
    High,
}

/// Web fetch settings ([`HostedTool::WebFetch`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebFetch {
    /// At most this many fetches per request (Anthropic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_uses: Option<u32>,
    /// Only pages from these domains (Anthropic).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_domains: Vec<String>,
    /// Never pages from these domains (Anthropic).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocked_domains: Vec<String>,
    /// At most this many tokens of a page's content (Anthropic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_content_tokens: Option<u32>,
}

/// File search settings ([`HostedTool::FileSearch`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileSearch {
    /// The stores to search: OpenAI vector store ids, Gemini file search store names.
    pub stores: Vec<String>,
    /// At most this many results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_results: Option<u32>,
}

/// Code execution settings ([`HostedTool::CodeExecution`]); the provider's sandbox with its
/// defaults (OpenAI: a container made for the request).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeExecution {}

/// Computer use settings ([`HostedTool::ComputerUse`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComputerUse {
    /// The screen's size in pixels, `(width, height)` (Anthropic, which requires it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display: Option<(u32, u32)>,
    /// What kind of computer it is (Gemini).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<ComputerEnvironment>,
}

/// The kind of computer operated ([`ComputerUse::environment`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ComputerEnvironment {
    /// A web browser.
    Browser,
    /// A desktop.
    Desktop,
    /// A phone.
    Mobile,
}

/// A remote MCP server the provider calls ([`HostedTool::RemoteMcp`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteMcp {
    /// The server's label: how the model and the response name it.
    pub name: String,
    /// Its streamable HTTP address.
    pub url: String,
    /// Only these of its tools (all when `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_tools: Option<Vec<String>>,
    /// An OAuth access token the provider sends to the server. Skipped when the request is
    /// serialized (run state, logs): set it again where the request is built.
    #[serde(skip)]
    pub authorization: Option<String>,
    /// Whether the provider asks the application before each call (OpenAI's
    /// `require_approval`). `true` by default: a provider that cannot ask (Anthropic) is
    /// refused until this is set to `false` on purpose.
    #[serde(default = "yes")]
    pub require_approval: bool,
    /// Whether its tools are found through tool search rather than listed up front.
    #[serde(default)]
    pub defer_loading: bool,
}

fn yes() -> bool {
    true
}

impl RemoteMcp {
    /// A server at `url` named `name`, every tool allowed, approval required.
    ///
    /// ```
    /// let server = toolsmith::provider::RemoteMcp::new("docs", "https://mcp.example.com/mcp");
    /// assert!(server.require_approval);
    /// ```
    #[must_use]
    pub fn new(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            url: url.into(),
            allowed_tools: None,
            authorization: None,
            require_approval: true,
            defer_loading: false,
        }
    }
}

/// A provider's tool entry as written ([`HostedTool::Raw`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RawHosted {
    /// The provider it is written for: `"openai-responses"`, `"anthropic"` or `"gemini"`
    /// ([`Dialect::provider`]).
    pub provider: String,
    /// The entry, put in the tool list as it is.
    pub tool: Value,
}

/// What a raw entry is, read as its typed form would be: the checks a typed tool gets apply
/// to the same tool written raw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RawKind {
    /// A computer-use tool (its actions are the application's to carry out).
    ComputerUse,
    /// A remote MCP server; `asks`: the provider asks before each call (OpenAI's
    /// `require_approval` anything but `"never"`; Anthropic's connector never asks, and
    /// its raw entry cannot say so, so it counts as the typed default, which asks).
    RemoteMcp { asks: bool },
    /// Anything else.
    Other,
}

impl RawHosted {
    /// The typed kind of this entry.
    pub(crate) fn kind(&self) -> RawKind {
        let kind = self.tool.get("type").and_then(Value::as_str).unwrap_or("");
        if kind.starts_with("computer") || self.tool.get("computerUse").is_some() {
            return RawKind::ComputerUse;
        }
        match kind {
            "mcp" => RawKind::RemoteMcp {
                asks: self.tool.get("require_approval").and_then(Value::as_str) != Some("never"),
            },
            "mcp_toolset" => RawKind::RemoteMcp { asks: true },
            _ if self.tool.get("mcpServers").is_some() => RawKind::RemoteMcp { asks: true },
            _ => RawKind::Other,
        }
    }
}

/// The parts of a request the hosted tools make, for one dialect.
#[derive(Debug, Default)]
pub(crate) struct HostedBlock {
    /// Entries for the tool list (Gemini: whole tool objects beside `functionDeclarations`).
    pub(crate) entries: Vec<Value>,
    /// Request fields beside `tools` (Anthropic's `mcp_servers`).
    pub(crate) fields: Map<String, Value>,
    /// Beta features to turn on (Anthropic's `anthropic-beta` header values).
    pub(crate) betas: Vec<&'static str>,
    /// Each parameter left out, and why.
    pub(crate) notes: Vec<String>,
}

/// Why a hosted tool cannot be put in a request.
pub(crate) enum HostedError {
    /// The provider has no such tool.
    Unsupported {
        provider: &'static str,
        tool: &'static str,
    },
    /// The provider has the tool but cannot express a setting that keeps it safe or working.
    Setting {
        provider: &'static str,
        tool: &'static str,
        why: String,
    },
}

impl HostedTool {
    /// The tool's kind, as errors and notes name it.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Self::WebSearch(_) => "web_search",
            Self::WebFetch(_) => "web_fetch",
            Self::FileSearch(_) => "file_search",
            Self::CodeExecution(_) => "code_execution",
            Self::ComputerUse(_) => "computer_use",
            Self::RemoteMcp(_) => "remote_mcp",
            Self::Raw(_) => "raw",
        }
    }

    /// The name the model calls the tool by, where the provider gives it one: a function tool
    /// of that name would be ambiguous.
    pub(crate) fn reserved_name(&self) -> Option<&str> {
        match self {
            Self::WebSearch(_) => Some("web_search"),
            Self::WebFetch(_) => Some("web_fetch"),
            Self::CodeExecution(_) => Some("code_execution"),
            Self::ComputerUse(_) => Some("computer"),
            Self::FileSearch(_) | Self::RemoteMcp(_) | Self::Raw(_) => None,
        }
    }
}

/// The request parts for `tools` in `dialect`.
pub(crate) fn export(dialect: Dialect, tools: &[HostedTool]) -> Result<HostedBlock, HostedError> {
    let mut block = HostedBlock::default();
    let provider = dialect.provider();
    for tool in tools {
        let unsupported = || HostedError::Unsupported {
            provider,
            tool: tool.kind(),
        };
        let mut dropped = |what: &str| {
            block.notes.push(format!(
                "{provider} does not take `{what}` for {}: left out",
                tool.kind()
            ));
        };
        let entry = match (dialect, tool) {
            (Dialect::OpenAiChat { .. } | Dialect::Mcp, HostedTool::Raw(_)) => {
                return Err(unsupported());
            }
            // Checked as the typed form is: Anthropic's connector never asks before a call.
            (Dialect::Anthropic { .. }, HostedTool::Raw(raw))
                if raw.provider == provider
                    && raw.kind() == (RawKind::RemoteMcp { asks: true }) =>
            {
                return Err(HostedError::Setting {
                    provider,
                    tool: "remote_mcp",
                    why: "Anthropic's MCP connector calls the server's tools without asking \
                          anyone; write it as `HostedTool::RemoteMcp` with \
                          `require_approval: false` to accept that"
                        .into(),
                });
            }
            (_, HostedTool::Raw(raw)) if raw.provider == provider => raw.tool.clone(),
            (_, HostedTool::Raw(_)) => return Err(unsupported()),
            (Dialect::OpenAiChat { .. } | Dialect::Mcp, _) => return Err(unsupported()),
            (Dialect::OpenAiResponses { .. }, tool) => openai(tool, &mut dropped)?,
            (Dialect::Anthropic { .. }, tool) => {
                let (entry, beta, server) = anthropic(tool, &mut dropped)?;
                if let Some(beta) = beta
                    && !block.betas.contains(&beta)
                {
                    block.betas.push(beta);
                }
                if let Some(server) = server {
                    let servers = block
                        .fields
                        .entry("mcp_servers")
                        .or_insert_with(|| Value::Array(Vec::new()));
                    if let Value::Array(servers) = servers {
                        servers.push(server);
                    }
                }
                entry
            }
            (Dialect::Gemini, tool) => gemini(tool, &mut dropped)?,
        };
        block.entries.push(entry);
    }
    Ok(block)
}

fn location(location: &UserLocation) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), json!("approximate"));
    for (key, value) in [
        ("city", &location.city),
        ("region", &location.region),
        ("country", &location.country),
        ("timezone", &location.timezone),
    ] {
        if let Some(value) = value {
            out.insert(key.into(), json!(value));
        }
    }
    Value::Object(out)
}

/// OpenAI Responses' entry.
fn openai(tool: &HostedTool, dropped: &mut dyn FnMut(&str)) -> Result<Value, HostedError> {
    Ok(match tool {
        HostedTool::WebSearch(search) => {
            let mut entry = json!({"type": "web_search"});
            if search.max_uses.is_some() {
                dropped("max_uses");
            }
            if !search.blocked_domains.is_empty() {
                dropped("blocked_domains");
            }
            if !search.allowed_domains.is_empty() {
                entry["filters"] = json!({"allowed_domains": search.allowed_domains});
            }
            if let Some(at) = &search.user_location {
                entry["user_location"] = location(at);
            }
            if let Some(size) = search.context_size {
                entry["search_context_size"] = serde_json::to_value(size).unwrap_or_default();
            }
            entry
        }
        HostedTool::WebFetch(_) => {
            return Err(HostedError::Unsupported {
                provider: "openai-responses",
                tool: "web_fetch",
            });
        }
        HostedTool::FileSearch(files) => {
            let mut entry = json!({"type": "file_search", "vector_store_ids": files.stores});
            if let Some(n) = files.max_results {
                entry["max_num_results"] = json!(n);
            }
            entry
        }
        HostedTool::CodeExecution(_) => {
            json!({"type": "code_interpreter", "container": {"type": "auto"}})
        }
        HostedTool::ComputerUse(computer) => {
            if computer.display.is_some() {
                dropped("display");
            }
            if computer.environment.is_some() {
                dropped("environment");
            }
            json!({"type": "computer"})
        }
        HostedTool::RemoteMcp(server) => {
            let mut entry = json!({
                "type": "mcp",
                "server_label": server.name,
                "server_url": server.url,
                "require_approval": if server.require_approval { "always" } else { "never" },
            });
            if let Some(tools) = &server.allowed_tools {
                entry["allowed_tools"] = json!(tools);
            }
            if let Some(token) = &server.authorization {
                entry["authorization"] = json!(token);
            }
            if server.defer_loading {
                entry["defer_loading"] = json!(true);
            }
            entry
        }
        HostedTool::Raw(raw) => raw.tool.clone(),
    })
}

/// Anthropic's entry, the beta feature it needs, and for a remote MCP server its
/// `mcp_servers` definition.
fn anthropic(
    tool: &HostedTool,
    dropped: &mut dyn FnMut(&str),
) -> Result<(Value, Option<&'static str>, Option<Value>), HostedError> {
    let domains = |entry: &mut Value, allowed: &[String], blocked: &[String]| {
        if !allowed.is_empty() {
            entry["allowed_domains"] = json!(allowed);
        }
        if !blocked.is_empty() {
            entry["blocked_domains"] = json!(blocked);
        }
    };
    Ok(match tool {
        HostedTool::WebSearch(search) => {
            let mut entry = json!({"type": "web_search_20260318", "name": "web_search"});
            if let Some(n) = search.max_uses {
                entry["max_uses"] = json!(n);
            }
            domains(&mut entry, &search.allowed_domains, &search.blocked_domains);
            if let Some(at) = &search.user_location {
                entry["user_location"] = location(at);
            }
            if search.context_size.is_some() {
                dropped("context_size");
            }
            (entry, None, None)
        }
        HostedTool::WebFetch(fetch) => {
            let mut entry = json!({"type": "web_fetch_20260318", "name": "web_fetch"});
            if let Some(n) = fetch.max_uses {
                entry["max_uses"] = json!(n);
            }
            domains(&mut entry, &fetch.allowed_domains, &fetch.blocked_domains);
            if let Some(n) = fetch.max_content_tokens {
                entry["max_content_tokens"] = json!(n);
            }
            (entry, None, None)
        }
        HostedTool::FileSearch(_) => {
            return Err(HostedError::Unsupported {
                provider: "anthropic",
                tool: "file_search",
            });
        }
        HostedTool::CodeExecution(_) => (
            json!({"type": "code_execution_20260521", "name": "code_execution"}),
            None,
            None,
        ),
        HostedTool::ComputerUse(computer) => {
            let Some((width, height)) = computer.display else {
                return Err(HostedError::Setting {
                    provider: "anthropic",
                    tool: "computer_use",
                    why: "Anthropic needs the screen's size: set `display`".into(),
                });
            };
            if computer.environment.is_some() {
                dropped("environment");
            }
            (
                json!({"type": "computer_20251124", "name": "computer",
                       "display_width_px": width, "display_height_px": height}),
                Some("computer-use-2025-11-24"),
                None,
            )
        }
        HostedTool::RemoteMcp(server) => {
            if server.require_approval {
                return Err(HostedError::Setting {
                    provider: "anthropic",
                    tool: "remote_mcp",
                    why: "Anthropic's MCP connector calls the server's tools without asking \
                          anyone; set `require_approval: false` to accept that"
                        .into(),
                });
            }
            let mut entry = json!({"type": "mcp_toolset", "mcp_server_name": server.name});
            let mut default = Map::new();
            if server.defer_loading {
                default.insert("defer_loading".into(), json!(true));
            }
            if let Some(tools) = &server.allowed_tools {
                // Every tool off, the allowed ones on.
                default.insert("enabled".into(), json!(false));
                let configs: Map<String, Value> = tools
                    .iter()
                    .map(|name| (name.clone(), json!({"enabled": true})))
                    .collect();
                entry["configs"] = Value::Object(configs);
            }
            if !default.is_empty() {
                entry["default_config"] = Value::Object(default);
            }
            let mut definition = json!({"type": "url", "url": server.url, "name": server.name});
            if let Some(token) = &server.authorization {
                definition["authorization_token"] = json!(token);
            }
            (entry, Some("mcp-client-2025-11-20"), Some(definition))
        }
        HostedTool::Raw(raw) => (raw.tool.clone(), None, None),
    })
}

/// Gemini's tool object.
fn gemini(tool: &HostedTool, dropped: &mut dyn FnMut(&str)) -> Result<Value, HostedError> {
    Ok(match tool {
        HostedTool::WebSearch(search) => {
            for (set, what) in [
                (search.max_uses.is_some(), "max_uses"),
                (!search.allowed_domains.is_empty(), "allowed_domains"),
                (search.user_location.is_some(), "user_location"),
                (search.context_size.is_some(), "context_size"),
            ] {
                if set {
                    dropped(what);
                }
            }
            let mut search_settings = Map::new();
            if !search.blocked_domains.is_empty() {
                search_settings.insert("excludeDomains".into(), json!(search.blocked_domains));
            }
            json!({ "googleSearch": search_settings })
        }
        HostedTool::WebFetch(fetch) => {
            for (set, what) in [
                (fetch.max_uses.is_some(), "max_uses"),
                (!fetch.allowed_domains.is_empty(), "allowed_domains"),
                (!fetch.blocked_domains.is_empty(), "blocked_domains"),
                (fetch.max_content_tokens.is_some(), "max_content_tokens"),
            ] {
                if set {
                    dropped(what);
                }
            }
            json!({"urlContext": {}})
        }
        HostedTool::FileSearch(files) => {
            let mut settings = json!({"fileSearchStoreNames": files.stores});
            if let Some(n) = files.max_results {
                settings["topK"] = json!(n);
            }
            json!({ "fileSearch": settings })
        }
        HostedTool::CodeExecution(_) => json!({"codeExecution": {}}),
        HostedTool::ComputerUse(computer) => {
            if computer.display.is_some() {
                dropped("display");
            }
            let environment = match computer.environment {
                Some(ComputerEnvironment::Desktop) => "ENVIRONMENT_DESKTOP",
                Some(ComputerEnvironment::Mobile) => "ENVIRONMENT_MOBILE",
                Some(ComputerEnvironment::Browser) | None => "ENVIRONMENT_BROWSER",
            };
            json!({"computerUse": {"environment": environment}})
        }
        HostedTool::RemoteMcp(_) => {
            return Err(HostedError::Unsupported {
                provider: "gemini",
                tool: "remote_mcp",
            });
        }
        HostedTool::Raw(raw) => raw.tool.clone(),
    })
}

/// A provider-run call or its result, read from a response ([`hosted_items`]).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct HostedItem {
    /// A call or its result.
    pub kind: HostedKind,
    /// The item's type as the provider wrote it (`server_tool_use`, `web_search_call`,
    /// `executableCode`, ...).
    pub provider_type: String,
    /// The call's id, or for a result the id of the call it answers, when the provider gives
    /// one.
    pub id: Option<String>,
    /// The tool's name, when the provider gives one (Anthropic's `web_search`, an MCP
    /// server's tool).
    pub name: Option<String>,
    /// What the call was given, when the provider says (Anthropic's `input`, an MCP call's
    /// arguments, the code to run).
    pub input: Option<Value>,
    /// The item as the response holds it: the history keeps it as it is.
    pub raw: Value,
}

/// Whether a [`HostedItem`] is a call or a result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostedKind {
    /// The provider ran (or will run) a tool.
    Call,
    /// What the tool gave back.
    Result,
    /// A call the provider asks the application to carry out or approve (OpenAI's
    /// `computer_call` and `mcp_approval_request`): it is not left to the provider.
    /// Anthropic's computer use arrives as an ordinary `tool_use` named `computer`, which
    /// [`ToolCall::parse`](super::ToolCall::parse) reads, so a function tool of that name is
    /// never taken for it.
    ForApplication,
}

/// The hosted calls and results in a provider's response, in order. Function calls are not
/// among them ([`ToolCall::parse`](super::ToolCall::parse) reads those).
///
/// ```
/// use toolsmith::provider::{hosted_items, HostedKind};
/// use toolsmith::serde_json::json;
/// use toolsmith::Dialect;
///
/// let response = json!({"content": [
///     {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "oslo weather"}},
///     {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
///     {"type": "text", "text": "It is sunny."}
/// ]});
/// let items = hosted_items(Dialect::Anthropic { strict: false }, &response);
/// assert_eq!(items.len(), 2);
/// assert_eq!(items[0].kind, HostedKind::Call);
/// assert_eq!(items[0].input.as_ref().unwrap()["query"], "oslo weather");
/// assert_eq!(items[1].id.as_deref(), Some("srvtoolu_1"));
/// ```
#[must_use]
pub fn hosted_items(dialect: Dialect, response: &Value) -> Vec<HostedItem> {
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
    let item = |kind, raw: &Value, id: Option<String>, name, input| HostedItem {
        kind,
        provider_type: text(raw, "type").unwrap_or_default(),
        id,
        name,
        input,
        raw: raw.clone(),
    };
    let mut out = Vec::new();
    match dialect {
        Dialect::Anthropic { .. } => {
            for block in response
                .get("content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let kind = text(block, "type").unwrap_or_default();
                match kind.as_str() {
                    "server_tool_use" | "mcp_tool_use" => out.push(item(
                        HostedKind::Call,
                        block,
                        text(block, "id"),
                        text(block, "name"),
                        block.get("input").cloned(),
                    )),
                    other if other.ends_with("_tool_result") && other != "tool_result" => {
                        out.push(item(
                            HostedKind::Result,
                            block,
                            text(block, "tool_use_id"),
                            None,
                            None,
                        ));
                    }
                    _ => {}
                }
            }
        }
        Dialect::OpenAiResponses { .. } => {
            for entry in response
                .get("output")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let kind = text(entry, "type").unwrap_or_default();
                let (hosted, input) = match kind.as_str() {
                    "web_search_call" => (HostedKind::Call, entry.get("action").cloned()),
                    "file_search_call" => (HostedKind::Call, entry.get("queries").cloned()),
                    "code_interpreter_call" => (HostedKind::Call, entry.get("code").cloned()),
                    "mcp_call" => (
                        HostedKind::Call,
                        text(entry, "arguments").and_then(|a| serde_json::from_str(&a).ok()),
                    ),
                    "mcp_list_tools" | "image_generation_call" => (HostedKind::Call, None),
                    "computer_call" => (HostedKind::ForApplication, entry.get("action").cloned()),
                    "mcp_approval_request" => (
                        HostedKind::ForApplication,
                        text(entry, "arguments").and_then(|a| serde_json::from_str(&a).ok()),
                    ),
                    _ => continue,
                };
                out.push(item(
                    hosted,
                    entry,
                    text(entry, "id"),
                    text(entry, "name"),
                    input,
                ));
            }
        }
        Dialect::Gemini => {
            for part in response
                .pointer("/candidates/0/content/parts")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(code) = part.get("executableCode") {
                    let mut found = item(
                        HostedKind::Call,
                        part,
                        None,
                        None,
                        code.get("code").cloned(),
                    );
                    found.provider_type = "executableCode".into();
                    out.push(found);
                } else if part.get("codeExecutionResult").is_some() {
                    let mut found = item(HostedKind::Result, part, None, None, None);
                    found.provider_type = "codeExecutionResult".into();
                    out.push(found);
                }
            }
        }
        Dialect::OpenAiChat { .. } | Dialect::Mcp => {}
    }
    out
}

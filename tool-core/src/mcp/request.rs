//! The request a tool runs for, as its context carries it.

use rmcp::model::{Implementation, ProtocolVersion};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Map, Value};

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
    pub(super) id: String,
    pub(super) tool: Option<String>,
    pub(super) meta: Map<String, Value>,
    pub(super) client: Option<Implementation>,
    pub(super) protocol_version: Option<String>,
    pub(super) headers: Option<http::HeaderMap>,
    /// What the request's verified access token grants (a server with authorization).
    pub(super) grant: Option<crate::context::Grant>,
    /// The HTTP version the request came over (`None` on stdio).
    pub(super) http: Option<&'static str>,
}

impl McpRequest {
    pub(super) fn new(context: &RequestContext<RoleServer>, tool: Option<&str>) -> Self {
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
            grant: context
                .extensions
                .get::<http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<crate::context::Grant>())
                .cloned(),
            http: http_version(context),
        }
    }

    /// The request in the words of OpenTelemetry's MCP conventions, as `method`.
    pub(super) fn rpc(&self, method: &'static str) -> crate::telemetry::Rpc {
        crate::telemetry::Rpc {
            method,
            protocol_version: self.protocol_version.clone(),
            session: self
                .header("mcp-session-id")
                .map(crate::telemetry::Rpc::session_digest),
            // The client's id, on every span of the request: cut short, as any echo of it.
            request_id: crate::echo::echo(&self.id).into_owned(),
            transport: if self.http.is_some() { "tcp" } else { "pipe" },
            http: self.http,
            traceparent: self
                .meta
                .get("traceparent")
                .and_then(Value::as_str)
                .map(str::to_owned),
        }
    }

    /// A request as its HTTP headers alone describe it: for what the endpoint decides before
    /// the message is read (whose session it is).
    pub(super) fn from_headers(headers: &http::HeaderMap) -> Self {
        Self {
            id: String::new(),
            tool: None,
            meta: Map::new(),
            client: None,
            protocol_version: None,
            headers: Some(headers.clone()),
            grant: None,
            http: None,
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
    pub(super) fn trace_id(&self) -> Option<&str> {
        let traceparent = self.meta.get("traceparent")?.as_str()?;
        let trace_id = traceparent.split('-').nth(1)?;
        (trace_id.len() == 32 && trace_id.bytes().all(|b| b.is_ascii_hexdigit()))
            .then_some(trace_id)
    }
}

/// The HTTP version a request came over, as OpenTelemetry's `network.protocol.version` writes
/// it; `None` on stdio.
pub(super) fn http_version(context: &RequestContext<RoleServer>) -> Option<&'static str> {
    let parts = context.extensions.get::<http::request::Parts>()?;
    Some(version_name(parts.version))
}

/// An HTTP version as OpenTelemetry's `network.protocol.version` writes it.
pub(super) fn version_name(version: http::Version) -> &'static str {
    match version {
        http::Version::HTTP_09 => "0.9",
        http::Version::HTTP_10 => "1.0",
        http::Version::HTTP_2 => "2",
        http::Version::HTTP_3 => "3",
        _ => "1.1",
    }
}

/// Whether the request was made on MCP 2026-07-28 or later (revisions are dates, so they
/// compare as text).
pub(super) fn at_least_2026_07_28(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

//! What toolsmith tells an observer, in the words of OpenTelemetry's semantic conventions for
//! generative AI: each tool call is an `execute_tool` span, an agent's run an
//! `invoke_agent` span, each model request a `chat` span, with the attributes the
//! conventions name (`gen_ai.operation.name`, `gen_ai.tool.name`, `gen_ai.tool.call.id`,
//! `error.type`, ...).
//!
//! The spans are `tracing` spans (target `toolsmith`), so any subscriber sees them, and
//! `tracing-opentelemetry` exports them as OpenTelemetry spans under the conventions' names
//! (`otel.name`, `otel.kind` and `otel.status_code` are the fields it reads for a span's
//! name, kind and status). With no subscriber, or one that does not want `INFO` spans, none
//! is made and nothing is measured.
//!
//! What a call was given and what it answered may hold what a person typed, so they are
//! recorded only when asked ([`Telemetry::content`]), after the same redaction as the audit
//! record and the model's view: parameters marked `#[arg(sensitive)]` are `"[redacted]"`,
//! secrets in results are masked.
//!
//! ```
//! use toolsmith::policy::Defaults;
//! use toolsmith::telemetry::Telemetry;
//! use toolsmith::Toolbox;
//!
//! let toolbox = Toolbox::new().with_defaults(Defaults {
//!     telemetry: Telemetry::default().with_content(true),
//!     ..Defaults::default()
//! });
//! # let _ = toolbox;
//! ```

use tracing::Span;
use tracing::field::Empty;

use crate::dialect::Dialect;

/// What the spans carry beyond names, ids and outcomes.
///
/// ```
/// use toolsmith::telemetry::Telemetry;
/// assert!(!Telemetry::default().content);
/// assert!(Telemetry::default().with_content(true).content);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Telemetry {
    /// Record each call's arguments and result (`gen_ai.tool.call.arguments`,
    /// `gen_ai.tool.call.result`, as JSON text), redacted as the audit record is. Off by
    /// default, as the conventions ask of content attributes.
    pub content: bool,
}

impl Telemetry {
    /// Sets [`content`](Self::content).
    #[must_use]
    pub fn with_content(mut self, content: bool) -> Self {
        self.content = content;
        self
    }
}

/// The conventions' `gen_ai.provider.name` for the provider a dialect speaks to, when there
/// is one.
///
/// ```
/// use toolsmith::Dialect;
/// use toolsmith::telemetry::provider_name;
/// assert_eq!(provider_name(Dialect::Anthropic { strict: false }), Some("anthropic"));
/// assert_eq!(provider_name(Dialect::Mcp), None);
/// ```
#[must_use]
pub fn provider_name(dialect: Dialect) -> Option<&'static str> {
    match dialect {
        Dialect::OpenAiChat { .. } | Dialect::OpenAiResponses { .. } => Some("openai"),
        Dialect::Anthropic { .. } => Some("anthropic"),
        Dialect::Gemini => Some("gcp.gemini"),
        Dialect::Mcp => None,
    }
}

/// A span's OpenTelemetry name: the operation, then what it is of when that is known
/// (written only if a subscriber takes the span).
struct Named<'a>(&'static str, Option<&'a str>);

impl std::fmt::Display for Named<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.1 {
            Some(what) => write!(f, "{} {what}", self.0),
            None => f.write_str(self.0),
        }
    }
}

/// The MCP request a call or a span is for, in the words of OpenTelemetry's MCP conventions:
/// on a tool call's context for the MCP server's `tools/call`, whose `execute_tool` span
/// then carries these attributes too (one span, not two, as the conventions ask).
#[derive(Clone, Debug)]
pub(crate) struct Rpc {
    /// `mcp.method.name`.
    pub(crate) method: &'static str,
    /// `mcp.protocol.version`.
    pub(crate) protocol_version: Option<String>,
    /// `mcp.session.id`: a digest of the session's id, never the id (a credential).
    pub(crate) session: Option<String>,
    /// `jsonrpc.request.id`.
    pub(crate) request_id: String,
    /// `network.transport`: `pipe` (stdio) or `tcp` (HTTP).
    pub(crate) transport: &'static str,
    /// `network.protocol.name` and `network.protocol.version`: `http` and its version.
    pub(crate) http: Option<&'static str>,
    /// The client's `_meta.traceparent`: the span's remote parent.
    pub(crate) traceparent: Option<String>,
}

#[cfg(feature = "mcp")]
impl Rpc {
    /// A session id as its span shows it: a digest, so the id (which lets whoever holds it
    /// act in the session) never reaches a trace.
    pub(crate) fn session_digest(id: &str) -> String {
        let digest = crate::json::canonical::hash_text(id);
        digest.get(..32).unwrap_or(&digest).to_owned()
    }
}

/// The span of one MCP request the server answers (`{mcp.method.name} {target}`, kind
/// server), continuing the client's trace when it sent one; its end is recorded by
/// [`rpc_ended`].
#[cfg(feature = "mcp")]
pub(crate) fn rpc_span(rpc: &Rpc, target: Option<&str>) -> Span {
    let span = tracing::info_span!(
        target: "toolsmith",
        "mcp_request",
        otel.name = %Named(rpc.method, target),
        otel.kind = "server",
        otel.status_code = Empty,
        mcp.method.name = rpc.method,
        mcp.protocol.version = rpc.protocol_version.as_deref(),
        mcp.session.id = rpc.session.as_deref(),
        jsonrpc.request.id = rpc.request_id.as_str(),
        network.transport = rpc.transport,
        network.protocol.name = rpc.http.map(|_| "http"),
        network.protocol.version = rpc.http,
        gen_ai.prompt.name = Empty,
        rpc.response.status_code = Empty,
        error.type = Empty,
    );
    if rpc.method == "prompts/get" {
        span.record("gen_ai.prompt.name", target);
    }
    continue_trace(&span, rpc.traceparent.as_deref());
    span
}

/// Records how an MCP request ended on its span: a JSON-RPC error's code as `error.type` and
/// `rpc.response.status_code`, and an error status.
#[cfg(feature = "mcp")]
pub(crate) fn rpc_ended(span: &Span, error_code: Option<i32>) {
    if let Some(code) = error_code {
        span.record("error.type", code.to_string());
        span.record("rpc.response.status_code", code.to_string());
        span.record("otel.status_code", "error");
    }
}

/// Makes the client's span (from its `traceparent`) the parent of `span`, with the `otel`
/// feature; without it the trace id still reaches the context and the audit record.
#[cfg_attr(
    not(feature = "otel"),
    expect(unused_variables, reason = "only OpenTelemetry has a parent to set")
)]
fn continue_trace(span: &Span, traceparent: Option<&str>) {
    #[cfg(feature = "otel")]
    if let Some(parent) = traceparent.and_then(remote_parent) {
        use tracing_opentelemetry::OpenTelemetrySpanExt;
        let _ = span.set_parent(parent);
    }
}

/// The remote span a W3C `traceparent` (`00-<trace id>-<span id>-<flags>`) names.
#[cfg(feature = "otel")]
fn remote_parent(traceparent: &str) -> Option<opentelemetry::Context> {
    use opentelemetry::trace::{
        SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState,
    };
    let mut parts = traceparent.split('-');
    let (Some("00"), Some(trace), Some(span), Some(flags), None) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return None;
    };
    if trace.len() != 32 || span.len() != 16 || flags.len() != 2 {
        return None;
    }
    let trace = TraceId::from_hex(trace)
        .ok()
        .filter(|t| *t != TraceId::INVALID)?;
    let span = SpanId::from_hex(span)
        .ok()
        .filter(|s| *s != SpanId::INVALID)?;
    let flags = u8::from_str_radix(flags, 16).ok()?;
    let context = SpanContext::new(
        trace,
        span,
        TraceFlags::new(flags),
        true,
        TraceState::default(),
    );
    Some(opentelemetry::Context::new().with_remote_span_context(context))
}

/// What an MCP duration metric is recorded with: the conventions' attributes of an
/// operation (`mcp.method.name`, and a tool call's tool) or of a session.
#[cfg(all(feature = "otel", any(feature = "mcp", feature = "mcp-client")))]
#[derive(Default)]
pub(crate) struct McpMeasure {
    /// `mcp.method.name` (none for a session).
    pub(crate) method: Option<&'static str>,
    /// `gen_ai.tool.name`, for a `tools/call`.
    pub(crate) tool: Option<String>,
    /// `mcp.protocol.version`.
    pub(crate) protocol_version: Option<String>,
    /// `network.transport`: `pipe` (stdio) or `tcp` (HTTP, `network.protocol.name` `http`).
    pub(crate) transport: &'static str,
    /// `error.type`.
    pub(crate) error: Option<String>,
}

/// Records `seconds` on one of the MCP conventions' duration histograms
/// (`mcp.{client,server}.{operation,session}.duration`), through the global meter provider,
/// with the `otel` feature.
#[cfg(all(feature = "otel", any(feature = "mcp", feature = "mcp-client")))]
pub(crate) fn record_mcp(metric: &'static str, seconds: f64, measure: McpMeasure) {
    let description = match metric {
        "mcp.server.operation.duration" => {
            "MCP request or notification duration as observed on the receiver from the time it was received until the result or ack is sent."
        }
        "mcp.client.operation.duration" => {
            "The duration of the MCP request or notification as observed on the sender from the time it was sent until the response or ack is received."
        }
        "mcp.server.session.duration" => {
            "The duration of the MCP session as observed on the MCP server."
        }
        _ => "The duration of the MCP session as observed on the MCP client.",
    };
    // Asked of the global meter provider each time: one installed after the first call is
    // the one recorded to.
    let histogram = opentelemetry::global::meter("toolsmith")
        .f64_histogram(metric)
        .with_unit("s")
        .with_description(description)
        .build();
    let mut attributes = vec![opentelemetry::KeyValue::new(
        "network.transport",
        measure.transport,
    )];
    match measure.method {
        Some(method) => attributes.push(opentelemetry::KeyValue::new("mcp.method.name", method)),
        None if measure.transport == "tcp" => {
            attributes.push(opentelemetry::KeyValue::new(
                "network.protocol.name",
                "http",
            ));
        }
        None => {}
    }
    if let Some(version) = measure.protocol_version {
        attributes.push(opentelemetry::KeyValue::new(
            "mcp.protocol.version",
            version,
        ));
    }
    if let Some(tool) = measure.tool {
        attributes.push(opentelemetry::KeyValue::new("gen_ai.tool.name", tool));
        attributes.push(opentelemetry::KeyValue::new(
            "gen_ai.operation.name",
            "execute_tool",
        ));
    }
    if let Some(error) = measure.error {
        attributes.push(opentelemetry::KeyValue::new("error.type", error));
    }
    histogram.record(seconds, &attributes);
}

/// The duration metric of an MCP request the server answered (`mcp.server.operation.duration`,
/// seconds), with the `otel` feature.
#[cfg(all(feature = "otel", feature = "mcp"))]
pub(crate) fn record_rpc_duration(
    rpc: &Rpc,
    tool: Option<&str>,
    seconds: f64,
    error: Option<String>,
) {
    record_mcp(
        "mcp.server.operation.duration",
        seconds,
        McpMeasure {
            method: Some(rpc.method),
            tool: tool.map(str::to_owned),
            protocol_version: rpc.protocol_version.clone(),
            transport: rpc.transport,
            error,
        },
    );
}

/// The span of one tool call (`execute_tool {name}`); its outcome is recorded by
/// [`tool_ended`]. A call an MCP client made ([`Rpc`] on its context) is the server's
/// `tools/call {name}` span (kind server) with the MCP attributes as well.
pub(crate) fn tool_span(
    name: &str,
    call_id: Option<&str>,
    description: &str,
    rpc: Option<&Rpc>,
) -> Span {
    if let Some(rpc) = rpc {
        let span = tracing::info_span!(
            target: "toolsmith",
            "execute_tool",
            otel.name = %Named(rpc.method, Some(name)),
            otel.kind = "server",
            otel.status_code = Empty,
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = name,
            gen_ai.tool.call.id = call_id,
            gen_ai.tool.type = "function",
            gen_ai.tool.description = description,
            gen_ai.tool.call.arguments = Empty,
            gen_ai.tool.call.result = Empty,
            mcp.method.name = rpc.method,
            mcp.protocol.version = rpc.protocol_version.as_deref(),
            mcp.session.id = rpc.session.as_deref(),
            jsonrpc.request.id = rpc.request_id.as_str(),
            network.transport = rpc.transport,
            network.protocol.name = rpc.http.map(|_| "http"),
            network.protocol.version = rpc.http,
            error.type = Empty,
        );
        continue_trace(&span, rpc.traceparent.as_deref());
        return span;
    }
    tracing::info_span!(
        target: "toolsmith",
        "execute_tool",
        otel.name = %Named("execute_tool", Some(name)),
        otel.kind = "internal",
        otel.status_code = Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = name,
        gen_ai.tool.call.id = call_id,
        gen_ai.tool.type = "function",
        gen_ai.tool.description = description,
        gen_ai.tool.call.arguments = Empty,
        gen_ai.tool.call.result = Empty,
        error.type = Empty,
    )
}

/// The span of a call of an MCP server's tool (a proxy's): the MCP client's
/// `tools/call {name}` span (kind client), which is also the call's `execute_tool` span. The
/// negotiated protocol version is recorded when the call is made.
pub(crate) fn client_tool_span(
    name: &str,
    call_id: Option<&str>,
    description: &str,
    transport: &'static str,
) -> Span {
    tracing::info_span!(
        target: "toolsmith",
        "execute_tool",
        otel.name = %Named("tools/call", Some(name)),
        otel.kind = "client",
        otel.status_code = Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = name,
        gen_ai.tool.call.id = call_id,
        gen_ai.tool.type = "extension",
        gen_ai.tool.description = description,
        gen_ai.tool.call.arguments = Empty,
        gen_ai.tool.call.result = Empty,
        mcp.method.name = "tools/call",
        mcp.protocol.version = Empty,
        network.transport = transport,
        error.type = Empty,
    )
}

/// The W3C `traceparent` of `span` (`00-<trace id>-<span id>-<flags>`), for an MCP request's
/// `_meta`, with the `otel` feature and a span OpenTelemetry records.
#[cfg(feature = "mcp-client")]
#[cfg_attr(
    not(feature = "otel"),
    expect(unused_variables, reason = "only OpenTelemetry has a trace to name")
)]
pub(crate) fn traceparent(span: &Span) -> Option<String> {
    #[cfg(feature = "otel")]
    {
        use opentelemetry::trace::TraceContextExt;
        use tracing_opentelemetry::OpenTelemetrySpanExt;
        let context = span.context();
        let span = context.span();
        let span_context = span.span_context();
        span_context.is_valid().then(|| {
            format!(
                "00-{}-{}-{:02x}",
                span_context.trace_id(),
                span_context.span_id(),
                span_context.trace_flags().to_u8()
            )
        })
    }
    #[cfg(not(feature = "otel"))]
    None
}

/// Records how a call ended on its span: its error code as `error.type` (and an error
/// status) when it failed; over MCP, `tool_error`, the MCP conventions' type for a result
/// with `isError` (every failed call's answer there).
pub(crate) fn tool_ended(span: &Span, error: Option<&str>, rpc: bool) {
    if let Some(code) = error {
        span.record("error.type", if rpc { "tool_error" } else { code });
        span.record("otel.status_code", "error");
    }
}

/// Records a call's content on its span (only when [`Telemetry::content`] is on, and only
/// as redacted).
pub(crate) fn tool_content(span: &Span, arguments: &str, result: Option<&str>) {
    span.record("gen_ai.tool.call.arguments", arguments);
    if let Some(result) = result {
        span.record("gen_ai.tool.call.result", result);
    }
}

/// The span of an agent's run (`invoke_agent {name}`, or `invoke_agent` for an agent with
/// no name), under which its model requests and tool calls nest.
pub(crate) fn agent_span(
    name: Option<&str>,
    dialect: Dialect,
    model: Option<&str>,
    run_id: Option<&str>,
) -> Span {
    tracing::info_span!(
        target: "toolsmith",
        "invoke_agent",
        otel.name = %Named("invoke_agent", name),
        otel.kind = "internal",
        otel.status_code = Empty,
        gen_ai.operation.name = "invoke_agent",
        gen_ai.provider.name = provider_name(dialect),
        gen_ai.agent.name = name,
        gen_ai.request.model = model,
        gen_ai.conversation.id = run_id,
        error.type = Empty,
    )
}

/// The span of one model request (`chat {model}`); its answer is recorded by
/// [`chat_answered`].
pub(crate) fn chat_span(dialect: Dialect, model: Option<&str>) -> Span {
    tracing::info_span!(
        target: "toolsmith",
        "chat",
        otel.name = %Named("chat", model),
        otel.kind = "client",
        otel.status_code = Empty,
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = provider_name(dialect),
        gen_ai.request.model = model,
        gen_ai.response.model = Empty,
        gen_ai.response.id = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        error.type = Empty,
    )
}

/// What a model answered, on its request's span.
pub(crate) struct Answered<'a> {
    model: Option<&'a str>,
    id: Option<&'a str>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    #[cfg_attr(
        not(feature = "otel"),
        expect(
            dead_code,
            reason = "a list goes on the span only through OpenTelemetry's own types"
        )
    )]
    finish_reasons: Vec<&'a str>,
}

impl<'a> Answered<'a> {
    /// Read from a response in `dialect`'s shape (a chat completion, a Responses
    /// `response`, an Anthropic message, a Gemini `GenerateContentResponse`).
    pub(crate) fn of(dialect: Dialect, response: &'a serde_json::Value) -> Self {
        let text = |v: &'a serde_json::Value| v.as_str();
        let count = |v: &serde_json::Value| v.as_u64();
        match dialect {
            Dialect::OpenAiChat { .. } => Self {
                model: text(&response["model"]),
                id: text(&response["id"]),
                input_tokens: count(&response["usage"]["prompt_tokens"]),
                output_tokens: count(&response["usage"]["completion_tokens"]),
                finish_reasons: each(&response["choices"], "finish_reason"),
            },
            Dialect::OpenAiResponses { .. } => Self {
                model: text(&response["model"]),
                id: text(&response["id"]),
                input_tokens: count(&response["usage"]["input_tokens"]),
                output_tokens: count(&response["usage"]["output_tokens"]),
                finish_reasons: text(&response["incomplete_details"]["reason"])
                    .or_else(|| text(&response["status"]))
                    .into_iter()
                    .collect(),
            },
            Dialect::Anthropic { .. } => Self {
                model: text(&response["model"]),
                id: text(&response["id"]),
                input_tokens: count(&response["usage"]["input_tokens"]),
                output_tokens: count(&response["usage"]["output_tokens"]),
                finish_reasons: text(&response["stop_reason"]).into_iter().collect(),
            },
            Dialect::Gemini | Dialect::Mcp => Self {
                model: text(&response["modelVersion"]),
                id: text(&response["responseId"]),
                input_tokens: count(&response["usageMetadata"]["promptTokenCount"]),
                output_tokens: count(&response["usageMetadata"]["candidatesTokenCount"]),
                finish_reasons: each(&response["candidates"], "finishReason"),
            },
        }
    }
}

/// The text at `key` of each item of a list.
fn each<'a>(list: &'a serde_json::Value, key: &str) -> Vec<&'a str> {
    list.as_array()
        .map(|items| items.iter().filter_map(|item| item[key].as_str()).collect())
        .unwrap_or_default()
}

/// Records a model's answer on its request's span. The finish reasons are a list, which a
/// `tracing` field cannot hold: they are set on the OpenTelemetry span itself, with the
/// `otel` feature.
pub(crate) fn chat_answered(span: &Span, answered: &Answered<'_>) {
    if span.is_disabled() {
        return;
    }
    span.record("gen_ai.response.model", answered.model);
    span.record("gen_ai.response.id", answered.id);
    // As signed integers: the conventions' `int`, which OpenTelemetry holds as an `i64`.
    let int = |n: Option<u64>| n.map(|n| i64::try_from(n).unwrap_or(i64::MAX));
    span.record("gen_ai.usage.input_tokens", int(answered.input_tokens));
    span.record("gen_ai.usage.output_tokens", int(answered.output_tokens));
    #[cfg(feature = "otel")]
    {
        use tracing_opentelemetry::OpenTelemetrySpanExt;
        let reasons: Vec<opentelemetry::StringValue> = answered
            .finish_reasons
            .iter()
            .map(|r| opentelemetry::StringValue::from((*r).to_owned()))
            .collect();
        span.set_attribute(
            "gen_ai.response.finish_reasons",
            opentelemetry::Value::Array(opentelemetry::Array::String(reasons)),
        );
    }
}

/// Records a failure (`error.type`, error status) on an agent's or a request's span.
pub(crate) fn failed(span: &Span, error_type: &str) {
    span.record("error.type", error_type);
    span.record("otel.status_code", "error");
}

/// The duration metric the conventions define for an operation
/// (`gen_ai.client.operation.duration`, seconds), recorded for a tool call a provider's
/// model asked for, with the `otel` feature (through the global meter provider).
#[cfg(feature = "otel")]
pub(crate) fn record_tool_duration(dialect: Dialect, seconds: f64, error: Option<&str>) {
    let Some(provider) = provider_name(dialect) else {
        return;
    };
    // Asked of the global meter provider each time: one installed after the first call is
    // the one that counts.
    let histogram = opentelemetry::global::meter("toolsmith")
        .f64_histogram("gen_ai.client.operation.duration")
        .with_unit("s")
        .with_description("GenAI operation duration.")
        .build();
    let mut attributes = vec![
        opentelemetry::KeyValue::new("gen_ai.operation.name", "execute_tool"),
        opentelemetry::KeyValue::new("gen_ai.provider.name", provider),
    ];
    if let Some(code) = error {
        attributes.push(opentelemetry::KeyValue::new("error.type", code.to_owned()));
    }
    histogram.record(seconds, &attributes);
}

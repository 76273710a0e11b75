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

/// The span of one tool call (`execute_tool {name}`); its outcome is recorded by
/// [`tool_ended`].
pub(crate) fn tool_span(name: &str, call_id: Option<&str>, description: &str) -> Span {
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

/// Records how a call ended on its span: its error code as `error.type` (and an error
/// status) when it failed.
pub(crate) fn tool_ended(span: &Span, error: Option<&str>) {
    if let Some(code) = error {
        span.record("error.type", code);
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

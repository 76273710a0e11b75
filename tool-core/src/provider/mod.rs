//! Provider dialects: one tool definition exported as each provider wants it, their tool calls
//! parsed, and results encoded back.
//!
//! Each dialect's schema is derived from the canonical JSON Schema (2020-12) by a transform in
//! the dialect's own file. A constraint a dialect cannot carry is written into the property's
//! description in plain words; the runtime keeps enforcing it. A tool a dialect cannot express
//! at all is an [`ExportError`] naming the tool, the place in the schema and the reason.

mod anthropic;
mod arguments;
mod call;
mod choice;
mod gemini;
mod hosted;
pub(crate) use hosted::RawKind;
pub(crate) mod mcp;
mod offer;
mod openai;
mod program;
mod rich;
mod search;
mod stream;
#[cfg(feature = "tokens")]
mod tokens;
mod transform;

use serde_json::{Value, json};

pub use crate::validate::stream::ArgumentChange;
pub use arguments::ArgumentStream;
pub use call::{CallParseError, ToolCall};
pub use choice::{
    CacheChange, ChoiceReport, ExportOrder, Namespace, RequestError, Reset, Subset, ToolBlock,
    ToolChoice, ToolRequest, ToolSearch,
};
pub(crate) use choice::{Offered, build as build_block};
pub use hosted::{
    CodeExecution, ComputerEnvironment, ComputerUse, ContextSize, FileSearch, HostedItem,
    HostedKind, HostedTool, RawHosted, RemoteMcp, UserLocation, WebFetch, WebSearch, hosted_items,
};
pub use mcp::{OUTPUT_META, REPLAYED_META};
pub use offer::Offer;
pub(crate) use program::encode as encode_program_result;
pub use program::{ProgramCall, program_calls};
pub use search::LOCAL_SEARCH_TOOL;
pub(crate) use search::{answer as search_answer, definition as search_definition, found_names};
pub(crate) use stream::Resolver;
pub use stream::{CallStream, StreamedCallError};
#[cfg(feature = "tokens")]
pub use tokens::{TokenBudget, TokenReport, ToolTokens, o200k_tokens};

use crate::definition::ToolDefinition;
pub use crate::dialect::{Dialect, ExportError, UnknownDialect};
use crate::outcome::ToolOutcome;
use rich::rich;
use transform::{valid_examples, without_dialect};

/// A definition's exports, built here and cached in the definition.
impl ToolDefinition {
    /// The tool as `dialect` takes it in a request, built on first use and cached.
    ///
    /// # Errors
    ///
    /// [`ExportError`] when the dialect cannot express the tool, naming where and why.
    ///
    /// ```
    /// use toolsmith::serde_json::json;
    /// use toolsmith::{Dialect, ToolDefinition};
    ///
    /// let def = ToolDefinition::new("get_time", "Get the time.", json!({
    ///     "type": "object",
    ///     "properties": {"zone": {"type": ["string", "null"], "minLength": 1}},
    ///     "additionalProperties": false
    /// }));
    /// let tool = def.export(Dialect::OpenAiChat { strict: true }).unwrap();
    /// assert_eq!(tool["function"]["parameters"]["required"], json!(["zone"]));
    /// assert_eq!(tool["function"]["parameters"]["properties"]["zone"]["description"], "(at least 1 characters)");
    /// ```
    pub fn export(&self, dialect: Dialect) -> Result<&Value, ExportError> {
        self.exports[dialect.index()]
            .get_or_init(|| export(self, dialect))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// [`export`](Self::export) as JSON text, serialized once and cached.
    ///
    /// ```
    /// use toolsmith::serde_json::json;
    /// use toolsmith::{Dialect, ToolDefinition};
    ///
    /// let def = ToolDefinition::new(
    ///     "get_time",
    ///     "Get the current time in a time zone. Read-only. Not for dates in the past.",
    ///     json!({"type": "object", "properties": {"zone": {"type": "string"}},
    ///            "required": ["zone"], "additionalProperties": false}),
    /// );
    /// let text = def.export_text(Dialect::Mcp).unwrap();
    /// assert_eq!(toolsmith::serde_json::from_str::<toolsmith::serde_json::Value>(text).unwrap(), *def.export(Dialect::Mcp).unwrap());
    /// ```
    ///
    /// # Errors
    ///
    /// [`ExportError`] when the dialect cannot express the tool.
    pub fn export_text(&self, dialect: Dialect) -> Result<&str, ExportError> {
        self.export_texts[dialect.index()]
            .get_or_init(|| {
                self.export(dialect)
                    .map(|value| serde_json::to_string(value).unwrap_or_default())
            })
            .as_deref()
            .map_err(Clone::clone)
    }
}

/// Builds the JSON of one tool in `dialect` (cached by the definition).
pub(crate) fn export(def: &ToolDefinition, dialect: Dialect) -> Result<Value, ExportError> {
    let name = dialect.tool_name(def.name());
    let description = def.description();
    match dialect {
        Dialect::OpenAiChat { strict } => {
            let parameters = openai::parameters(def, dialect, strict)?;
            Ok(json!({
                "type": "function",
                "function": {"name": name, "description": description, "parameters": parameters, "strict": strict},
            }))
        }
        Dialect::OpenAiResponses { strict } => {
            let parameters = openai::parameters(def, dialect, strict)?;
            let mut tool = json!({
                "type": "function", "name": name, "description": description,
                "parameters": parameters, "strict": strict,
            });
            // "A JSON schema object describing the JSON value encoded in string outputs."
            if let Some(output) = def.output_schema() {
                tool["output_schema"] = without_dialect(output);
            }
            Ok(tool)
        }
        Dialect::Anthropic { strict } => {
            let input_schema = anthropic::input_schema(def, dialect, strict)?;
            let mut tool =
                json!({"name": name, "description": description, "input_schema": input_schema});
            if strict {
                tool["strict"] = Value::Bool(true);
            }
            // "eager_input_streaming": the arguments are streamed as written, unbuffered and
            // not checked to be valid JSON (they are checked here as they arrive).
            if def.streams_args() {
                tool["eager_input_streaming"] = Value::Bool(true);
            }
            // "input_examples": example inputs for the tool, each matching its schema.
            let examples = valid_examples(def);
            if !examples.is_empty() {
                tool["input_examples"] = Value::Array(examples);
            }
            Ok(tool)
        }
        Dialect::Gemini => gemini::declaration(def, &name),
        Dialect::Mcp => Ok(mcp::tool(def)),
    }
}

/// Wraps the tools' JSON the way each provider's request takes it, checking per-request limits.
pub(crate) fn export_all(dialect: Dialect, defs: &[&ToolDefinition]) -> Result<Value, ExportError> {
    let exported = defs
        .iter()
        .map(|def| def.export(dialect))
        .collect::<Result<Vec<&Value>, ExportError>>()?;
    if dialect == (Dialect::Anthropic { strict: true }) {
        anthropic::check_request_limits(&exported)?;
    }
    let tools: Vec<Value> = exported.into_iter().cloned().collect();
    match dialect {
        Dialect::OpenAiChat { .. }
        | Dialect::OpenAiResponses { .. }
        | Dialect::Anthropic { .. } => Ok(Value::Array(tools)),
        Dialect::Gemini => Ok(json!({ "functionDeclarations": tools })),
        Dialect::Mcp => Ok(json!({ "tools": tools })),
    }
}

/// [`export_all`] as JSON text, joined from each definition's cached text: no value is
/// cloned or serialized again.
pub(crate) fn export_all_text(
    dialect: Dialect,
    defs: &[&ToolDefinition],
) -> Result<String, ExportError> {
    if dialect == (Dialect::Anthropic { strict: true }) {
        let exported = defs
            .iter()
            .map(|def| def.export(dialect))
            .collect::<Result<Vec<&Value>, ExportError>>()?;
        anthropic::check_request_limits(&exported)?;
    }
    let texts = defs
        .iter()
        .map(|def| def.export_text(dialect))
        .collect::<Result<Vec<&str>, ExportError>>()?;
    let (open, close) = match dialect {
        Dialect::OpenAiChat { .. }
        | Dialect::OpenAiResponses { .. }
        | Dialect::Anthropic { .. } => ("[", "]"),
        Dialect::Gemini => (r#"{"functionDeclarations":["#, "]}"),
        Dialect::Mcp => (r#"{"tools":["#, "]}"),
    };
    let size = texts.iter().map(|t| t.len() + 1).sum::<usize>() + open.len() + close.len();
    let mut out = String::with_capacity(size);
    out.push_str(open);
    for (i, text) in texts.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(text);
    }
    out.push_str(close);
    Ok(out)
}

/// Parsing each dialect's calls, in the dialect's own file.
impl ToolCall {
    /// Reads every tool call from a provider's response.
    ///
    /// Accepts the whole response or the part that holds the calls:
    /// - OpenAI Chat: a completion (`choices[].message.tool_calls`), a message, or the
    ///   `tool_calls` array (`arguments` is a JSON string);
    /// - OpenAI Responses: a response (`output`) or its items; `function_call` items;
    /// - Anthropic: a message (`content`) or its blocks; `tool_use` blocks;
    /// - Gemini: a response (`candidates[].content.parts`), a content, or its parts;
    ///   `functionCall` parts;
    /// - MCP: a `tools/call` request, or its `params`.
    ///
    /// # Errors
    ///
    /// [`CallParseError`] saying what is missing where, for input of the wrong shape.
    pub fn parse(dialect: Dialect, response: &Value) -> Result<Vec<Self>, CallParseError> {
        match dialect {
            Dialect::OpenAiChat { .. } => openai::parse_chat(response),
            Dialect::OpenAiResponses { .. } => openai::parse_responses(response),
            Dialect::Anthropic { .. } => anthropic::parse(response),
            Dialect::Gemini => gemini::parse(response),
            Dialect::Mcp => mcp::parse(response),
        }
    }
}

/// Encodes a call's outcome the way `dialect` takes tool results back.
///
/// - OpenAI Chat: a `{"role": "tool", "tool_call_id", "content"}` message;
/// - OpenAI Responses: a `{"type": "function_call_output", "call_id", "output"}` item;
/// - Anthropic: a `{"type": "tool_result", "tool_use_id", "content", "is_error"}` block;
/// - Gemini: a `{"functionResponse": {"name", "id", "response"}}` part, with the data under
///   `output` or the error under `error`;
/// - MCP: a `CallToolResult`: the envelope as text content, `structuredContent` when the tool
///   has an object output schema, and `isError` for failed calls (bad arguments included).
///
/// OpenAI's and Anthropic's text is the envelope itself, so the model reads the same shape for
/// success and failure. `def` is the called tool's definition, when known.
///
/// ```
/// use toolsmith::serde_json::json;
/// use toolsmith::{Dialect, ToolCall, ToolError, ToolOutcome};
/// use toolsmith::provider::encode_result;
///
/// let call = ToolCall { id: Some("toolu_1".into()), name: "get_weather".into(), arguments: json!({}) };
/// let failed = ToolOutcome::from(ToolError::not_found("No such city."));
/// let block = encode_result(Dialect::Anthropic { strict: false }, &call, &failed, None);
/// assert_eq!(block["type"], "tool_result");
/// assert_eq!(block["is_error"], true);
/// ```
#[must_use]
pub fn encode_result(
    dialect: Dialect,
    call: &ToolCall,
    outcome: &ToolOutcome,
    def: Option<&ToolDefinition>,
) -> Value {
    let id = || call.id.clone().unwrap_or_default();
    if let Some(parts) = crate::output::content_parts(outcome, def) {
        return rich(dialect, call, outcome.for_model(), &parts);
    }
    // The model reads the view of a result that has one; the value is the program's, and
    // only MCP has a place for it (`structuredContent`).
    let model = outcome.for_model();
    match dialect {
        Dialect::OpenAiChat { .. } => openai::encode_chat(id(), model.to_json()),
        Dialect::OpenAiResponses { .. } => openai::encode_responses(id(), model.to_json()),
        Dialect::Anthropic { .. } => anthropic::encode(id(), model.to_json(), model),
        Dialect::Gemini => gemini::encode(call, model),
        Dialect::Mcp => mcp::encode(outcome, def),
    }
}

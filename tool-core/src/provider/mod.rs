//! Provider dialects: one tool definition exported as each provider wants it, their tool calls
//! parsed, and results encoded back.
//!
//! Each dialect's schema is derived from the canonical JSON Schema (2020-12) by a transform in
//! the dialect's own file. A constraint a dialect cannot carry is written into the property's
//! description in plain words; the runtime keeps enforcing it. A tool a dialect cannot express
//! at all is an [`ExportError`] naming the tool, the place in the schema and the reason.

mod anthropic;
mod calls;
mod gemini;
pub(crate) mod mcp;
mod openai;
mod transform;

use serde_json::{Value, json};

pub use calls::{CallParseError, ToolCall};

use crate::definition::ToolDefinition;
pub use crate::dialect::{Dialect, ExportError, UnknownDialect};

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
            Ok(tool)
        }
        Dialect::Gemini => gemini::declaration(def, &name),
        Dialect::Mcp => Ok(mcp::tool(def)),
    }
}

/// A schema without its `$schema` keyword.
pub(crate) fn without_dialect(schema: &Value) -> Value {
    let mut schema = schema.clone();
    if let Value::Object(map) = &mut schema {
        map.shift_remove("$schema");
    }
    schema
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

pub use calls::encode_result;

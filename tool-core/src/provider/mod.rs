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

use std::fmt;
use std::str::FromStr;

use serde_json::{Value, json};

pub use calls::{CallParseError, ToolCall};

use crate::tool::ToolDefinition;

/// A provider's tool format.
///
/// ```
/// use toolsmith::Dialect;
/// let dialect: Dialect = "openai-strict".parse().unwrap();
/// assert_eq!(dialect, Dialect::OpenAiChat { strict: true });
/// assert_eq!(dialect.to_string(), "openai-strict");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// OpenAI Chat Completions: `{"type":"function","function":{...}}`.
    OpenAiChat {
        /// Structured Outputs: every property required, closed objects, a schema subset.
        strict: bool,
    },
    /// OpenAI Responses: the flat `{"type":"function","name",...}`, `strict` always written.
    OpenAiResponses {
        /// As for Chat; Responses treats an omitted `strict` as `true`, so it is always written.
        strict: bool,
    },
    /// Anthropic Messages: `{"name","description","input_schema"}`.
    Anthropic {
        /// Strict tool use: closed objects, no numeric or length constraints, no recursion.
        strict: bool,
    },
    /// Google Gemini `functionDeclarations`, with the OpenAPI-subset `parameters`.
    Gemini,
    /// Model Context Protocol 2025-11-25 `Tool`.
    Mcp,
}

impl Dialect {
    /// Every dialect, in the order of their names.
    pub const ALL: [Self; 8] = [
        Self::OpenAiChat { strict: false },
        Self::OpenAiChat { strict: true },
        Self::OpenAiResponses { strict: false },
        Self::OpenAiResponses { strict: true },
        Self::Anthropic { strict: false },
        Self::Anthropic { strict: true },
        Self::Gemini,
        Self::Mcp,
    ];

    /// The dialect's name: `openai`, `openai-strict`, `openai-responses`,
    /// `openai-responses-strict`, `anthropic`, `anthropic-strict`, `gemini`, `mcp`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::OpenAiChat { strict: false } => "openai",
            Self::OpenAiChat { strict: true } => "openai-strict",
            Self::OpenAiResponses { strict: false } => "openai-responses",
            Self::OpenAiResponses { strict: true } => "openai-responses-strict",
            Self::Anthropic { strict: false } => "anthropic",
            Self::Anthropic { strict: true } => "anthropic-strict",
            Self::Gemini => "gemini",
            Self::Mcp => "mcp",
        }
    }

    pub(crate) const fn index(self) -> usize {
        match self {
            Self::OpenAiChat { strict: false } => 0,
            Self::OpenAiChat { strict: true } => 1,
            Self::OpenAiResponses { strict: false } => 2,
            Self::OpenAiResponses { strict: true } => 3,
            Self::Anthropic { strict: false } => 4,
            Self::Anthropic { strict: true } => 5,
            Self::Gemini => 6,
            Self::Mcp => 7,
        }
    }

    /// How a tool's name is written for this provider. OpenAI and Anthropic allow
    /// `[A-Za-z0-9_-]`, so `calendar.create_event` becomes `calendar_create_event`; Gemini also
    /// allows `.` and `:` but must start with a letter or `_`; MCP takes the name as it is.
    ///
    /// ```
    /// use toolsmith::Dialect;
    /// assert_eq!(Dialect::OpenAiChat { strict: true }.tool_name("calendar.create_event"), "calendar_create_event");
    /// assert_eq!(Dialect::Gemini.tool_name("calendar.create_event"), "calendar.create_event");
    /// assert_eq!(Dialect::Mcp.tool_name("calendar.create_event"), "calendar.create_event");
    /// ```
    #[must_use]
    pub fn tool_name(self, name: &str) -> String {
        match self {
            Self::OpenAiChat { .. } | Self::OpenAiResponses { .. } | Self::Anthropic { .. } => name
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect(),
            Self::Gemini => {
                let mapped: String = name
                    .chars()
                    .map(|c| {
                        if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-') {
                            c
                        } else {
                            '_'
                        }
                    })
                    .collect();
                if mapped.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
                    mapped
                } else {
                    format!("_{mapped}")
                }
            }
            Self::Mcp => name.to_owned(),
        }
    }

    /// The longest tool name the provider accepts.
    #[must_use]
    pub const fn max_name_len(self) -> usize {
        match self {
            Self::Mcp => 128,
            _ => 64,
        }
    }

    /// Whether the dialect has a strict, constrained-decoding mode switched on.
    #[must_use]
    pub const fn is_strict(self) -> bool {
        matches!(
            self,
            Self::OpenAiChat { strict: true }
                | Self::OpenAiResponses { strict: true }
                | Self::Anthropic { strict: true }
        )
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown dialect name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownDialect(pub String);

impl fmt::Display for UnknownDialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = Dialect::ALL.iter().map(|d| d.name()).collect();
        write!(
            f,
            "unknown dialect `{}`; expected one of {}",
            self.0,
            names.join(", ")
        )
    }
}

impl std::error::Error for UnknownDialect {}

impl FromStr for Dialect {
    type Err = UnknownDialect;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|d| d.name() == s)
            .ok_or_else(|| UnknownDialect(s.to_owned()))
    }
}

/// A tool, or a set of tools, that a dialect cannot express.
///
/// ```
/// # use toolsmith::ExportError;
/// let err = ExportError::new("count_words", "openai-strict", "/properties/counts", "an open map cannot be strict");
/// assert_eq!(
///     err.to_string(),
///     "tool `count_words` cannot be exported for openai-strict: at /properties/counts: an open map cannot be strict"
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportError {
    /// The tool's name (empty for a limit on the whole request).
    pub tool: String,
    /// The dialect's name.
    pub dialect: &'static str,
    /// JSON pointer into the tool's canonical input schema (empty for the whole tool).
    pub path: String,
    /// Why, and what to do instead.
    pub reason: String,
}

impl ExportError {
    /// An error for `tool` at `path`.
    pub fn new(
        tool: impl Into<String>,
        dialect: &'static str,
        path: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        Self {
            tool: tool.into(),
            dialect,
            path: path.into(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for ExportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.tool.is_empty() {
            write!(
                f,
                "the tools cannot be exported together for {}: ",
                self.dialect
            )?;
        } else {
            write!(
                f,
                "tool `{}` cannot be exported for {}: ",
                self.tool, self.dialect
            )?;
        }
        if !self.path.is_empty() {
            write!(f, "at {}: ", self.path)?;
        }
        f.write_str(&self.reason)
    }
}

impl std::error::Error for ExportError {}

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

//! The provider formats a definition is exported in, and why an export can fail: plain data,
//! so that a definition can cache its exports without knowing how they are made.

use std::fmt;
use std::str::FromStr;

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

    /// The provider and API the dialect is for, whatever its strictness: `"openai"` (Chat
    /// Completions), `"openai-responses"`, `"anthropic"`, `"gemini"` or `"mcp"`.
    ///
    /// ```
    /// use toolsmith::Dialect;
    /// assert_eq!(Dialect::Anthropic { strict: true }.provider(), "anthropic");
    /// assert_eq!(Dialect::OpenAiResponses { strict: true }.provider(), "openai-responses");
    /// ```
    #[must_use]
    pub const fn provider(self) -> &'static str {
        match self {
            Self::OpenAiChat { .. } => "openai",
            Self::OpenAiResponses { .. } => "openai-responses",
            Self::Anthropic { .. } => "anthropic",
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

/// Written as its name (`"anthropic"`, `"openai-strict"`), as [`Display`](fmt::Display) does.
impl serde::Serialize for Dialect {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Dialect {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// A tool, or a set of tools, that a dialect cannot express.
///
/// ```
/// # use toolsmith::provider::ExportError;
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

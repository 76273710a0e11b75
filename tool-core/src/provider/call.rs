//! A tool call as every dialect parses it, and the reader the dialects parse with.

use std::fmt;

use serde_json::{Map, Value};

use crate::arguments::Arguments;
use crate::dialect::Dialect;

/// One tool call a model asked for.
///
/// ```
/// use toolsmith::serde_json::json;
/// use toolsmith::{Dialect, ToolCall};
///
/// let response = json!({"content": [
///     {"type": "text", "text": "Let me check."},
///     {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}
/// ]});
/// let calls = ToolCall::parse(Dialect::Anthropic { strict: false }, &response).unwrap();
/// assert_eq!(calls, [ToolCall { id: Some("toolu_1".into()), name: "get_weather".into(), arguments: json!({"city": "Paris"}) }]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ToolCall {
    /// The provider's id for the call, echoed in the result (`None` where the provider has none).
    pub id: Option<String>,
    /// The tool's name as the provider wrote it (see [`ProviderToolbox::run`](crate::ProviderToolbox::run)
    /// for the mapping back to the registered name).
    pub name: String,
    /// The arguments: an object, or a JSON string holding one (OpenAI).
    pub arguments: Value,
}

impl ToolCall {
    /// The arguments in the form [`Toolbox::call`](crate::Toolbox::call) takes.
    #[must_use]
    pub fn arguments(&self) -> Arguments<'_> {
        Arguments::from(&self.arguments)
    }
}

/// A response that does not hold tool calls in the provider's shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallParseError {
    /// The dialect's name.
    pub dialect: &'static str,
    /// JSON pointer into the response.
    pub path: String,
    /// What was expected there.
    pub expected: String,
}

impl fmt::Display for CallParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "not a {} tool call: expected {} at `{}`",
            self.dialect, self.expected, self.path
        )
    }
}

impl std::error::Error for CallParseError {}

pub(crate) struct Reader {
    pub(crate) dialect: Dialect,
}

impl Reader {
    pub(crate) fn error(&self, path: &str, expected: &str) -> CallParseError {
        CallParseError {
            dialect: self.dialect.name(),
            path: path.to_owned(),
            expected: expected.to_owned(),
        }
    }

    pub(crate) fn object<'v>(
        &self,
        v: &'v Value,
        path: &str,
    ) -> Result<&'v Map<String, Value>, CallParseError> {
        v.as_object().ok_or_else(|| self.error(path, "an object"))
    }

    pub(crate) fn string(
        &self,
        v: &Value,
        key: &str,
        path: &str,
    ) -> Result<String, CallParseError> {
        v.get(key)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| self.error(&format!("{path}/{key}"), "a string"))
    }

    pub(crate) fn array<'v>(
        &self,
        v: &'v Value,
        path: &str,
    ) -> Result<&'v Vec<Value>, CallParseError> {
        v.as_array().ok_or_else(|| self.error(path, "an array"))
    }
}

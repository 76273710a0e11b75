//! Tool calls in (from each provider's response) and results out (in each provider's shape).

use std::fmt;

use serde_json::{Map, Value, json};

use super::Dialect;
use crate::arguments::Arguments;
use crate::definition::ToolDefinition;
use crate::outcome::ToolOutcome;

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
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolCall {
    /// The provider's id for the call, echoed in the result (`None` where the provider has none).
    pub id: Option<String>,
    /// The tool's name as the provider wrote it (see [`Toolbox::run`](crate::Toolbox::run) for
    /// the mapping back to the registered name).
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
            Dialect::OpenAiChat { .. } => openai_chat(response),
            Dialect::OpenAiResponses { .. } => openai_responses(response),
            Dialect::Anthropic { .. } => anthropic(response),
            Dialect::Gemini => gemini(response),
            Dialect::Mcp => mcp(response),
        }
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

struct Reader {
    dialect: Dialect,
}

impl Reader {
    fn error(&self, path: &str, expected: &str) -> CallParseError {
        CallParseError {
            dialect: self.dialect.name(),
            path: path.to_owned(),
            expected: expected.to_owned(),
        }
    }

    fn object<'v>(
        &self,
        v: &'v Value,
        path: &str,
    ) -> Result<&'v Map<String, Value>, CallParseError> {
        v.as_object().ok_or_else(|| self.error(path, "an object"))
    }

    fn string(&self, v: &Value, key: &str, path: &str) -> Result<String, CallParseError> {
        v.get(key)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| self.error(&format!("{path}/{key}"), "a string"))
    }

    fn array<'v>(&self, v: &'v Value, path: &str) -> Result<&'v Vec<Value>, CallParseError> {
        v.as_array().ok_or_else(|| self.error(path, "an array"))
    }
}

fn openai_chat(response: &Value) -> Result<Vec<ToolCall>, CallParseError> {
    let r = Reader {
        dialect: Dialect::OpenAiChat { strict: false },
    };
    let mut lists: Vec<(String, &Value)> = Vec::new();
    if let Some(choices) = response.get("choices") {
        for (i, choice) in r.array(choices, "/choices")?.iter().enumerate() {
            if let Some(calls) = choice
                .pointer("/message/tool_calls")
                .filter(|c| !c.is_null())
            {
                lists.push((format!("/choices/{i}/message/tool_calls"), calls));
            }
        }
    } else if let Some(calls) = response.get("tool_calls") {
        if !calls.is_null() {
            lists.push(("/tool_calls".into(), calls));
        }
    } else if response.is_array() {
        lists.push((String::new(), response));
    } else {
        return Err(r.error("", "a chat completion, a message or a `tool_calls` array"));
    }
    let mut out = Vec::new();
    for (path, list) in lists {
        for (i, call) in r.array(list, &path)?.iter().enumerate() {
            let at = format!("{path}/{i}");
            r.object(call, &at)?;
            if call
                .get("type")
                .and_then(Value::as_str)
                .is_some_and(|t| t != "function")
            {
                continue; // custom tools are not function calls
            }
            let function = call
                .get("function")
                .ok_or_else(|| r.error(&format!("{at}/function"), "an object"))?;
            let arguments = function
                .get("arguments")
                .filter(|a| a.is_string() || a.is_object())
                .ok_or_else(|| r.error(&format!("{at}/function/arguments"), "a JSON string"))?;
            out.push(ToolCall {
                id: Some(r.string(call, "id", &at)?),
                name: r.string(function, "name", &format!("{at}/function"))?,
                arguments: arguments.clone(),
            });
        }
    }
    Ok(out)
}

fn openai_responses(response: &Value) -> Result<Vec<ToolCall>, CallParseError> {
    let r = Reader {
        dialect: Dialect::OpenAiResponses { strict: false },
    };
    let (path, items) = match response.get("output") {
        Some(items) => ("/output", items),
        None if response.is_array() => ("", response),
        None if response.get("type").is_some() => {
            return openai_responses(&Value::Array(vec![response.clone()]));
        }
        None => return Err(r.error("", "a response with `output`, or its items")),
    };
    let mut out = Vec::new();
    for (i, item) in r.array(items, path)?.iter().enumerate() {
        let at = format!("{path}/{i}");
        r.object(item, &at)?;
        if item.get("type").and_then(Value::as_str) != Some("function_call") {
            continue;
        }
        let arguments = item
            .get("arguments")
            .filter(|a| a.is_string() || a.is_object())
            .ok_or_else(|| r.error(&format!("{at}/arguments"), "a JSON string"))?;
        out.push(ToolCall {
            id: Some(r.string(item, "call_id", &at)?),
            name: r.string(item, "name", &at)?,
            arguments: arguments.clone(),
        });
    }
    Ok(out)
}

fn anthropic(response: &Value) -> Result<Vec<ToolCall>, CallParseError> {
    let r = Reader {
        dialect: Dialect::Anthropic { strict: false },
    };
    let (path, blocks) = match response.get("content") {
        Some(blocks) => ("/content", blocks),
        None if response.is_array() => ("", response),
        None => return Err(r.error("", "a message with `content`, or its blocks")),
    };
    let mut out = Vec::new();
    for (i, block) in r.array(blocks, path)?.iter().enumerate() {
        let at = format!("{path}/{i}");
        r.object(block, &at)?;
        if block.get("type").and_then(Value::as_str) != Some("tool_use") {
            continue;
        }
        let input = block
            .get("input")
            .filter(|v| v.is_object())
            .ok_or_else(|| r.error(&format!("{at}/input"), "an object"))?;
        out.push(ToolCall {
            id: Some(r.string(block, "id", &at)?),
            name: r.string(block, "name", &at)?,
            arguments: input.clone(),
        });
    }
    Ok(out)
}

fn gemini(response: &Value) -> Result<Vec<ToolCall>, CallParseError> {
    let r = Reader {
        dialect: Dialect::Gemini,
    };
    let mut lists: Vec<(String, &Value)> = Vec::new();
    if let Some(candidates) = response.get("candidates") {
        for (i, candidate) in r.array(candidates, "/candidates")?.iter().enumerate() {
            if let Some(parts) = candidate.pointer("/content/parts") {
                lists.push((format!("/candidates/{i}/content/parts"), parts));
            }
        }
    } else if let Some(parts) = response.get("parts") {
        lists.push(("/parts".into(), parts));
    } else if response.is_array() {
        lists.push((String::new(), response));
    } else {
        return Err(r.error(
            "",
            "a response with `candidates`, a content with `parts`, or its parts",
        ));
    }
    let mut out = Vec::new();
    for (path, parts) in lists {
        for (i, part) in r.array(parts, &path)?.iter().enumerate() {
            let at = format!("{path}/{i}");
            r.object(part, &at)?;
            let Some(call) = part.get("functionCall") else {
                continue;
            };
            let at = format!("{at}/functionCall");
            r.object(call, &at)?;
            let args = match call.get("args") {
                None | Some(Value::Null) => json!({}),
                Some(args @ Value::Object(_)) => args.clone(),
                Some(_) => return Err(r.error(&format!("{at}/args"), "an object")),
            };
            out.push(ToolCall {
                id: call.get("id").and_then(Value::as_str).map(str::to_owned),
                name: r.string(call, "name", &at)?,
                arguments: args,
            });
        }
    }
    Ok(out)
}

fn mcp(request: &Value) -> Result<Vec<ToolCall>, CallParseError> {
    let r = Reader {
        dialect: Dialect::Mcp,
    };
    let (path, params, id) = match request.get("method") {
        Some(method) => {
            if method != "tools/call" {
                return Err(r.error("/method", "\"tools/call\""));
            }
            let params = request
                .get("params")
                .ok_or_else(|| r.error("/params", "an object"))?;
            let id = request.get("id").map(|id| match id {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            });
            ("/params", params, id)
        }
        None => ("", request, None),
    };
    r.object(params, path)?;
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => json!({}),
        Some(args @ Value::Object(_)) => args.clone(),
        Some(_) => return Err(r.error(&format!("{path}/arguments"), "an object")),
    };
    Ok(vec![ToolCall {
        id,
        name: r.string(params, "name", path)?,
        arguments,
    }])
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
    let id = call.id.clone().unwrap_or_default();
    let envelope = outcome.to_json();
    match dialect {
        Dialect::OpenAiChat { .. } => {
            json!({"role": "tool", "tool_call_id": id, "content": envelope})
        }
        Dialect::OpenAiResponses { .. } => {
            json!({"type": "function_call_output", "call_id": id, "output": envelope})
        }
        Dialect::Anthropic { .. } => json!({
            "type": "tool_result",
            "tool_use_id": id,
            "content": [{"type": "text", "text": envelope}],
            "is_error": !outcome.is_success(),
        }),
        Dialect::Gemini => {
            let response = match (outcome.data(), outcome.error()) {
                (Some(data), _) => {
                    json!({"output": serde_json::from_str::<Value>(data.get()).unwrap_or(Value::Null)})
                }
                (None, err) => json!({ "error": err }),
            };
            let mut part = json!({"name": call.name, "response": response});
            if let Some(id) = &call.id {
                part["id"] = Value::String(id.clone());
            }
            json!({ "functionResponse": part })
        }
        Dialect::Mcp => {
            let parts = super::mcp::CallResult::new(outcome, def);
            let mut result = json!({
                "content": [{"type": "text", "text": parts.text}],
                "isError": parts.is_error,
            });
            if let Some(structured) = parts.structured {
                result["structuredContent"] = structured;
            }
            result
        }
    }
}

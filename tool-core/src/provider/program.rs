//! Programmatic tool calling, where the provider runs the program: which tools its program
//! may call (the request), which calls a program made (the response), and the answer a
//! program gets (the result).
//!
//! - Anthropic: a tool names the code execution tool in `allowed_callers`, and the code
//!   execution tool is in the request; a call the program made is a `tool_use` block whose
//!   `caller` names the code execution (`{"type": "code_execution_20260120", "tool_id": ...}`).
//! - OpenAI Responses: a function tool has `allowed_callers: ["programmatic"]` and its
//!   `output_schema`, beside the `{"type": "programmatic_tool_calling"}` tool; the response
//!   holds the `program` item and each `function_call` the program made with
//!   `caller: {"type": "program", "caller_id": <the program's call id>}`.
//!
//! A program's call is answered into the program, not the conversation: the result is the
//! tool's value as JSON text (what its output schema describes), and an error is the
//! envelope the model would read, marked as an error. The OpenAI answer carries the call's
//! `caller` back.

use serde_json::{Value, json};

use crate::dialect::Dialect;
use crate::outcome::ToolOutcome;

use super::call::ToolCall;
use super::hosted::HostedTool;

/// The version of Anthropic's code execution tool whose programs call tools: a request with
/// tools callable from a program sends this version (Anthropic's programmatic tool calling
/// requires it, and its SDK types a call's `caller` for it).
pub(crate) const ANTHROPIC_PROGRAM_CODE_EXECUTION: &str = "code_execution_20260120";

/// One call a program the provider ran made.
///
/// ```
/// use toolsmith::provider::program_calls;
/// use toolsmith::serde_json::json;
/// use toolsmith::Dialect;
///
/// let response = json!({"output": [
///     {"type": "program", "id": "cm_1", "call_id": "call_prog", "code": "await tools.getInventory({sku: 'a'})", "fingerprint": "f"},
///     {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "getInventory", "arguments": "{\"sku\":\"a\"}",
///      "caller": {"type": "program", "caller_id": "call_prog"}}
/// ]});
/// let calls = program_calls(Dialect::OpenAiResponses { strict: true }, &response);
/// assert_eq!(calls[0].call_id, "call_1");
/// assert_eq!(calls[0].program_id, "call_prog");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProgramCall {
    /// The call's id (Anthropic's `tool_use` id, OpenAI's `call_id`).
    pub call_id: String,
    /// The program's id: Anthropic's code execution `tool_id`, OpenAI's program `call_id`.
    pub program_id: String,
    /// The `caller` object as the provider wrote it, echoed in the answer where the
    /// provider asks for it.
    pub caller: Value,
}

impl ProgramCall {
    /// The calls kept as `call id → caller` (an agent run's waiting turn).
    pub(crate) fn all(callers: &std::collections::BTreeMap<String, Value>) -> Vec<Self> {
        callers
            .iter()
            .map(|(call_id, caller)| Self {
                call_id: call_id.clone(),
                program_id: caller["tool_id"]
                    .as_str()
                    .or(caller["caller_id"].as_str())
                    .unwrap_or_default()
                    .to_owned(),
                caller: caller.clone(),
            })
            .collect()
    }
}

/// The calls in `response` that a program the provider ran made (none for a dialect without
/// programmatic tool calling, and none for a call the model made itself).
#[must_use]
pub fn program_calls(dialect: Dialect, response: &Value) -> Vec<ProgramCall> {
    let (items, kind) = match dialect {
        Dialect::Anthropic { .. } => (response.get("content"), "tool_use"),
        Dialect::OpenAiResponses { .. } => (response.get("output"), "function_call"),
        _ => return Vec::new(),
    };
    let Some(items) = items.and_then(Value::as_array) else {
        return Vec::new();
    };
    items
        .iter()
        .filter(|item| item["type"] == kind)
        .filter_map(|item| {
            let caller = item.get("caller")?;
            let program_id = match dialect {
                Dialect::Anthropic { .. } if caller["type"] != "direct" => {
                    caller["tool_id"].as_str()?
                }
                Dialect::OpenAiResponses { .. } if caller["type"] == "program" => {
                    caller["caller_id"].as_str()?
                }
                _ => return None,
            };
            let call_id = match dialect {
                Dialect::Anthropic { .. } => item["id"].as_str()?,
                _ => item["call_id"].as_str()?,
            };
            Some(ProgramCall {
                call_id: call_id.to_owned(),
                program_id: program_id.to_owned(),
                caller: caller.clone(),
            })
        })
        .collect()
}

/// The answer to a call a program made: the tool's value as JSON text, or the error's
/// envelope marked as an error.
pub(crate) fn encode(
    dialect: Dialect,
    call: &ToolCall,
    outcome: &ToolOutcome,
    caller: &Value,
) -> Value {
    let id = call.id.clone().unwrap_or_default();
    let text = match crate::output::data_for_program(outcome) {
        Some(data) => data.into_owned(),
        None => outcome.for_model().to_json(),
    };
    match dialect {
        Dialect::Anthropic { .. } => json!({
            "type": "tool_result",
            "tool_use_id": id,
            "content": [{"type": "text", "text": text}],
            "is_error": !outcome.is_success(),
        }),
        _ => json!({
            "type": "function_call_output",
            "call_id": id,
            "output": text,
            "caller": caller,
        }),
    }
}

/// OpenAI's tool that lets a program call tools, after the others (with its entry in the
/// block's list of tools), when the request marks tools for programs.
pub(crate) fn push_program_tool(
    dialect: Dialect,
    programmatic: &[String],
    tools: &mut Vec<(String, String)>,
    values: &mut Vec<Value>,
) {
    if programmatic.is_empty() || !matches!(dialect, Dialect::OpenAiResponses { .. }) {
        return;
    }
    let tool = json!({"type": "programmatic_tool_calling"});
    tools.push(("programmatic_tool_calling".to_owned(), tool.to_string()));
    values.push(tool);
}

/// Whether Anthropic's code execution tool must join a request that marks `programmatic`
/// tools and has the `hosted` tools: Anthropic's programs run in it.
pub(crate) fn needs_code_execution(
    dialect: Dialect,
    programmatic: &[String],
    hosted: &[HostedTool],
) -> bool {
    matches!(dialect, Dialect::Anthropic { .. })
        && !programmatic.is_empty()
        && !hosted
            .iter()
            .any(|h| matches!(h, HostedTool::CodeExecution(_)))
}

/// Anthropic's code execution at the version programs call tools from, when the request
/// marks tools for programs.
pub(crate) fn code_execution_version(
    dialect: Dialect,
    programmatic: &[String],
    entries: &mut [Value],
) {
    if !matches!(dialect, Dialect::Anthropic { .. }) || programmatic.is_empty() {
        return;
    }
    for entry in entries {
        if entry["name"] == "code_execution" {
            entry["type"] = json!(ANTHROPIC_PROGRAM_CODE_EXECUTION);
        }
    }
}

/// What a tool callable from a program carries in the request: who may call it, and (OpenAI)
/// the shape of its output.
pub(crate) fn mark(dialect: Dialect, tool: &mut Value, output_schema: Option<&Value>, only: bool) {
    let Value::Object(map) = tool else {
        return;
    };
    let program = match dialect {
        Dialect::Anthropic { .. } => ANTHROPIC_PROGRAM_CODE_EXECUTION,
        _ => "programmatic",
    };
    let callers = if only {
        json!([program])
    } else {
        json!(["direct", program])
    };
    map.insert("allowed_callers".into(), callers);
    if let (Dialect::OpenAiResponses { .. }, Some(schema)) = (dialect, output_schema) {
        map.insert("output_schema".into(), schema.clone());
    }
}

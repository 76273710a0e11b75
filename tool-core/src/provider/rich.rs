//! A rich result in the parts each provider takes.

use serde_json::{Value, json};

use super::call::ToolCall;
use crate::dialect::Dialect;
use crate::outcome::ToolOutcome;

/// A rich result ([`Content`](crate::output::Content)) in the parts each provider takes:
/// MCP content blocks; Anthropic text and image blocks; OpenAI Responses `input_text` and
/// `input_image`; OpenAI Chat text parts; Gemini text. A part a provider has no form for is a
/// text line saying what it was. What the output checks said comes first, as text.
pub(crate) fn rich(
    dialect: Dialect,
    call: &ToolCall,
    outcome: &ToolOutcome,
    parts: &[crate::output::Part],
) -> Value {
    use crate::output::{Part, stand_in};
    let id = call.id.clone().unwrap_or_default();
    let notes = match outcome {
        ToolOutcome::Checked(_, notes) => serde_json::to_string(&**notes).ok(),
        _ => None,
    };
    let texts = || notes.iter().cloned().chain(parts.iter().map(stand_in));
    match dialect {
        Dialect::OpenAiChat { .. } => {
            let content: Vec<Value> = texts()
                .map(|text| json!({"type": "text", "text": text}))
                .collect();
            json!({"role": "tool", "tool_call_id": id, "content": content})
        }
        Dialect::OpenAiResponses { .. } => {
            let mut output: Vec<Value> = notes
                .iter()
                .map(|text| json!({"type": "input_text", "text": text}))
                .collect();
            output.extend(parts.iter().map(|part| match part {
                Part::Image { data, mime_type } => json!({
                    "type": "input_image",
                    "image_url": format!("data:{mime_type};base64,{data}"),
                }),
                other => json!({"type": "input_text", "text": stand_in(other)}),
            }));
            json!({"type": "function_call_output", "call_id": id, "output": output})
        }
        Dialect::Anthropic { .. } => {
            let mut content: Vec<Value> = notes
                .iter()
                .map(|text| json!({"type": "text", "text": text}))
                .collect();
            content.extend(parts.iter().map(|part| match part {
                Part::Image { data, mime_type } => json!({
                    "type": "image",
                    "source": {"type": "base64", "media_type": mime_type, "data": data},
                }),
                other => json!({"type": "text", "text": stand_in(other)}),
            }));
            json!({"type": "tool_result", "tool_use_id": id, "content": content, "is_error": false})
        }
        Dialect::Gemini => {
            let text: Vec<String> = texts().collect();
            let mut part = json!({"name": call.name, "response": {"output": text.join("\n")}});
            if let Some(id) = &call.id {
                part["id"] = Value::String(id.clone());
            }
            json!({ "functionResponse": part })
        }
        Dialect::Mcp => {
            let mut content: Vec<Value> = notes
                .iter()
                .map(|text| json!({"type": "text", "text": text}))
                .collect();
            content.extend(parts.iter().filter_map(|p| serde_json::to_value(p).ok()));
            json!({"content": content, "isError": false})
        }
    }
}

//! Model responses as providers write them, for scripted models and provider views.

#![allow(dead_code)]

use serde_json::{Value, json};
use toolsmith::Dialect;

/// An OpenAI Chat completion asking for `calls` (`(id, name, arguments)`).
pub fn chat_calls(calls: &[(&str, &str, Value)]) -> Value {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(id, name, arguments)| {
            json!({"id": id, "type": "function",
            "function": {"name": name, "arguments": arguments.to_string()}})
        })
        .collect();
    json!({"choices": [{"index": 0, "finish_reason": "tool_calls",
        "message": {"role": "assistant", "content": null, "tool_calls": calls}}],
        "usage": {"prompt_tokens": 40, "completion_tokens": 5}})
}

/// An OpenAI Chat completion answering in text.
pub fn chat_said(text: &str) -> Value {
    json!({"choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 6}})
}

/// One response of `dialect` asking for one call of `name` with `arguments`.
pub fn one_call(dialect: Dialect, id: &str, name: &str, arguments: &Value) -> Value {
    match dialect {
        Dialect::OpenAiChat { .. } => chat_calls(&[(id, name, arguments.clone())]),
        Dialect::OpenAiResponses { .. } => json!({"output": [{"type": "function_call",
            "call_id": id, "name": name, "arguments": arguments.to_string()}]}),
        Dialect::Anthropic { .. } => json!({"role": "assistant", "content": [{"type": "tool_use",
            "id": id, "name": name, "input": arguments}], "stop_reason": "tool_use"}),
        _ => json!({"candidates": [{"content": {"role": "model", "parts": [{"functionCall":
            {"name": name, "args": arguments}}]}}]}),
    }
}

/// An Anthropic message asking for `calls` (`(id, name, input)`).
pub fn anthropic_calls(calls: &[(&str, &str, Value)]) -> Value {
    let content: Vec<Value> = calls
        .iter()
        .map(
            |(id, name, input)| json!({"type": "tool_use", "id": id, "name": name, "input": input}),
        )
        .collect();
    json!({"role": "assistant", "content": content, "stop_reason": "tool_use",
           "usage": {"input_tokens": 10, "output_tokens": 1}})
}

/// An Anthropic message answering in text.
pub fn anthropic_said(text: &str) -> Value {
    json!({"role": "assistant", "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
           "usage": {"input_tokens": 10, "output_tokens": 1}})
}

//! A conversation in each provider's shape: the user's message, the model's turn appended
//! as it came, its text answer and the tokens it reports.

use serde_json::{Map, Value, json};

use crate::dialect::Dialect;

/// The key of the request body that holds the conversation.
pub(crate) fn conversation_key(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::OpenAiResponses { .. } => "input",
        Dialect::Gemini => "contents",
        _ => "messages",
    }
}

/// A user message holding `text`.
pub(crate) fn user(dialect: Dialect, text: &str) -> Value {
    match dialect {
        Dialect::Gemini => json!({"role": "user", "parts": [{"text": text}]}),
        _ => json!({"role": "user", "content": text}),
    }
}

/// The model's turn as it goes back into the conversation.
pub(crate) fn assistant(dialect: Dialect, response: &Value) -> Vec<Value> {
    match dialect {
        Dialect::OpenAiChat { .. } => response
            .pointer("/choices/0/message")
            .cloned()
            .into_iter()
            .collect(),
        Dialect::OpenAiResponses { .. } => response
            .get("output")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
        Dialect::Anthropic { .. } => vec![json!({
            "role": "assistant",
            "content": response.get("content").cloned().unwrap_or_else(|| json!([])),
        })],
        Dialect::Gemini => response
            .pointer("/candidates/0/content")
            .cloned()
            .into_iter()
            .collect(),
        Dialect::Mcp => Vec::new(),
    }
}

/// The container a response's code ran in (Anthropic's `container.id`), which the next
/// request names.
pub(crate) fn container(dialect: Dialect, response: &Value) -> Option<String> {
    match dialect {
        Dialect::Anthropic { .. } => response
            .pointer("/container/id")
            .and_then(Value::as_str)
            .map(str::to_owned),
        _ => None,
    }
}

/// The text the model answered with, when it did.
pub(crate) fn text(dialect: Dialect, response: &Value) -> String {
    let texts: Vec<&str> = match dialect {
        Dialect::OpenAiChat { .. } => response
            .pointer("/choices/0/message/content")
            .and_then(Value::as_str)
            .into_iter()
            .collect(),
        Dialect::OpenAiResponses { .. } => response
            .get("output")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|item| item["type"] == "message")
            .filter_map(|item| item["content"].as_array())
            .flatten()
            .filter(|part| part["type"] == "output_text")
            .filter_map(|part| part["text"].as_str())
            .collect(),
        Dialect::Anthropic { .. } => response
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|block| block["type"] == "text")
            .filter_map(|block| block["text"].as_str())
            .collect(),
        Dialect::Gemini => response
            .pointer("/candidates/0/content/parts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|part| part["text"].as_str())
            .collect(),
        Dialect::Mcp => Vec::new(),
    };
    texts.concat()
}

/// The tokens the response reports: `(input, output)`.
pub(crate) fn usage(dialect: Dialect, response: &Value) -> (u64, u64) {
    let read = |pointer: &str| {
        response
            .pointer(pointer)
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    match dialect {
        Dialect::OpenAiChat { .. } => (
            read("/usage/prompt_tokens"),
            read("/usage/completion_tokens"),
        ),
        Dialect::OpenAiResponses { .. } => {
            (read("/usage/input_tokens"), read("/usage/output_tokens"))
        }
        // Cached and cache-writing input tokens are reported apart from the rest.
        Dialect::Anthropic { .. } => (
            read("/usage/input_tokens")
                .saturating_add(read("/usage/cache_creation_input_tokens"))
                .saturating_add(read("/usage/cache_read_input_tokens")),
            read("/usage/output_tokens"),
        ),
        Dialect::Gemini => (
            read("/usageMetadata/promptTokenCount"),
            read("/usageMetadata/candidatesTokenCount")
                .saturating_add(read("/usageMetadata/thoughtsTokenCount")),
        ),
        Dialect::Mcp => (0, 0),
    }
}

/// The request body: the conversation and the tool block's fields.
pub(crate) fn body(dialect: Dialect, messages: Vec<Value>, fields: &Map<String, Value>) -> Value {
    let mut body = Map::with_capacity(fields.len() + 1);
    body.insert(conversation_key(dialect).to_owned(), Value::Array(messages));
    for (key, value) in fields {
        body.insert(key.clone(), value.clone());
    }
    Value::Object(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_and_usage() {
        let anthropic = json!({"content": [{"type": "text", "text": "a"}, {"type": "tool_use"}, {"type": "text", "text": "b"}],
            "usage": {"input_tokens": 10, "cache_read_input_tokens": 5, "output_tokens": 3}});
        let dialect = Dialect::Anthropic { strict: false };
        assert_eq!(text(dialect, &anthropic), "ab");
        assert_eq!(usage(dialect, &anthropic), (15, 3));
        let gemini = json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "hi"}]}}],
            "usageMetadata": {"promptTokenCount": 4, "candidatesTokenCount": 2}});
        assert_eq!(text(Dialect::Gemini, &gemini), "hi");
        assert_eq!(assistant(Dialect::Gemini, &gemini)[0]["role"], "model");
        assert_eq!(usage(Dialect::Gemini, &gemini), (4, 2));
        let responses = json!({"output": [{"type": "reasoning"}, {"type": "message", "content": [{"type": "output_text", "text": "ok"}]}],
            "usage": {"input_tokens": 7, "output_tokens": 1}});
        let dialect = Dialect::OpenAiResponses { strict: true };
        assert_eq!(text(dialect, &responses), "ok");
        assert_eq!(assistant(dialect, &responses).len(), 2);
        assert_eq!(usage(dialect, &responses), (7, 1));
    }
}

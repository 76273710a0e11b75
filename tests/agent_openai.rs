//! The agent loop through async-openai's types: every request the loop makes (the
//! conversation with its tool calls and results, the tool block) is read into
//! `CreateChatCompletionRequest` / `CreateResponse`, and the typed responses come back into
//! the loop.

use std::sync::{Arc, Mutex};

use async_openai::types::chat::{CreateChatCompletionRequest, CreateChatCompletionResponse};
use async_openai::types::responses::{CreateResponse, Response};
use serde_json::{Value, json};
use toolsmith::agent::openai::{Chat, Responses};
use toolsmith::agent::{Agent, Stop};
use toolsmith::provider::{ToolChoice, ToolRequest};
use toolsmith::{Dialect, ToolContext, Toolbox, tool};

/// Gets the current weather in a city. Read-only. Not for forecasts.
#[tool(effect = "read")]
fn get_weather(
    /// The city.
    #[arg(length(min = 1, max = 60))]
    city: String,
    /// The unit, when the user asked for one.
    #[arg(length(max = 20))]
    unit: Option<String>,
) -> String {
    format!("21 °C in {city} ({})", unit.unwrap_or_default())
}

fn chat_response(message: Value) -> CreateChatCompletionResponse {
    serde_json::from_value(json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-5-mini",
        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": null, "message": message}],
        "usage": {"prompt_tokens": 30, "completion_tokens": 7, "total_tokens": 37}
    }))
    .unwrap()
}

#[tokio::test]
async fn chat_completions_through_async_openai_types() {
    let seen: Arc<Mutex<Vec<CreateChatCompletionRequest>>> = Arc::default();
    let log = Arc::clone(&seen);
    let model = Chat::new("gpt-5-mini", move |request: CreateChatCompletionRequest| {
        let turn = {
            let mut log = log.lock().unwrap();
            log.push(request);
            log.len()
        };
        async move {
            let message = if turn == 1 {
                json!({"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\",\"unit\":null}"}}]})
            } else {
                json!({"role": "assistant", "content": "It is 21 °C in Oslo."})
            };
            Ok::<_, String>(chat_response(message))
        }
    });
    let agent = Agent::new(
        Toolbox::new().with(GetWeather),
        Dialect::OpenAiChat { strict: true },
        model,
    )
    .with_request(ToolRequest {
        choice: ToolChoice::Required,
        ..ToolRequest::default()
    });
    let mut state = agent.start("Weather in Oslo?");
    let stop = agent.run(&mut state, &ToolContext::new()).await.unwrap();
    assert_eq!(stop, Stop::Answered("It is 21 °C in Oslo.".into()));
    assert_eq!(state.usage().total(), 74);

    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    let first = serde_json::to_value(&seen[0]).unwrap();
    assert_eq!(first["model"], "gpt-5-mini");
    assert_eq!(first["tool_choice"], "required");
    assert_eq!(first["tools"][0]["function"]["strict"], true);
    // The second request holds the assistant's call and the tool's answer, typed.
    let second = serde_json::to_value(&seen[1]).unwrap();
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[1]["tool_calls"][0]["id"], "call_1");
    assert_eq!(messages[2]["role"], "tool");
    assert_eq!(messages[2]["tool_call_id"], "call_1");
    assert!(second.get("tool_choice").is_none());
}

fn response(output: Value) -> Response {
    serde_json::from_value(json!({
        "id": "resp_1", "object": "response", "created_at": 1, "model": "gpt-5-mini",
        "status": "completed", "output": output, "tools": [], "tool_choice": "auto",
        "parallel_tool_calls": true,
        "usage": {"input_tokens": 20, "output_tokens": 5, "total_tokens": 25,
                  "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens_details": {"reasoning_tokens": 0}}
    }))
    .unwrap()
}

#[tokio::test]
async fn responses_through_async_openai_types() {
    let seen: Arc<Mutex<Vec<CreateResponse>>> = Arc::default();
    let log = Arc::clone(&seen);
    let model = Responses::new("gpt-5-mini", move |request: CreateResponse| {
        let turn = {
            let mut log = log.lock().unwrap();
            log.push(request);
            log.len()
        };
        async move {
            let output = if turn == 1 {
                json!([{"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather",
                        "arguments": "{\"city\":\"Oslo\",\"unit\":null}", "status": "completed"}])
            } else {
                json!([{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                        "content": [{"type": "output_text", "text": "21 °C in Oslo.", "annotations": []}]}])
            };
            Ok::<_, String>(response(output))
        }
    });
    let agent = Agent::new(
        Toolbox::new().with(GetWeather),
        Dialect::OpenAiResponses { strict: true },
        model,
    );
    let mut state = agent.start("Weather in Oslo?");
    let stop = agent.run(&mut state, &ToolContext::new()).await.unwrap();
    assert_eq!(stop, Stop::Answered("21 °C in Oslo.".into()));
    let seen = seen.lock().unwrap();
    let second = serde_json::to_value(&seen[1]).unwrap();
    let input = second["input"].as_array().unwrap();
    assert_eq!(input[1]["type"], "function_call");
    assert_eq!(input[2]["type"], "function_call_output");
    assert_eq!(input[2]["call_id"], "call_1");
}

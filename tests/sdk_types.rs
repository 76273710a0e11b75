//! What an agent turn sends back to OpenAI deserializes into the request types of
//! `async-openai`, the most used Rust OpenAI client; the streams `CallStream` reads in tests
//! deserialize into its stream types.

use async_openai::types::chat::{ChatCompletionRequestMessage, CreateChatCompletionStreamResponse};
use async_openai::types::responses::{InputItem, Item, ResponseStreamEvent};
use serde_json::{Value, json};
use toolsmith::{Dialect, ToolContext, Toolbox, tool};

/// Gets the current weather in a city. Read-only. Not for forecasts.
#[tool(name = "weather.get_current", effect = "read")]
fn get_current(
    /// The city.
    #[arg(length(min = 1, max = 60))]
    city: String,
) -> String {
    format!("21 C in {city}")
}

#[tokio::test]
async fn chat_tool_messages_are_async_openai_request_messages() {
    let toolbox = Toolbox::new().with(GetCurrent);
    let completion = json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "weather_get_current", "arguments": "{\"city\":\"Paris\"}"}},
        {"id": "call_2", "type": "function", "function": {"name": "weather_get_current", "arguments": "{\"town\":\"Oslo\"}"}},
        {"id": "call_3", "type": "function", "function": {"name": "weather_get_forecast", "arguments": "{}"}}
    ]}, "finish_reason": "tool_calls"}]});
    let turn = toolbox
        .provider(Dialect::OpenAiChat { strict: true })
        .respond_to(&completion, &ToolContext::new())
        .await
        .unwrap();
    // The whole conversation as the next request sends it: the assistant's message, then ours.
    let mut conversation = vec![json!({"role": "user", "content": "Weather in Paris and Oslo?"})];
    conversation.push(completion["choices"][0]["message"].clone());
    conversation.extend(turn.messages.iter().cloned());
    let parsed: Vec<ChatCompletionRequestMessage> =
        serde_json::from_value(Value::Array(conversation)).unwrap();
    for (i, message) in parsed[2..].iter().enumerate() {
        let ChatCompletionRequestMessage::Tool(tool) = message else {
            panic!("not a tool message: {message:?}");
        };
        assert_eq!(tool.tool_call_id, format!("call_{}", i + 1));
    }
}

#[tokio::test]
async fn responses_outputs_are_async_openai_input_items() {
    let toolbox = Toolbox::new().with(GetCurrent);
    let response = json!({"id": "resp_1", "object": "response", "output": [
        {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "weather_get_current", "arguments": "{\"city\":\"Paris\"}", "status": "completed"},
        {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "weather_get_current", "arguments": "{}", "status": "completed"}
    ]});
    let turn = toolbox
        .provider(Dialect::OpenAiResponses { strict: true })
        .respond_to(&response, &ToolContext::new())
        .await
        .unwrap();
    let mut input: Vec<Value> = vec![json!({"role": "user", "content": "Weather in Paris?"})];
    input.extend(response["output"].as_array().unwrap().iter().cloned());
    input.extend(turn.messages.iter().cloned());
    let items: Vec<InputItem> = serde_json::from_value(Value::Array(input)).unwrap();
    for item in &items[3..] {
        let InputItem::Item(Item::FunctionCallOutput(output)) = item else {
            panic!("not a function_call_output item: {item:?}");
        };
        assert!(
            output
                .call_id
                .as_deref()
                .is_some_and(|id| id.starts_with("call_"))
        );
    }
}

/// The `data:` payloads of a stream fixture.
fn events(file: &str) -> Vec<Value> {
    let path = format!(
        "{}/tests/fixtures/streams/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter(|data| *data != "[DONE]")
        .map(|data| serde_json::from_str(data).unwrap())
        .collect()
}

#[test]
fn the_openai_stream_fixtures_are_async_openai_stream_types() {
    for chunk in events("openai_chat.sse") {
        let parsed: Result<CreateChatCompletionStreamResponse, _> =
            serde_json::from_value(chunk.clone());
        assert!(parsed.is_ok(), "{chunk}: {:?}", parsed.err());
    }
    for event in events("openai_responses.sse") {
        let parsed: Result<ResponseStreamEvent, _> = serde_json::from_value(event.clone());
        assert!(parsed.is_ok(), "{event}: {:?}", parsed.err());
    }
}

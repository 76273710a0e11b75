//! One turn of the agent loop per provider: a whole response in (several calls, one unknown,
//! one invalid), every call run concurrently within the toolbox's limits, and exactly the
//! messages that provider expects next.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use toolsmith::policy::ToolPolicy;
use toolsmith::{Dialect, ErrorCode, ToolCall, ToolContext, Toolbox, tool};

static RUNNING: AtomicUsize = AtomicUsize::new(0);
static MOST: AtomicUsize = AtomicUsize::new(0);

/// Looks up the weather in a city. Read-only. Not for forecasts.
#[tool(name = "weather.get_current", effect = "read")]
async fn current_weather(
    /// The city.
    #[arg(length(min = 1, max = 60))]
    city: String,
) -> Value {
    let now = RUNNING.fetch_add(1, Ordering::SeqCst) + 1;
    MOST.fetch_max(now, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(50)).await;
    RUNNING.fetch_sub(1, Ordering::SeqCst);
    json!({"city": city, "celsius": 21})
}

fn toolbox() -> Toolbox {
    Toolbox::new().with(CurrentWeather)
}

/// The same three calls as each provider sends them: two good ones, one to a tool that does
/// not exist (spelled as the registered name, which the provider would not use), one with a
/// bad argument.
fn responses() -> Vec<(Dialect, Value)> {
    vec![
        (
            Dialect::OpenAiChat { strict: true },
            json!({"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "weather_get_current", "arguments": "{\"city\":\"Paris\"}"}},
                {"id": "call_2", "type": "function", "function": {"name": "weather_get_current", "arguments": "{\"city\":\"Oslo\"}"}},
                {"id": "call_3", "type": "function", "function": {"name": "weather_get_forecast", "arguments": "{}"}},
                {"id": "call_4", "type": "function", "function": {"name": "weather_get_current", "arguments": "{\"city\":\"\"}"}}
            ]}}]}),
        ),
        (
            Dialect::OpenAiResponses { strict: true },
            json!({"id": "resp_1", "object": "response", "output": [
                {"type": "reasoning", "id": "rs_1", "summary": []},
                {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "weather_get_current", "arguments": "{\"city\":\"Paris\"}", "status": "completed"},
                {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "weather_get_current", "arguments": "{\"city\":\"Oslo\"}", "status": "completed"},
                {"type": "function_call", "id": "fc_3", "call_id": "call_3", "name": "weather_get_forecast", "arguments": "{}", "status": "completed"},
                {"type": "function_call", "id": "fc_4", "call_id": "call_4", "name": "weather_get_current", "arguments": "{\"city\":\"\"}", "status": "completed"}
            ]}),
        ),
        (
            Dialect::Anthropic { strict: false },
            json!({"id": "msg_1", "type": "message", "role": "assistant", "stop_reason": "tool_use", "content": [
                {"type": "text", "text": "Checking both cities."},
                {"type": "tool_use", "id": "call_1", "name": "weather_get_current", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "call_2", "name": "weather_get_current", "input": {"city": "Oslo"}},
                {"type": "tool_use", "id": "call_3", "name": "weather_get_forecast", "input": {}},
                {"type": "tool_use", "id": "call_4", "name": "weather_get_current", "input": {"city": ""}}
            ]}),
        ),
        (
            Dialect::Gemini,
            json!({"candidates": [{"content": {"role": "model", "parts": [
                {"functionCall": {"id": "call_1", "name": "weather.get_current", "args": {"city": "Paris"}}},
                {"functionCall": {"id": "call_2", "name": "weather.get_current", "args": {"city": "Oslo"}}},
                {"functionCall": {"id": "call_3", "name": "weather.get_forecast", "args": {}}},
                {"functionCall": {"id": "call_4", "name": "weather.get_current", "args": {"city": ""}}}
            ]}}]}),
        ),
    ]
}

fn envelope(text: &Value) -> Value {
    serde_json::from_str(text.as_str().unwrap()).unwrap()
}

#[tokio::test]
async fn a_whole_response_in_the_next_messages_out() {
    let toolbox = toolbox();
    let ctx = ToolContext::new().with_run_id("turn");
    for (dialect, response) in responses() {
        let provider = toolbox.provider(dialect);
        MOST.store(0, Ordering::SeqCst);
        let turn = provider.respond_to(&response, &ctx).await.unwrap();
        assert!(!turn.is_final());
        assert_eq!(turn.calls.len(), 4, "{dialect}");
        assert!(turn.outcomes[0].is_success() && turn.outcomes[1].is_success());
        assert!(
            MOST.load(Ordering::SeqCst) >= 2,
            "{dialect}: run concurrently"
        );
        let unknown = turn.outcomes[2].error().unwrap();
        assert_eq!(unknown.code(), ErrorCode::UnknownTool);
        let spelled = if dialect == Dialect::Gemini {
            "`weather.get_current`"
        } else {
            "`weather_get_current`"
        };
        assert!(
            unknown.message().contains(spelled),
            "{dialect}: names in the provider's spelling: {}",
            unknown.message()
        );
        let invalid = turn.outcomes[3].error().unwrap();
        assert_eq!(invalid.code(), ErrorCode::InvalidArguments);

        let messages = &turn.messages;
        match dialect {
            Dialect::OpenAiChat { .. } => {
                assert_eq!(messages.len(), 4, "one tool message per call");
                for (i, message) in messages.iter().enumerate() {
                    assert_eq!(message["role"], "tool");
                    assert_eq!(message["tool_call_id"], format!("call_{}", i + 1));
                }
                assert_eq!(envelope(&messages[0]["content"])["data"]["city"], "Paris");
                assert_eq!(envelope(&messages[2]["content"])["status"], "error");
            }
            Dialect::OpenAiResponses { .. } => {
                assert_eq!(messages.len(), 4, "one function_call_output per call");
                for (i, item) in messages.iter().enumerate() {
                    assert_eq!(item["type"], "function_call_output");
                    assert_eq!(item["call_id"], format!("call_{}", i + 1));
                }
                assert_eq!(envelope(&messages[1]["output"])["data"]["city"], "Oslo");
            }
            Dialect::Anthropic { .. } => {
                assert_eq!(messages.len(), 1, "one user message with every result");
                assert_eq!(messages[0]["role"], "user");
                let blocks = messages[0]["content"].as_array().unwrap();
                assert_eq!(blocks.len(), 4);
                for (i, block) in blocks.iter().enumerate() {
                    assert_eq!(block["type"], "tool_result");
                    assert_eq!(block["tool_use_id"], format!("call_{}", i + 1));
                }
                assert_eq!(blocks[2]["is_error"], true);
                assert_eq!(blocks[3]["is_error"], true);
            }
            Dialect::Gemini => {
                assert_eq!(messages.len(), 1, "one content with every part");
                assert_eq!(messages[0]["role"], "user");
                let parts = messages[0]["parts"].as_array().unwrap();
                assert_eq!(parts.len(), 4);
                assert_eq!(parts[0]["functionResponse"]["name"], "weather.get_current");
                assert_eq!(parts[0]["functionResponse"]["id"], "call_1");
                assert_eq!(
                    parts[0]["functionResponse"]["response"]["output"]["city"],
                    "Paris"
                );
                assert!(parts[2]["functionResponse"]["response"]["error"].is_object());
            }
            Dialect::Mcp => unreachable!(),
        }
    }
}

#[tokio::test]
async fn a_response_without_calls_ends_the_loop() {
    let toolbox = toolbox();
    let ctx = ToolContext::new();
    let cases = [
        (
            Dialect::OpenAiChat { strict: false },
            json!({"choices": [{"message": {"role": "assistant", "content": "It is sunny."}}]}),
        ),
        (
            Dialect::Anthropic { strict: false },
            json!({"role": "assistant", "content": [{"type": "text", "text": "It is sunny."}]}),
        ),
    ];
    for (dialect, response) in cases {
        let turn = toolbox
            .provider(dialect)
            .respond_to(&response, &ctx)
            .await
            .unwrap();
        assert!(turn.is_final(), "{dialect}");
        assert!(turn.messages.is_empty());
    }
    // Not that provider's shape at all: an error, not an empty turn.
    let err = toolbox
        .provider(Dialect::Anthropic { strict: false })
        .respond_to(&json!({"content": "not blocks"}), &ctx)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("content"), "{err}");
}

static H_RUNNING: AtomicUsize = AtomicUsize::new(0);
static H_MOST: AtomicUsize = AtomicUsize::new(0);

/// Looks up the humidity in a city. Read-only. Not for forecasts.
#[tool(name = "weather.get_humidity", effect = "read")]
async fn get_humidity(
    /// The city.
    #[arg(length(min = 1, max = 60))]
    city: String,
) -> String {
    let now = H_RUNNING.fetch_add(1, Ordering::SeqCst) + 1;
    H_MOST.fetch_max(now, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(20)).await;
    H_RUNNING.fetch_sub(1, Ordering::SeqCst);
    city
}

static SEQ_RUNNING: AtomicUsize = AtomicUsize::new(0);
static SEQ_OVERLAP: AtomicUsize = AtomicUsize::new(0);

/// Migrates a database. Writes data. Not for backups.
#[tool(name = "db.apply_migration", effect = "write", sequential)]
async fn migrate(
    /// The step.
    step: u32,
) -> u32 {
    if SEQ_RUNNING.fetch_add(1, Ordering::SeqCst) > 0 {
        SEQ_OVERLAP.fetch_add(1, Ordering::SeqCst);
    }
    tokio::time::sleep(Duration::from_millis(20)).await;
    SEQ_RUNNING.fetch_sub(1, Ordering::SeqCst);
    step
}

#[tokio::test]
async fn batches_honour_sequential_tools_and_limits() {
    let toolbox = Toolbox::new()
        .with(Migrate)
        .with(GetHumidity)
        .with_tool_policy(
            "weather.get_humidity",
            ToolPolicy {
                concurrency: Some(1),
                ..ToolPolicy::default()
            },
        );
    let calls: Vec<ToolCall> = (0..4)
        .map(|i| ToolCall {
            id: Some(format!("toolu_{i}")),
            name: "db_apply_migration".into(),
            arguments: json!({"step": i}),
        })
        .chain((0..3).map(|i| ToolCall {
            id: Some(format!("toolu_w{i}")),
            name: "weather_get_humidity".into(),
            arguments: json!({"city": format!("City {i}")}),
        }))
        .collect();
    let anthropic = toolbox.provider(Dialect::Anthropic { strict: false });
    let outcomes = anthropic.run_all(&calls, &ToolContext::new()).await;
    assert!(outcomes.iter().all(toolsmith::ToolOutcome::is_success));
    assert_eq!(
        SEQ_OVERLAP.load(Ordering::SeqCst),
        0,
        "sequential: never two at once"
    );
    assert_eq!(
        H_MOST.load(Ordering::SeqCst),
        1,
        "the tool's own limit of one"
    );
    // In input order.
    assert_eq!(outcomes[2].clone().into_result::<u32>().unwrap(), 2);

    // The registered-name family is unchanged: call_all takes registered names.
    let by_name = [ToolCall {
        id: Some("1".into()),
        name: "db.apply_migration".into(),
        arguments: json!({"step": 9}),
    }];
    let outcomes = toolbox.call_all(&by_name, &ToolContext::new()).await;
    assert_eq!(outcomes[0].clone().into_result::<u32>().unwrap(), 9);
}

#[tokio::test]
async fn a_disabled_tool_is_unknown_in_the_providers_spelling() {
    let toolbox = Toolbox::new()
        .with(CurrentWeather)
        .with(GetHumidity)
        .with_enabled_when("weather.get_current", |ctx: &ToolContext| {
            ctx.principal() == Some("staff")
        });
    let call = ToolCall {
        id: Some("call_1".into()),
        name: "weather_get_current".into(),
        arguments: json!("{\"city\":\"Oslo\"}"),
    };
    let openai = toolbox.provider(Dialect::OpenAiChat { strict: true });
    let guest = openai.run(&call, &ToolContext::new()).await;
    let err = guest.error().unwrap();
    assert_eq!(err.code(), ErrorCode::UnknownTool);
    assert!(
        err.message()
            .contains("the available tools are `weather_get_humidity`"),
        "{}",
        err.message()
    );
    let staff = ToolContext::new().with_principal("staff");
    assert!(openai.run(&call, &staff).await.is_success());
}

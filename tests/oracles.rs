//! The providers' own SDKs and schemas, run offline, judge what toolsmith exports:
//! - every exported JSON Schema passes the 2020-12 meta-schema (Python `jsonschema`);
//! - OpenAI strict output is a fixed point of openai-agents' `ensure_strict_json_schema`;
//! - the `openai`, `anthropic` and `google-genai` SDK types accept our tools and results, and
//!   the messages a whole turn produces, as the next request's conversation, and the stream
//!   fixtures are their stream event types;
//! - MCP `tools/list` and `CallToolResult`s validate against the 2025-11-25 wire schema and the
//!   `mcp` SDK's models, and structured results match their output schema.
//!
//! `scripts/test.sh` creates the Python environment under `target/oracles/` and sets
//! `TOOLSMITH_ORACLES` to its interpreter; without it this test says so and passes.

#[path = "common/shapes.rs"]
mod common;
#[path = "support/oracle.rs"]
mod oracle;
#[path = "support/replies.rs"]
mod replies;

use serde_json::{Map, Value, json};
use toolsmith::provider::{Namespace, ToolChoice, ToolRequest, ToolSearch};
use toolsmith::{Dialect, ToolCall, ToolContext};

/// Builds the weekly report. Read-only: it gathers data. Not for sending the report.
#[toolsmith::tool(effect = "read", long_running)]
async fn build_report() -> &'static str {
    "report ready"
}

/// The conversation of the last request `model` was sent, in its provider's field.
fn last_conversation(model: &toolsmith::agent::ScriptedModel) -> Value {
    let last = model.requests().pop().unwrap().body;
    last.get("messages")
        .or(last.get("input"))
        .or(last.get("contents"))
        .cloned()
        .unwrap()
}

#[tokio::test]
async fn provider_sdks_accept_our_json() {
    let Some(python) = oracle::python("the provider SDK oracles") else {
        return;
    };
    let toolbox = common::toolbox();
    let mut tools = Map::new();
    for dialect in Dialect::ALL {
        let exported: Vec<Value> = toolbox
            .definitions()
            .filter_map(|d| d.export(dialect).ok().cloned())
            .collect();
        let value = match dialect {
            Dialect::Gemini => json!({ "functionDeclarations": exported }),
            Dialect::Mcp => toolbox.export(dialect).unwrap(),
            _ => Value::Array(exported),
        };
        tools.insert(dialect.name().to_owned(), value);
    }

    let ctx = ToolContext::new().with_trace_id("tr_oracle");
    let calls = [
        ToolCall {
            id: Some("call_1".into()),
            name: "ping".into(),
            arguments: json!({}),
        },
        ToolCall {
            id: Some("call_2".into()),
            name: "forecast".into(),
            arguments: json!({"city": "Paris"}),
        },
        ToolCall {
            id: Some("call_3".into()),
            name: "search".into(),
            arguments: json!({"query": "x", "num_results": 99}),
        },
        ToolCall {
            id: Some("call_4".into()),
            name: "nope".into(),
            arguments: json!({}),
        },
    ];
    let mut results = Map::new();
    for dialect in [
        Dialect::OpenAiChat { strict: false },
        Dialect::OpenAiResponses { strict: false },
        Dialect::Anthropic { strict: false },
        Dialect::Gemini,
        Dialect::Mcp,
    ] {
        let mut encoded = Vec::new();
        for call in &calls {
            let result = toolbox.provider(dialect).respond(call, &ctx).await;
            encoded.push(if dialect == Dialect::Mcp {
                json!({"tool": call.name, "result": result})
            } else {
                result
            });
        }
        results.insert(dialect.name().to_owned(), Value::Array(encoded));
    }

    // Whole turns: a response with two calls in, the messages for the next request out.
    let responses = [
        (
            Dialect::OpenAiChat { strict: false },
            json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4.1", "choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": null, "message": {"role": "assistant", "content": null, "refusal": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "forecast", "arguments": "{\"city\":\"Paris\"}"}},
                {"id": "call_2", "type": "function", "function": {"name": "search", "arguments": "{\"query\":\"x\",\"num_results\":99}"}}]}}]}),
        ),
        (
            Dialect::OpenAiResponses { strict: false },
            json!({"id": "resp_1", "object": "response", "output": [
                {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "forecast", "arguments": "{\"city\":\"Paris\"}", "status": "completed"},
                {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "search", "arguments": "{\"query\":\"x\",\"num_results\":99}", "status": "completed"}]}),
        ),
        (
            Dialect::Anthropic { strict: false },
            json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "stop_reason": "tool_use", "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_1", "name": "forecast", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "toolu_2", "name": "search", "input": {"query": "x", "num_results": 99}}]}),
        ),
        (
            Dialect::Gemini,
            json!({"candidates": [{"content": {"role": "model", "parts": [
                {"functionCall": {"id": "g_1", "name": "forecast", "args": {"city": "Paris"}}},
                {"functionCall": {"id": "g_2", "name": "search", "args": {"query": "x", "num_results": 99}}}]}}]}),
        ),
    ];
    let mut turns = Map::new();
    for (dialect, response) in responses {
        let turn = toolbox
            .provider(dialect)
            .respond_to(&response, &ctx)
            .await
            .unwrap();
        assert_eq!(turn.calls.len(), 2, "{dialect}");
        turns.insert(
            dialect.name().to_owned(),
            json!({"response": response, "messages": turn.messages}),
        );
    }

    // Trimmed conversations: a run of three turns whose older results are shown as previews;
    // the conversation of its last request.
    let mut trimmed = Map::new();
    for dialect in [
        Dialect::OpenAiChat { strict: false },
        Dialect::OpenAiResponses { strict: false },
        Dialect::Anthropic { strict: false },
        Dialect::Gemini,
    ] {
        let model = toolsmith::agent::ScriptedModel::new(
            (1..=3).map(|n| replies::one_call(dialect, &format!("call_{n}"), "ping", &json!({}))),
        );
        let agent = toolsmith::agent::Agent::new(
            toolsmith::Toolbox::new().with(common::Ping),
            dialect,
            model.clone(),
        )
        .with_trim(
            toolsmith::agent::Trim::keep_last(0)
                .with_preview(1)
                .with_at_least(1),
        )
        .with_limits(toolsmith::agent::Limits {
            max_turns: 3,
            ..toolsmith::agent::Limits::default()
        });
        let mut state = agent.start("Ping three times.");
        agent.run(&mut state, &ctx).await.unwrap();
        let conversation = last_conversation(&model);
        assert!(
            conversation.to_string().contains("[trimmed"),
            "{dialect}: {conversation}"
        );
        trimmed.insert(dialect.name().to_owned(), conversation);
    }

    // A run whose call is a long-running tool's task: the turn waits on it (nothing sent to
    // the model), and the conversation of the request after it is done.
    let mut tasked = Map::new();
    for dialect in [
        Dialect::OpenAiChat { strict: false },
        Dialect::OpenAiResponses { strict: false },
        Dialect::Anthropic { strict: false },
        Dialect::Gemini,
    ] {
        let model = toolsmith::agent::ScriptedModel::new([
            replies::one_call(dialect, "call_1", "build_report", &json!({})),
            replies::one_call(dialect, "call_2", "ping", &json!({})),
        ]);
        let agent = toolsmith::agent::Agent::new(
            toolsmith::Toolbox::new()
                .with(BuildReport)
                .with(common::Ping),
            dialect,
            model.clone(),
        )
        .with_limits(toolsmith::agent::Limits {
            max_turns: 2,
            ..toolsmith::agent::Limits::default()
        });
        let mut state = agent.start("Build the report.");
        let stop = agent.run(&mut state, &ctx).await.unwrap();
        assert!(
            matches!(stop, toolsmith::agent::Stop::Waiting(_)),
            "{dialect}: {stop:?}"
        );
        assert_eq!(
            model.requests().len(),
            1,
            "{dialect}: nothing sent while it runs"
        );
        let mut stop = stop;
        while matches!(stop, toolsmith::agent::Stop::Waiting(_)) {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            stop = agent.run(&mut state, &ctx).await.unwrap();
        }
        let conversation = last_conversation(&model);
        assert!(
            conversation.to_string().contains("report ready"),
            "{dialect}: {conversation}"
        );
        tasked.insert(dialect.name().to_owned(), conversation);
    }

    // Tool blocks: each choice, parallel calls off and the Anthropic breakpoint, for the
    // request types of each SDK.
    let requests = [
        ToolRequest::default(),
        ToolRequest {
            choice: ToolChoice::None,
            ..ToolRequest::default()
        },
        ToolRequest {
            choice: ToolChoice::Required,
            parallel: Some(false),
            ..ToolRequest::default()
        },
        ToolRequest {
            choice: ToolChoice::Tool("forecast".into()),
            cache_breakpoint: true,
            ..ToolRequest::default()
        },
        ToolRequest {
            choice: ToolChoice::Only {
                tools: vec!["forecast".into(), "search".into()],
                require: false,
            },
            ..ToolRequest::default()
        },
        ToolRequest {
            choice: ToolChoice::Only {
                tools: vec!["forecast".into(), "search".into()],
                require: true,
            },
            parallel: Some(true),
            ..ToolRequest::default()
        },
        ToolRequest {
            defer: vec!["search".into()],
            cache_breakpoint: true,
            ..ToolRequest::default()
        },
        ToolRequest {
            defer: vec!["search".into(), "ping".into()],
            search: ToolSearch::Regex,
            namespaces: vec![Namespace {
                name: "weather_and_web".into(),
                description: "Forecasts and web search.".into(),
                tools: vec!["forecast".into(), "search".into()],
            }],
            ..ToolRequest::default()
        },
    ];
    // Tools every dialect can express.
    let plain = toolsmith::Toolbox::new()
        .with(common::Forecast)
        .with(common::Search)
        .with(common::Ping);
    let mut blocks = Map::new();
    for dialect in [
        Dialect::OpenAiChat { strict: false },
        Dialect::OpenAiResponses { strict: false },
        Dialect::Anthropic { strict: false },
        Dialect::Gemini,
    ] {
        let made: Vec<Value> = requests
            .iter()
            .map(|request| {
                Value::Object(
                    plain
                        .provider(dialect)
                        .request(request)
                        .unwrap_or_else(|e| panic!("{dialect}: {e}"))
                        .fields,
                )
            })
            .collect();
        blocks.insert(dialect.name().to_owned(), Value::Array(made));
    }

    // Hosted tools beside the functions, with every parameter each provider takes: the
    // request must pass the provider's request type, and each entry its own tool type.
    use toolsmith::provider::{
        CodeExecution, ComputerEnvironment, ComputerUse, ContextSize, FileSearch, HostedTool,
        RemoteMcp, UserLocation, WebFetch, WebSearch,
    };
    let search = WebSearch {
        max_uses: Some(3),
        allowed_domains: vec!["met.no".into()],
        blocked_domains: Vec::new(),
        user_location: Some(UserLocation {
            city: Some("Oslo".into()),
            region: Some("Oslo".into()),
            country: Some("NO".into()),
            timezone: Some("Europe/Oslo".into()),
        }),
        context_size: Some(ContextSize::High),
    };
    let mut server = RemoteMcp::new("docs", "https://mcp.example.com/mcp");
    server.allowed_tools = Some(vec!["search_docs".into()]);
    server.authorization = Some("token".into());
    server.defer_loading = true;
    let files = FileSearch {
        stores: vec!["vs_1".into()],
        max_results: Some(5),
    };
    let computer = ComputerUse {
        display: Some((1280, 800)),
        environment: Some(ComputerEnvironment::Desktop),
    };
    let fetch = WebFetch {
        max_uses: Some(2),
        allowed_domains: vec!["docs.rs".into()],
        blocked_domains: Vec::new(),
        max_content_tokens: Some(4000),
    };
    let mut unasked = server.clone();
    unasked.require_approval = false;
    let hosted_requests: Vec<(Dialect, Vec<HostedTool>)> = vec![
        (
            Dialect::OpenAiResponses { strict: false },
            vec![
                HostedTool::WebSearch(search.clone()),
                HostedTool::FileSearch(files.clone()),
                HostedTool::CodeExecution(CodeExecution::default()),
                HostedTool::ComputerUse(computer.clone()),
                HostedTool::RemoteMcp(server),
            ],
        ),
        (
            Dialect::Anthropic { strict: false },
            vec![
                HostedTool::WebSearch(WebSearch {
                    context_size: None,
                    ..search.clone()
                }),
                HostedTool::WebFetch(fetch.clone()),
                HostedTool::CodeExecution(CodeExecution::default()),
            ],
        ),
        (
            Dialect::Anthropic { strict: false },
            vec![
                HostedTool::ComputerUse(computer.clone()),
                HostedTool::RemoteMcp(unasked),
            ],
        ),
        (
            Dialect::Gemini,
            vec![
                HostedTool::WebSearch(WebSearch {
                    blocked_domains: vec!["example.com".into()],
                    ..WebSearch::default()
                }),
                HostedTool::WebFetch(WebFetch::default()),
                HostedTool::FileSearch(files),
                HostedTool::CodeExecution(CodeExecution::default()),
                HostedTool::ComputerUse(ComputerUse {
                    display: None,
                    ..computer
                }),
            ],
        ),
    ];
    let hosted: Vec<Value> = hosted_requests
        .into_iter()
        .map(|(dialect, hosted)| {
            let block = plain
                .provider(dialect)
                .request(&ToolRequest {
                    hosted,
                    ..ToolRequest::default()
                })
                .unwrap_or_else(|e| panic!("{dialect}: {e}"));
            json!({"dialect": dialect.name(), "fields": block.fields, "headers": block.headers})
        })
        .collect();

    // Token counts by OpenAI's rules, to be counted again with an independent tokenizer.
    let openai = plain
        .provider(Dialect::OpenAiChat { strict: false })
        .request(&ToolRequest::default())
        .unwrap();
    let report = openai.tokens();
    let tokens = json!({
        "tools": openai.fields["tools"],
        "counts": report.tools.iter().map(|t| t.tokens).collect::<Vec<_>>(),
        "total": report.total,
    });

    let fixtures = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/mcp-schema-2025-11-25.json"
    );
    let streams = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/streams");
    let bundle = json!({"tools": tools, "results": results, "turns": turns, "trimmed": trimmed, "tasked": tasked, "blocks": blocks, "tokens": tokens, "streams": streams, "mcp_schema": fixtures, "hosted": hosted});
    let path = std::env::temp_dir().join(format!("toolsmith-oracle-{}.json", std::process::id()));
    std::fs::write(&path, serde_json::to_vec_pretty(&bundle).unwrap()).unwrap();
    oracle::run(
        &python,
        "oracles/check.py",
        &[path.as_os_str()],
        "the provider oracles",
    );
    let _ = std::fs::remove_file(&path);
}

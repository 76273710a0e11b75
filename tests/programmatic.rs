//! Programs the provider runs (programmatic tool calling): the request marks the tools a
//! program may call, the calls a program makes are read with their caller, answered into the
//! program, and replayed byte for byte in the history; the providers' SDK types accept every
//! request, response, answer, history and recorded stream.

#[path = "support/oracle.rs"]
mod oracle;

use std::sync::Arc;

use serde_json::{Map, Value, json};
use toolsmith::agent::{Agent, ScriptedModel, Stop};
use toolsmith::provider::{
    CallStream, CodeExecution, HostedTool, RequestError, ToolRequest, program_calls,
};
use toolsmith::{Dialect, ToolCall, ToolContext, Toolbox, tool};

/// Stock of a SKU.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Stock {
    /// The SKU.
    sku: String,
    /// Units on hand.
    available: u32,
}

/// Gets a SKU's stock. Read-only. Not for orders.
#[tool(effect = "read")]
fn get_stock(
    /// The SKU.
    #[arg(length(min = 1, max = 20))]
    sku: String,
) -> Stock {
    Stock { sku, available: 12 }
}

/// Gets how many units of a SKU customers asked for. Read-only. Not for stock.
#[tool(effect = "read")]
fn get_demand(
    /// The SKU.
    #[arg(length(min = 1, max = 20))]
    sku: String,
) -> u32 {
    let _ = sku;
    20
}

const RESPONSES: Dialect = Dialect::OpenAiResponses { strict: true };
const ANTHROPIC: Dialect = Dialect::Anthropic { strict: false };

fn toolbox() -> Toolbox {
    Toolbox::new().with(GetStock).with(GetDemand)
}

fn programmatic(only: bool) -> ToolRequest {
    ToolRequest {
        programmatic: vec!["get_stock".into(), "get_demand".into()],
        programmatic_only: only,
        ..ToolRequest::default()
    }
}

fn tools_of(dialect: Dialect, request: &ToolRequest) -> Vec<Value> {
    let block = toolbox().provider(dialect).request(request).unwrap();
    block.fields["tools"].as_array().unwrap().clone()
}

#[test]
fn openai_responses_marks_the_tools_with_their_output_schemas_beside_the_program_tool() {
    let tools = tools_of(RESPONSES, &programmatic(false));
    assert_eq!(tools.len(), 3);
    let stock = tools.iter().find(|t| t["name"] == "get_stock").unwrap();
    assert_eq!(stock["allowed_callers"], json!(["direct", "programmatic"]));
    assert_eq!(
        stock["output_schema"]["properties"]["available"]["type"],
        "integer"
    );
    assert_eq!(
        stock["output_schema"]["required"],
        json!(["sku", "available"])
    );
    assert_eq!(tools[2], json!({"type": "programmatic_tool_calling"}));
    let only = tools_of(RESPONSES, &programmatic(true));
    assert_eq!(only[0]["allowed_callers"], json!(["programmatic"]));
    // Unmarked, a tool says nothing of callers.
    let plain = tools_of(RESPONSES, &ToolRequest::default());
    assert!(plain.iter().all(|t| t.get("allowed_callers").is_none()));
    assert_eq!(plain.len(), 2);
}

#[test]
fn anthropic_marks_the_tools_and_adds_its_code_execution_once() {
    let tools = tools_of(ANTHROPIC, &programmatic(false));
    assert_eq!(tools.len(), 3);
    assert_eq!(
        tools[0]["allowed_callers"],
        json!(["direct", "code_execution_20260120"])
    );
    assert!(
        tools[0].get("output_schema").is_none(),
        "Anthropic has no output_schema"
    );
    assert_eq!(
        tools[2],
        json!({"type": "code_execution_20260120", "name": "code_execution"})
    );
    // Asked for already: not twice, and at the version programs call tools from.
    let mut request = programmatic(true);
    request.hosted = vec![HostedTool::CodeExecution(CodeExecution::default())];
    let tools = tools_of(ANTHROPIC, &request);
    assert_eq!(tools.len(), 3);
    assert_eq!(
        tools[0]["allowed_callers"],
        json!(["code_execution_20260120"])
    );
    assert_eq!(tools[2]["type"], "code_execution_20260120");
}

#[test]
fn other_dialects_and_unknown_names_are_refused() {
    for dialect in [Dialect::OpenAiChat { strict: true }, Dialect::Gemini] {
        let err = toolbox()
            .provider(dialect)
            .request(&programmatic(false))
            .unwrap_err();
        assert!(
            matches!(err, RequestError::ProgrammaticUnsupported(_)),
            "{err}"
        );
        assert!(err.to_string().contains("run_code"), "{err}");
    }
    let request = ToolRequest {
        programmatic: vec!["nope".into()],
        ..ToolRequest::default()
    };
    let err = toolbox().provider(RESPONSES).request(&request).unwrap_err();
    assert!(matches!(err, RequestError::UnknownTool { .. }), "{err}");
}

/// A Responses answer: the program, and the first call it made.
fn responses_program_turn() -> Value {
    json!({"id": "resp_1", "object": "response", "created_at": 1_790_000_000, "model": "gpt-5.6",
        "status": "completed", "parallel_tool_calls": true, "tool_choice": "auto", "tools": [],
        "output": [
        {"id": "rs_1", "type": "reasoning", "summary": []},
        {"id": "cm_1", "type": "program", "call_id": "call_prog",
         "code": "const s = await tools.get_stock({sku: \"a\"});\nconst d = await tools.get_demand({sku: \"a\"});\ntext(JSON.stringify({short: d - s.available}));\n",
         "fingerprint": "fp_opaque_1"},
        {"id": "fc_1", "type": "function_call", "status": "in_progress", "call_id": "call_s",
         "name": "get_stock", "arguments": "{\"sku\":\"a\"}",
         "caller": {"type": "program", "caller_id": "call_prog"}}
    ]})
}

fn responses_second_turn() -> Value {
    json!({"id": "resp_2", "object": "response", "created_at": 1_790_000_001, "model": "gpt-5.6",
        "status": "completed", "parallel_tool_calls": true, "tool_choice": "auto", "tools": [],
        "output": [
        {"id": "fc_2", "type": "function_call", "status": "in_progress", "call_id": "call_d",
         "name": "get_demand", "arguments": "{\"sku\":\"a\"}",
         "caller": {"type": "program", "caller_id": "call_prog"}}
    ]})
}

fn responses_final_turn() -> Value {
    json!({"id": "resp_3", "object": "response", "created_at": 1_790_000_002, "model": "gpt-5.6",
        "status": "completed", "parallel_tool_calls": true, "tool_choice": "auto", "tools": [],
        "output": [
        {"id": "po_1", "type": "program_output", "call_id": "call_prog", "result": "{\"short\":8}", "status": "completed"},
        {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
         "content": [{"type": "output_text", "text": "8 units short.", "annotations": []}]}
    ]})
}

/// An Anthropic answer: the code execution started, and the first call its program made.
fn anthropic_program_turn() -> Value {
    json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-opus-4-7",
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 900, "output_tokens": 120},
        "container": {"id": "container_1", "expires_at": "2026-11-28T03:00:00Z"},
        "content": [
        {"type": "text", "text": "Checking stock and demand in code."},
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "code_execution",
         "input": {"code": "s = await get_stock(sku=\"a\")\nd = await get_demand(sku=\"a\")\nprint(d - s[\"available\"])"}},
        {"type": "tool_use", "id": "toolu_s", "name": "get_stock", "input": {"sku": "a"},
         "caller": {"type": "code_execution_20260120", "tool_id": "srvtoolu_1"}}
    ]})
}

fn anthropic_second_turn() -> Value {
    json!({"id": "msg_2", "type": "message", "role": "assistant", "model": "claude-opus-4-7",
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 950, "output_tokens": 10},
        "container": {"id": "container_1", "expires_at": "2026-11-28T03:00:00Z"},
        "content": [
        {"type": "tool_use", "id": "toolu_d", "name": "get_demand", "input": {"sku": "a"},
         "caller": {"type": "code_execution_20260120", "tool_id": "srvtoolu_1"}}
    ]})
}

fn anthropic_final_turn() -> Value {
    json!({"id": "msg_3", "type": "message", "role": "assistant", "model": "claude-opus-4-7",
        "stop_reason": "end_turn", "stop_sequence": null,
        "usage": {"input_tokens": 990, "output_tokens": 12},
        "container": {"id": "container_1", "expires_at": "2026-11-28T03:00:00Z"},
        "content": [
        {"type": "code_execution_tool_result", "tool_use_id": "srvtoolu_1",
         "content": {"type": "code_execution_result", "stdout": "8\n", "stderr": "", "return_code": 0, "content": []}},
        {"type": "text", "text": "8 units short."}
    ]})
}

#[test]
fn a_programs_calls_are_read_with_their_caller() {
    let calls = program_calls(RESPONSES, &responses_program_turn());
    assert_eq!(calls.len(), 1);
    assert_eq!(
        (calls[0].call_id.as_str(), calls[0].program_id.as_str()),
        ("call_s", "call_prog")
    );
    let calls = program_calls(ANTHROPIC, &anthropic_program_turn());
    assert_eq!(
        (calls[0].call_id.as_str(), calls[0].program_id.as_str()),
        ("toolu_s", "srvtoolu_1")
    );
    // A call the model made itself has no program.
    let direct = json!({"content": [{"type": "tool_use", "id": "t", "name": "get_stock", "input": {}, "caller": {"type": "direct"}}]});
    assert!(program_calls(ANTHROPIC, &direct).is_empty());
    assert!(program_calls(Dialect::OpenAiChat { strict: true }, &direct).is_empty());
}

/// Runs the three turns of `dialect` through the agent loop; the requests it sent.
async fn run_loop(dialect: Dialect, turns: [Value; 3]) -> (Vec<Value>, Map<String, Value>) {
    let model = Arc::new(ScriptedModel::new(turns));
    let agent =
        Agent::new(toolbox(), dialect, Arc::clone(&model)).with_request(programmatic(false));
    let mut state = agent.start("Is SKU a short?");
    let stop = agent.run(&mut state, &ToolContext::new()).await.unwrap();
    assert!(
        matches!(stop, Stop::Answered(ref text) if text == "8 units short."),
        "{stop:?}"
    );
    let requests: Vec<Value> = model.requests().into_iter().map(|r| r.body).collect();
    let fields = requests[0].as_object().unwrap().clone();
    (requests, fields)
}

fn conversation(body: &Value) -> &Vec<Value> {
    body.get("input")
        .or(body.get("messages"))
        .and_then(Value::as_array)
        .unwrap()
}

#[tokio::test]
async fn openai_answers_into_the_program_and_replays_its_items_byte_for_byte() {
    let (requests, _) = run_loop(
        RESPONSES,
        [
            responses_program_turn(),
            responses_second_turn(),
            responses_final_turn(),
        ],
    )
    .await;
    assert_eq!(requests.len(), 3);
    assert!(
        requests[0]["tools"]
            .as_array()
            .unwrap()
            .contains(&json!({"type": "programmatic_tool_calling"}))
    );
    let second = conversation(&requests[1]);
    // The response's items, as they came, then the answer into the program.
    let sent = responses_program_turn()["output"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(second[1..4], sent[..]);
    let answer = &second[4];
    assert_eq!(answer["type"], "function_call_output");
    assert_eq!(answer["call_id"], "call_s");
    assert_eq!(
        answer["caller"],
        json!({"type": "program", "caller_id": "call_prog"})
    );
    // The value the output schema describes, not the envelope a model reads.
    let value: Value = serde_json::from_str(answer["output"].as_str().unwrap()).unwrap();
    assert_eq!(value, json!({"sku": "a", "available": 12}));
    let third = conversation(&requests[2]);
    assert_eq!(third[..5], second[..]);
    assert_eq!(third[6]["output"], "20");
}

#[tokio::test]
async fn anthropic_answers_into_the_program_in_its_container() {
    let (requests, _) = run_loop(
        ANTHROPIC,
        [
            anthropic_program_turn(),
            anthropic_second_turn(),
            anthropic_final_turn(),
        ],
    )
    .await;
    assert!(requests[0].get("container").is_none());
    assert_eq!(requests[1]["container"], "container_1");
    assert_eq!(requests[2]["container"], "container_1");
    let second = conversation(&requests[1]);
    assert_eq!(
        second[1]["content"],
        anthropic_program_turn()["content"],
        "replayed as it came"
    );
    let result = &second[2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "toolu_s");
    assert_eq!(result["is_error"], false);
    let value: Value =
        serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(value, json!({"sku": "a", "available": 12}));
}

#[tokio::test]
async fn a_refused_program_call_is_answered_as_an_error_the_program_sees() {
    let mut turn = responses_program_turn();
    turn["output"][2]["arguments"] = json!("{\"sku\":\"\"}");
    let provider = toolbox();
    let provider = provider.provider(RESPONSES);
    let turn = provider
        .respond_to(&turn, &ToolContext::new())
        .await
        .unwrap();
    let answer = &turn.messages[0];
    assert_eq!(answer["caller"]["caller_id"], "call_prog");
    let envelope: Value = serde_json::from_str(answer["output"].as_str().unwrap()).unwrap();
    assert_eq!(envelope["error"]["code"], "invalid_arguments");
}

#[test]
fn recorded_program_streams_assemble_their_calls() {
    for (dialect, file, ids) in [
        (
            RESPONSES,
            "programmatic_openai_responses.sse",
            ["call_s", "call_d"],
        ),
        (
            ANTHROPIC,
            "programmatic_anthropic.sse",
            ["toolu_s", "toolu_d"],
        ),
    ] {
        let text = std::fs::read_to_string(format!(
            "{}/tests/fixtures/streams/{file}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        let mut stream = CallStream::new(dialect);
        let mut calls: Vec<ToolCall> = Vec::new();
        for line in text.lines() {
            let Some(data) = line.strip_prefix("data: ") else {
                continue;
            };
            let event: Value = serde_json::from_str(data).unwrap();
            calls.extend(stream.push(&event).into_iter().map(|c| c.unwrap()));
        }
        calls.extend(stream.finish().into_iter().map(|c| c.unwrap()));
        let got: Vec<&str> = calls.iter().map(|c| c.id.as_deref().unwrap()).collect();
        assert_eq!(got, ids, "{file}");
        assert_eq!(calls[0].name, "get_stock");
        let arguments: Value = match &calls[0].arguments {
            Value::String(text) => serde_json::from_str(text).unwrap(),
            value => value.clone(),
        };
        assert_eq!(arguments, json!({"sku": "a"}));
    }
}

#[tokio::test]
async fn provider_sdks_accept_programmatic_requests_responses_answers_and_histories() {
    let Some(python) = oracle::python("the programmatic tool calling oracles") else {
        return;
    };
    let (responses_requests, _) = run_loop(
        RESPONSES,
        [
            responses_program_turn(),
            responses_second_turn(),
            responses_final_turn(),
        ],
    )
    .await;
    let (anthropic_requests, _) = run_loop(
        ANTHROPIC,
        [
            anthropic_program_turn(),
            anthropic_second_turn(),
            anthropic_final_turn(),
        ],
    )
    .await;
    let bundle = json!({
        "openai": {
            "requests": responses_requests,
            "responses": [responses_program_turn(), responses_second_turn(), responses_final_turn()],
            "only": toolbox().provider(RESPONSES).request(&programmatic(true)).unwrap().fields,
        },
        "anthropic": {
            "requests": anthropic_requests,
            "responses": [anthropic_program_turn(), anthropic_second_turn(), anthropic_final_turn()],
            "only": toolbox().provider(ANTHROPIC).request(&programmatic(true)).unwrap().fields,
        },
        "streams": concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/streams"),
    });
    let path = std::env::temp_dir().join(format!(
        "toolsmith-programmatic-{}.json",
        std::process::id()
    ));
    std::fs::write(&path, bundle.to_string()).unwrap();
    oracle::run(
        &python,
        "oracles/programmatic.py",
        &[path.as_os_str()],
        "the SDK types",
    );
    let _ = std::fs::remove_file(&path);
}

/// A deploy configuration.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Config {
    /// The deploy token.
    token: String,
}

/// Reads the deploy configuration. Read-only. Not for changing it.
#[tool(effect = "read")]
fn read_config() -> toolsmith::output::Viewed<Config> {
    toolsmith::output::Viewed::new(Config {
        token: "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd".to_owned(),
    })
    .text("the deploy configuration")
}

#[tokio::test]
async fn a_program_gets_a_view_s_typed_value_checked() {
    let toolbox = Toolbox::new().with(ReadConfig);
    let response = json!({"output": [{"type": "function_call", "call_id": "call_c", "name": "read_config",
        "arguments": "{}", "caller": {"type": "program", "caller_id": "call_prog"}}]});
    let turn = toolbox
        .provider(RESPONSES)
        .respond_to(&response, &ToolContext::new())
        .await
        .unwrap();
    let output = turn.messages[0]["output"].as_str().unwrap();
    let value: Value = serde_json::from_str(output).unwrap();
    assert!(
        value["token"].is_string(),
        "the typed value, not the view: {output}"
    );
    assert!(!output.contains("AbCdEfGhIj"), "{output}");
}

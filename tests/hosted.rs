//! Tools the provider runs, declared beside function tools: each provider's wire form, what a
//! provider cannot take (an error naming it, or a note for a parameter), the companions a
//! request needs, hosted calls and results read back, kept in the history and audited, and
//! left to the provider by the agent loop.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use toolsmith::agent::{Agent, AgentError, AgentEvent, ScriptedModel, Stop};
use toolsmith::audit::MemorySink;
use toolsmith::provider::{
    CodeExecution, ComputerEnvironment, ComputerUse, ContextSize, FileSearch, HostedKind,
    HostedTool, RawHosted, RemoteMcp, RequestError, ToolRequest, UserLocation, WebFetch, WebSearch,
    hosted_items,
};
use toolsmith::{Dialect, ToolContext, Toolbox, tool};

/// Looks a ticket up. Read-only. Not for changing tickets.
#[tool(effect = "read")]
fn look_up(
    /// The ticket.
    #[arg(range(min = 1, max = 1000))]
    id: u64,
) -> String {
    format!("ticket {id}")
}

const RESPONSES: Dialect = Dialect::OpenAiResponses { strict: false };
const ANTHROPIC: Dialect = Dialect::Anthropic { strict: false };

fn request(hosted: Vec<HostedTool>) -> ToolRequest {
    ToolRequest {
        hosted,
        ..ToolRequest::default()
    }
}

fn search() -> WebSearch {
    WebSearch {
        max_uses: Some(2),
        allowed_domains: vec!["met.no".into()],
        blocked_domains: Vec::new(),
        user_location: Some(UserLocation {
            city: Some("Oslo".into()),
            country: Some("NO".into()),
            ..UserLocation::default()
        }),
        context_size: Some(ContextSize::Low),
    }
}

#[test]
fn each_provider_gets_its_own_wire_form_after_the_functions() {
    let toolbox = Toolbox::new().with(LookUp);
    let hosted = request(vec![
        HostedTool::WebSearch(search()),
        HostedTool::CodeExecution(CodeExecution::default()),
    ]);

    let block = toolbox.provider(RESPONSES).request(&hosted).unwrap();
    let tools = block.fields["tools"].as_array().unwrap();
    assert_eq!(tools[0]["name"], "look_up");
    assert_eq!(
        tools[1],
        json!({"type": "web_search", "filters": {"allowed_domains": ["met.no"]},
               "user_location": {"type": "approximate", "city": "Oslo", "country": "NO"},
               "search_context_size": "low"})
    );
    assert_eq!(
        tools[2],
        json!({"type": "code_interpreter", "container": {"type": "auto"}})
    );
    // OpenAI has no per-request search cap: said, and left out.
    assert!(
        block.report.notes.iter().any(|n| n.contains("`max_uses`")),
        "{:?}",
        block.report.notes
    );
    assert!(block.headers.is_empty());

    let block = toolbox.provider(ANTHROPIC).request(&hosted).unwrap();
    let tools = block.fields["tools"].as_array().unwrap();
    assert_eq!(
        tools[1],
        json!({"type": "web_search_20260318", "name": "web_search", "max_uses": 2,
               "allowed_domains": ["met.no"],
               "user_location": {"type": "approximate", "city": "Oslo", "country": "NO"}})
    );
    assert_eq!(
        tools[2],
        json!({"type": "code_execution_20260521", "name": "code_execution"})
    );
    assert!(
        block
            .report
            .notes
            .iter()
            .any(|n| n.contains("`context_size`"))
    );

    let block = toolbox.provider(Dialect::Gemini).request(&hosted).unwrap();
    let tools = block.fields["tools"].as_array().unwrap();
    assert_eq!(tools[0]["functionDeclarations"][0]["name"], "look_up");
    assert_eq!(tools[1], json!({"googleSearch": {}}));
    assert_eq!(tools[2], json!({"codeExecution": {}}));
    // Gemini takes its built-in tools beside functions only with this flag.
    assert_eq!(
        block.fields["toolConfig"]["includeServerSideToolInvocations"],
        true
    );
    // Without functions there is nothing to mix, and no flag.
    let block = Toolbox::new()
        .provider(Dialect::Gemini)
        .request(&hosted)
        .unwrap();
    assert_eq!(
        block.fields["tools"],
        json!([{"googleSearch": {}}, {"codeExecution": {}}])
    );
    assert!(block.fields.get("toolConfig").is_none());
}

#[test]
fn a_tool_a_provider_does_not_have_is_an_error_naming_it() {
    let toolbox = Toolbox::new().with(LookUp);
    let cases = [
        (
            Dialect::OpenAiChat { strict: true },
            HostedTool::WebSearch(WebSearch::default()),
            "openai",
            "web_search",
        ),
        (
            RESPONSES,
            HostedTool::WebFetch(WebFetch::default()),
            "openai-responses",
            "web_fetch",
        ),
        (
            ANTHROPIC,
            HostedTool::FileSearch(FileSearch::default()),
            "anthropic",
            "file_search",
        ),
        (
            Dialect::Gemini,
            HostedTool::RemoteMcp(RemoteMcp::new("docs", "https://mcp.example.com/mcp")),
            "gemini",
            "remote_mcp",
        ),
    ];
    for (dialect, tool, provider, kind) in cases {
        let err = toolbox
            .provider(dialect)
            .request(&request(vec![tool]))
            .unwrap_err();
        assert_eq!(
            err,
            RequestError::HostedUnsupported {
                provider,
                tool: kind
            },
            "{dialect}"
        );
        assert!(err.to_string().contains(provider), "{err}");
    }
}

#[test]
fn companions_come_back_beside_the_block() {
    let mut docs = RemoteMcp::new("docs", "https://mcp.example.com/mcp");
    docs.allowed_tools = Some(vec!["search_docs".into()]);
    docs.authorization = Some("token-123".into());
    // Anthropic's connector asks nobody before a call: refused until that is chosen.
    let refused = Toolbox::new()
        .provider(ANTHROPIC)
        .request(&request(vec![HostedTool::RemoteMcp(docs.clone())]))
        .unwrap_err();
    assert!(
        matches!(
            refused,
            RequestError::HostedSetting {
                tool: "remote_mcp",
                ..
            }
        ),
        "{refused}"
    );

    docs.require_approval = false;
    let computer = HostedTool::ComputerUse(ComputerUse {
        display: Some((1280, 800)),
        environment: Some(ComputerEnvironment::Browser),
    });
    let block = Toolbox::new()
        .with(LookUp)
        .provider(ANTHROPIC)
        .request(&request(vec![
            HostedTool::RemoteMcp(docs.clone()),
            computer.clone(),
        ]))
        .unwrap();
    assert_eq!(
        block.headers,
        [(
            "anthropic-beta".to_owned(),
            "mcp-client-2025-11-20,computer-use-2025-11-24".to_owned()
        )]
    );
    assert_eq!(
        block.fields["mcp_servers"],
        json!([{"type": "url", "url": "https://mcp.example.com/mcp", "name": "docs", "authorization_token": "token-123"}])
    );
    let tools = block.fields["tools"].as_array().unwrap();
    assert_eq!(
        tools[1],
        json!({"type": "mcp_toolset", "mcp_server_name": "docs",
               "configs": {"search_docs": {"enabled": true}}, "default_config": {"enabled": false}})
    );
    assert_eq!(
        tools[2],
        json!({"type": "computer_20251124", "name": "computer", "display_width_px": 1280, "display_height_px": 800})
    );

    // OpenAI asks the application, as the server is set to.
    docs.require_approval = true;
    let block = Toolbox::new()
        .provider(RESPONSES)
        .request(&request(vec![HostedTool::RemoteMcp(docs.clone())]))
        .unwrap();
    assert_eq!(
        block.fields["tools"][0],
        json!({"type": "mcp", "server_label": "docs", "server_url": "https://mcp.example.com/mcp",
               "require_approval": "always", "allowed_tools": ["search_docs"], "authorization": "token-123"})
    );
    // The token is not written when the request is kept (run state, logs).
    let kept = serde_json::to_string(&request(vec![HostedTool::RemoteMcp(docs)])).unwrap();
    assert!(!kept.contains("token-123"), "{kept}");
    let read: ToolRequest = serde_json::from_str(&kept).unwrap();
    assert_eq!(read.hosted.len(), 1);
}

#[test]
fn a_function_tool_may_not_take_a_hosted_tools_name() {
    /// Searches the web. Read-only. Not for private documents.
    #[tool(name = "web_search", effect = "read")]
    fn my_web_search(
        /// Keywords.
        #[arg(length(max = 100))]
        query: String,
    ) -> String {
        query
    }
    let err = Toolbox::new()
        .with(MyWebSearch)
        .provider(ANTHROPIC)
        .request(&request(vec![HostedTool::WebSearch(WebSearch::default())]))
        .unwrap_err();
    assert_eq!(err, RequestError::HostedNameTaken("web_search".into()));
}

#[test]
fn a_raw_entry_goes_to_its_own_provider_only() {
    let raw = HostedTool::Raw(RawHosted {
        provider: "anthropic".into(),
        tool: json!({"type": "memory_20250818", "name": "memory"}),
    });
    let block = Toolbox::new()
        .provider(ANTHROPIC)
        .request(&request(vec![raw.clone()]))
        .unwrap();
    assert_eq!(
        block.fields["tools"][0],
        json!({"type": "memory_20250818", "name": "memory"})
    );
    let err = Toolbox::new()
        .provider(RESPONSES)
        .request(&request(vec![raw]))
        .unwrap_err();
    assert!(matches!(
        err,
        RequestError::HostedUnsupported {
            provider: "openai-responses",
            ..
        }
    ));
}

#[test]
fn hosted_calls_and_results_are_read_from_each_provider() {
    let responses = json!({"output": [
        {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "oslo"}},
        {"type": "mcp_call", "id": "mcp_1", "name": "search_docs", "server_label": "docs", "arguments": "{\"q\":\"x\"}", "output": "found"},
        {"type": "mcp_approval_request", "id": "mcpr_1", "name": "delete_doc", "server_label": "docs", "arguments": "{}"},
        {"type": "function_call", "call_id": "call_1", "name": "look_up", "arguments": "{\"id\":1}"},
        {"type": "message", "role": "assistant", "content": []}
    ]});
    let items = hosted_items(RESPONSES, &responses);
    let kinds: Vec<(&str, HostedKind)> = items
        .iter()
        .map(|i| (i.provider_type.as_str(), i.kind))
        .collect();
    assert_eq!(
        kinds,
        [
            ("web_search_call", HostedKind::Call),
            ("mcp_call", HostedKind::Call),
            ("mcp_approval_request", HostedKind::ForApplication),
        ]
    );
    assert_eq!(items[1].input, Some(json!({"q": "x"})));
    assert_eq!(items[0].raw, responses["output"][0]);

    let gemini = json!({"candidates": [{"content": {"role": "model", "parts": [
        {"executableCode": {"language": "PYTHON", "code": "print(1)"}},
        {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1"}},
        {"text": "It printed 1."}
    ]}}]});
    let items = hosted_items(Dialect::Gemini, &gemini);
    assert_eq!(items.len(), 2);
    assert_eq!(items[0].input, Some(json!("print(1)")));
    assert_eq!(items[1].kind, HostedKind::Result);
    assert!(
        hosted_items(
            Dialect::OpenAiChat { strict: true },
            &json!({"choices": []})
        )
        .is_empty()
    );
    // A function call is never taken for a hosted one, whatever its name.
    let anthropic = json!({"content": [
        {"type": "tool_use", "id": "toolu_1", "name": "computer", "input": {}},
        {"type": "tool_result", "tool_use_id": "toolu_0", "content": "x"}
    ]});
    assert!(hosted_items(ANTHROPIC, &anthropic).is_empty());
}

fn anthropic_turn_with_a_search() -> Value {
    json!({"role": "assistant", "stop_reason": "end_turn", "content": [
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "oslo weather"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
            {"type": "web_search_result", "url": "https://met.no", "title": "Oslo", "encrypted_content": "abc=="}]},
        {"type": "text", "text": "Sunny in Oslo."}
    ], "usage": {"input_tokens": 30, "output_tokens": 9}})
}

#[tokio::test]
async fn the_agent_leaves_hosted_calls_to_the_provider_keeps_them_and_audits_them() {
    let sink = Arc::new(MemorySink::default());
    let model = ScriptedModel::new([anthropic_turn_with_a_search()]);
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&events);
    let agent = Agent::new(
        Toolbox::new().with(LookUp).with_audit(Arc::clone(&sink)),
        ANTHROPIC,
        model.clone(),
    )
    .with_request(request(vec![HostedTool::WebSearch(WebSearch::default())]))
    .with_events(move |e| seen.lock().unwrap().push(e.clone()));
    let mut state = agent.start("Weather in Oslo?");
    let ctx = ToolContext::new().with_run_id("run-hosted");
    let stop = agent.run(&mut state, &ctx).await.unwrap();
    assert_eq!(stop, Stop::Answered("Sunny in Oslo.".into()));
    // The model was sent the hosted tool after the function.
    let sent = &model.requests()[0].body["tools"];
    assert_eq!(sent[1]["type"], "web_search_20260318");
    // The turn is kept as the provider wrote it, hosted blocks and all.
    assert_eq!(
        state.messages()[1]["content"],
        anthropic_turn_with_a_search()["content"]
    );
    // No function call was made for it, and the audit has the provider's call.
    let records = sink.records();
    let call = records
        .iter()
        .find(|r| r.status == "hosted")
        .expect("an audit record");
    assert_eq!(call.tool, "web_search");
    assert_eq!(call.call_id.as_deref(), Some("srvtoolu_1"));
    assert_eq!(call.arguments["query"], "oslo weather");
    assert!(records.iter().any(|r| r.status == "hosted_result"));
    assert!(
        events
            .lock()
            .unwrap()
            .iter()
            .any(|e| matches!(e, AgentEvent::Hosted { items, .. } if items.len() == 2))
    );
}

#[tokio::test]
async fn the_agent_refuses_hosted_tools_that_need_the_application() {
    let model = ScriptedModel::new([anthropic_turn_with_a_search()]);
    let computer = HostedTool::ComputerUse(ComputerUse {
        display: Some((1024, 768)),
        environment: None,
    });
    let agent = Agent::new(Toolbox::new().with(LookUp), ANTHROPIC, model.clone())
        .with_request(request(vec![computer]));
    let mut state = agent.start("Click the button.");
    let err = agent
        .run(&mut state, &ToolContext::new())
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            AgentError::Request(RequestError::HostedSetting {
                tool: "computer_use",
                ..
            })
        ),
        "{err}"
    );
    assert!(model.requests().is_empty(), "the model was asked anyway");
}

#[tokio::test]
async fn a_raw_entry_is_checked_as_its_typed_form() {
    // OpenAI's remote MCP tool, written raw, asking before each call (its default): the loop
    // cannot answer the provider's approval requests, as with the typed form.
    for entry in [
        json!({"type": "mcp", "server_label": "docs", "server_url": "https://mcp.example.com/mcp"}),
        json!({"type": "mcp", "server_label": "docs", "server_url": "https://mcp.example.com/mcp", "require_approval": "always"}),
    ] {
        let raw = HostedTool::Raw(RawHosted {
            provider: "openai-responses".into(),
            tool: entry,
        });
        let model = ScriptedModel::new([anthropic_turn_with_a_search()]);
        let agent = Agent::new(Toolbox::new().with(LookUp), RESPONSES, model.clone())
            .with_request(request(vec![raw]));
        let mut state = agent.start("Search the docs.");
        let err = agent
            .run(&mut state, &ToolContext::new())
            .await
            .unwrap_err();
        assert!(
            matches!(
                &err,
                AgentError::Request(RequestError::HostedSetting { tool: "raw", .. })
            ),
            "{err}"
        );
        assert!(model.requests().is_empty(), "the model was asked anyway");
    }
    // A raw computer-use entry, likewise.
    let raw = HostedTool::Raw(RawHosted {
        provider: "anthropic".into(),
        tool: json!({"type": "computer_20251124", "name": "computer", "display_width_px": 800, "display_height_px": 600}),
    });
    let model = ScriptedModel::new([anthropic_turn_with_a_search()]);
    let agent = Agent::new(Toolbox::new().with(LookUp), ANTHROPIC, model.clone())
        .with_request(request(vec![raw]));
    let mut state = agent.start("Click.");
    assert!(agent.run(&mut state, &ToolContext::new()).await.is_err());
    assert!(model.requests().is_empty());
    // Anthropic's connector written raw asks nobody: refused as the typed default is.
    let raw = HostedTool::Raw(RawHosted {
        provider: "anthropic".into(),
        tool: json!({"type": "mcp_toolset", "mcp_server_name": "docs"}),
    });
    let refused = Toolbox::new()
        .provider(ANTHROPIC)
        .request(&request(vec![raw]))
        .unwrap_err();
    assert!(
        matches!(
            refused,
            RequestError::HostedSetting {
                tool: "remote_mcp",
                ..
            }
        ),
        "{refused}"
    );
    // With the application's approval turned off explicitly, the raw OpenAI entry is fine.
    let raw = HostedTool::Raw(RawHosted {
        provider: "openai-responses".into(),
        tool: json!({"type": "mcp", "server_label": "docs", "server_url": "https://mcp.example.com/mcp", "require_approval": "never"}),
    });
    assert!(
        Toolbox::new()
            .provider(RESPONSES)
            .request(&request(vec![raw]))
            .is_ok()
    );
}

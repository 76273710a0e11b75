//! What a tool block costs in tokens (feature `tokens`): OpenAI's published example counted
//! exactly, the estimates for Anthropic and Gemini, the report's largest parts, and budgets.
#![cfg(feature = "tokens")]

#[path = "support/defined.rs"]
mod defined;

use defined::Defined;
use serde_json::json;
use toolsmith::provider::{TokenBudget, ToolRequest, o200k_tokens};
use toolsmith::{Dialect, ToolDefinition, Toolbox};

/// The function of OpenAI's cookbook "How to count tokens with tiktoken" (section "Counting
/// tokens for chat completions with tool calls").
fn weather() -> Defined {
    Defined(ToolDefinition::new(
        "get_current_weather",
        "Get the current weather in a given location",
        json!({
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
                "unit": {"type": "string", "description": "The unit of temperature to return", "enum": ["celsius", "fahrenheit"]}
            },
            "required": ["location"]
        }),
    ))
}

/// The cookbook's messages as OpenAI counts them for gpt-4o: 3 tokens per message, its role
/// and content, and 3 for the reply's start.
fn cookbook_messages() -> usize {
    let messages = [
        (
            "system",
            "You are a helpful assistant that can answer to questions about the weather.",
        ),
        ("user", "What's the weather like in San Francisco?"),
    ];
    messages
        .iter()
        .map(|(role, content)| 3 + o200k_tokens(role) + o200k_tokens(content))
        .sum::<usize>()
        + 3
}

#[test]
fn openais_published_example_counts_exactly() {
    let toolbox = Toolbox::new().with(weather());
    for dialect in [
        Dialect::OpenAiChat { strict: false },
        Dialect::OpenAiResponses { strict: false },
    ] {
        let block = toolbox
            .provider(dialect)
            .request(&ToolRequest::default())
            .unwrap();
        let report = block.tokens();
        assert!(report.exact);
        // The cookbook: 101 prompt tokens for gpt-4o, counted by its function and by the API.
        assert_eq!(cookbook_messages() + report.total, 101, "{report:?}");
    }
}

#[test]
fn anthropic_and_gemini_are_estimated_with_the_published_overhead() {
    let toolbox = Toolbox::new().with(weather());
    let anthropic = toolbox
        .provider(Dialect::Anthropic { strict: false })
        .request(&ToolRequest::default())
        .unwrap()
        .tokens();
    assert!(!anthropic.exact);
    assert_eq!(
        anthropic.overhead, 346,
        "Anthropic's tool-use system prompt, tool_choice auto"
    );
    let text = toolbox
        .export_text(Dialect::Anthropic { strict: false })
        .unwrap();
    // One tool: its JSON, counted in o200k (the array's brackets are not the tool's).
    assert_eq!(
        anthropic.tools[0].tokens,
        o200k_tokens(&text[1..text.len() - 1])
    );
    assert_eq!(anthropic.total, 346 + anthropic.tools[0].tokens);
    let forced = ToolRequest {
        choice: toolsmith::provider::ToolChoice::Required,
        ..ToolRequest::default()
    };
    let forced = toolbox
        .provider(Dialect::Anthropic { strict: false })
        .request(&forced)
        .unwrap()
        .tokens();
    assert_eq!(forced.overhead, 313, "any or tool");
    let gemini = toolbox
        .provider(Dialect::Gemini)
        .request(&ToolRequest::default())
        .unwrap()
        .tokens();
    assert_eq!(gemini.overhead, 0);
    assert!(gemini.total > 20, "{gemini:?}");
}

#[test]
fn the_report_names_the_largest_and_budgets_fail_the_lint_run() {
    let long = Defined(ToolDefinition::new(
        "summarize_document",
        "Summarizes a document. ".repeat(40),
        json!({"type": "object", "properties": {"text": {"type": "string", "description": "The text."}}}),
    ));
    let toolbox = Toolbox::new().with(weather()).with(long);
    let block = toolbox
        .provider(Dialect::OpenAiChat { strict: false })
        .request(&ToolRequest::default())
        .unwrap();
    let report = block.tokens();
    assert_eq!(report.largest(1)[0].name, "summarize_document");
    assert_eq!(
        report.total,
        report.tools.iter().map(|t| t.tokens).sum::<usize>() + report.overhead
    );
    let findings = block.lint_tokens(&TokenBudget {
        per_tool: Some(100),
        total: Some(150),
    });
    assert_eq!(findings.len(), 2, "{findings:#?}");
    assert_eq!(findings[0].tool, "summarize_document");
    assert!(
        findings[0].message.contains("over its budget of 100"),
        "{}",
        findings[0].message
    );
    assert!(
        findings[1]
            .message
            .contains("largest: `summarize_document`"),
        "{}",
        findings[1].message
    );
    assert!(block.lint_tokens(&TokenBudget::default()).is_empty());
}

#[test]
fn deferred_tools_are_left_out_of_what_every_turn_pays() {
    let long = Defined(ToolDefinition::new(
        "summarize_document",
        "Summarizes a document. ".repeat(40),
        json!({"type": "object", "properties": {"text": {"type": "string", "description": "The text."}}}),
    ));
    let toolbox = Toolbox::new().with(weather()).with(long);
    let deferred = ToolRequest {
        defer: vec!["summarize_document".into()],
        ..ToolRequest::default()
    };
    for dialect in [
        Dialect::OpenAiResponses { strict: false },
        Dialect::Anthropic { strict: false },
        Dialect::OpenAiChat { strict: false },
        Dialect::Gemini,
    ] {
        let all = toolbox
            .provider(dialect)
            .request(&ToolRequest::default())
            .unwrap()
            .tokens();
        let some = toolbox
            .provider(dialect)
            .request(&deferred)
            .unwrap()
            .tokens();
        assert!(
            some.total < all.total,
            "{dialect}: {} !< {}",
            some.total,
            all.total
        );
        assert!(
            !some.tools.iter().any(|t| t.name == "summarize_document"),
            "{dialect}"
        );
        // Every dialect reports what the deferred tool costs once found or loaded.
        assert_eq!(
            some.deferred
                .iter()
                .map(|t| t.name.as_str())
                .collect::<Vec<_>>(),
            ["summarize_document"],
            "{dialect}"
        );
        assert!(some.deferred[0].tokens > 40, "{dialect}");
    }
    // Where the provider searches, the deferred tool is listed at what loading it costs.
    let native = toolbox
        .provider(Dialect::Anthropic { strict: false })
        .request(&deferred)
        .unwrap()
        .tokens();
    assert_eq!(native.deferred[0].name, "summarize_document");
}

#[test]
fn openais_closing_tokens_are_counted_once_per_request() {
    let long = Defined(ToolDefinition::new(
        "summarize_document",
        "Summarizes a document.",
        json!({"type": "object", "properties": {"text": {"type": "string", "description": "The text."}}}),
    ));
    let one = Toolbox::new().with(weather());
    let two = Toolbox::new().with(weather()).with(long);
    for dialect in [
        Dialect::OpenAiChat { strict: false },
        Dialect::OpenAiResponses { strict: false },
    ] {
        let one = one
            .provider(dialect)
            .request(&ToolRequest::default())
            .unwrap()
            .tokens();
        let two = two
            .provider(dialect)
            .request(&ToolRequest::default())
            .unwrap()
            .tokens();
        // The cookbook adds `func_end` (12) after its loop over the functions.
        assert_eq!(one.overhead, 12);
        assert_eq!(two.overhead, 12);
        assert_eq!(two.total, two.tools[0].tokens + two.tools[1].tokens + 12);
        // The first function costs the same alone and beside another.
        assert_eq!(one.tools[0].tokens, two.tools[0].tokens);
        assert_eq!(one.total, one.tools[0].tokens + 12);
    }
}

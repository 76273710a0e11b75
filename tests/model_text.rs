//! What the model reads when a call fails: the application's words (secrets redacted, code and
//! fields kept), and a stop to a tool whose model keeps sending arguments it refuses, after
//! which the run goes on.

use serde_json::json;
use toolsmith::policy::{Defaults, ErrorText, ErrorView, ToolPolicy};
use toolsmith::{ToolContext, Toolbox, tool};

/// Looks a ticket up. Read-only. Not for changing tickets.
#[tool(effect = "read")]
fn look_up(
    /// The ticket.
    #[arg(range(min = 1, max = 1000))]
    id: u32,
) -> u32 {
    id
}

/// Says hello. Read-only. Not for real conversations.
#[tool(effect = "read")]
fn say_hello() -> &'static str {
    "hello"
}

#[tokio::test]
async fn the_applications_words_keep_the_code_and_the_fields() {
    let text = ErrorText::new(|view: &ErrorView<'_>| {
        (view.tool == "look_up").then(|| {
            format!(
                "Ticket ids run from 1 to 1000 ({}). Debug key sk-proj-4f9a8b7c6d5e4f3a2b1c0d.",
                view.error.fields()[0]
            )
        })
    });
    let toolbox = Toolbox::new()
        .with(LookUp)
        .with(SayHello)
        .with_defaults(Defaults {
            error_text: Some(text),
            ..Defaults::default()
        });
    let ctx = ToolContext::new();
    let out = toolbox.call("look_up", json!({"id": 5000}), &ctx).await;
    let err = out.error().unwrap();
    assert!(
        err.message()
            .starts_with("Ticket ids run from 1 to 1000 (/id: 5000 is greater")
    );
    assert!(!err.message().contains("sk-proj-4f9a"), "{}", err.message());
    assert_eq!(err.code().as_str(), "invalid_arguments");
    assert_eq!(err.fields()[0].pointer, "/id");
    // Another tool keeps toolsmith's words (the hook said `None`).
    let out = toolbox.call("say_hello", json!({"x": 1}), &ctx).await;
    assert!(
        out.error()
            .unwrap()
            .message()
            .contains("unknown parameter `x`")
    );
}

#[tokio::test]
async fn a_tool_whose_model_keeps_failing_is_told_to_stop_and_the_run_goes_on() {
    let toolbox = Toolbox::new().with(LookUp).with(SayHello).with_tool_policy(
        "look_up",
        ToolPolicy {
            max_invalid: Some(2),
            ..ToolPolicy::default()
        },
    );
    let run = ToolContext::new().with_run_id("run-stuck");
    let first = toolbox.call("look_up", json!({"id": 0}), &run).await;
    let first = first.error().unwrap();
    assert!(
        first
            .message()
            .contains("Fix these and call the tool again")
    );
    assert!(!first.needs_human());
    // The second refusal in the run: stop, do not retry.
    let second = toolbox.call("look_up", json!({"id": "x"}), &run).await;
    let second = second.error().unwrap();
    assert_eq!(second.code().as_str(), "invalid_arguments");
    assert!(
        second.message().contains("Stop calling it"),
        "{}",
        second.message()
    );
    assert!(!second.is_retryable());
    assert!(second.needs_human());
    // The run goes on: other tools, and valid calls of this one.
    assert!(
        toolbox
            .call("say_hello", json!({}), &run)
            .await
            .is_success()
    );
    assert!(
        toolbox
            .call("look_up", json!({"id": 3}), &run)
            .await
            .is_success()
    );
    // Another run starts afresh; a call without a run is never counted.
    let other = ToolContext::new().with_run_id("run-other");
    let out = toolbox.call("look_up", json!({"id": 0}), &other).await;
    assert!(!out.error().unwrap().message().contains("Stop calling it"));
    for _ in 0..3 {
        let out = toolbox
            .call("look_up", json!({"id": 0}), &ToolContext::new())
            .await;
        assert!(!out.error().unwrap().message().contains("Stop calling it"));
    }
}

#[tokio::test]
async fn a_toolbox_wide_limit_applies_to_every_tool() {
    let toolbox = Toolbox::new().with(LookUp).with_defaults(Defaults {
        max_invalid: Some(1),
        ..Defaults::default()
    });
    let run = ToolContext::new().with_run_id("run-strict");
    let out = toolbox.call("look_up", json!({}), &run).await;
    assert!(out.error().unwrap().message().contains("Stop calling it"));
}

#[tokio::test]
async fn one_tools_words_come_before_the_words_for_every_tool() {
    let text = ErrorText::new(|view: &ErrorView<'_>| {
        Some(format!("House style: `{}` could not run.", view.tool))
    })
    .with_tool("look_up", |view: &ErrorView<'_>| {
        (view.error.code().as_str() == "invalid_arguments")
            .then(|| "Ticket ids run from 1 to 1000.".to_owned())
    });
    let toolbox = Toolbox::new()
        .with(LookUp)
        .with(SayHello)
        .with_defaults(Defaults {
            error_text: Some(text),
            ..Defaults::default()
        });
    let ctx = ToolContext::new();
    let own = toolbox.call("look_up", json!({"id": 5000}), &ctx).await;
    assert_eq!(
        own.error().unwrap().message(),
        "Ticket ids run from 1 to 1000."
    );
    let other = toolbox.call("say_hello", json!({"x": 1}), &ctx).await;
    assert_eq!(
        other.error().unwrap().message(),
        "House style: `say_hello` could not run."
    );
    // Only one tool's words: the others keep toolsmith's.
    let only = Toolbox::new()
        .with(LookUp)
        .with(SayHello)
        .with_defaults(Defaults {
            error_text: Some(ErrorText::for_tool("look_up", |_: &ErrorView<'_>| {
                Some("Ticket ids run from 1 to 1000.".to_owned())
            })),
            ..Defaults::default()
        });
    let other = only.call("say_hello", json!({"x": 1}), &ctx).await;
    assert!(
        other
            .error()
            .unwrap()
            .message()
            .contains("unknown parameter `x`")
    );
}

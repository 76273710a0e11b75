//! A strict export declares every optional parameter nullable, and the model sends `null` for
//! one it leaves out: a call in a strict dialect takes that `null` as "left out", for
//! hand-written tools too, at any depth. A required parameter's `null` is still refused, and so
//! is any `null` the schema a model was given does not take (a non-strict export, a direct
//! call).

#[path = "support/defined.rs"]
mod defined;

use defined::Defined;
use serde_json::{Value, json};
use toolsmith::{Dialect, ToolCall, ToolContext, ToolDefinition, ToolOutcome, Toolbox};

fn echo() -> Defined {
    Defined(ToolDefinition::new(
        "find_orders",
        "Finds orders. Read-only. Not for refunds.",
        json!({
            "type": "object",
            "properties": {
                "customer": {"type": "string", "maxLength": 40},
                "limit": {"type": "integer", "minimum": 1, "maximum": 50},
                "filter": {
                    "type": "object",
                    "properties": {
                        "status": {"type": "string", "enum": ["open", "closed"]},
                        "since": {"type": "string", "maxLength": 10}
                    },
                    "required": ["status"],
                    "additionalProperties": false
                }
            },
            "required": ["customer"],
            "additionalProperties": false
        }),
    ))
}

async fn run(arguments: Value) -> ToolOutcome {
    run_in(Dialect::OpenAiChat { strict: true }, arguments).await
}

async fn run_in(dialect: Dialect, arguments: Value) -> ToolOutcome {
    let toolbox = Toolbox::new().with(echo());
    let openai = toolbox.provider(dialect);
    let call = ToolCall {
        id: None,
        name: "find_orders".into(),
        arguments,
    };
    openai.run(&call, &ToolContext::new()).await
}

#[tokio::test]
async fn nulls_for_optional_parameters_are_taken_as_left_out() {
    // The strict export says so.
    let toolbox = Toolbox::new().with(echo());
    let exported = toolbox
        .export(Dialect::OpenAiChat { strict: true })
        .unwrap();
    let limit = &exported[0]["function"]["parameters"]["properties"]["limit"];
    assert!(limit["type"].to_string().contains("null"), "{exported}");

    let out =
        run(json!({"customer": "c1", "limit": null, "filter": {"status": "open", "since": null}}))
            .await;
    assert!(out.is_success(), "{}", out.to_json());
    let read: Value = out.into_result().unwrap();
    assert_eq!(
        read,
        json!({"customer": "c1", "filter": {"status": "open"}})
    );
    let out = run(json!({"customer": "c1", "limit": null, "filter": null})).await;
    assert_eq!(
        out.into_result::<Value>().unwrap(),
        json!({"customer": "c1"})
    );
}

#[tokio::test]
async fn a_null_for_a_required_parameter_is_still_refused() {
    for arguments in [
        json!({"customer": null}),
        json!({"customer": "c1", "filter": {"status": null}}),
    ] {
        let out = run(arguments.clone()).await;
        let err = out
            .error()
            .unwrap_or_else(|| panic!("{arguments} was taken"));
        assert_eq!(
            err.code(),
            toolsmith::ErrorCode::InvalidArguments,
            "{arguments}"
        );
    }
}

#[tokio::test]
async fn where_the_schema_did_not_offer_null_it_is_still_refused() {
    let arguments = json!({"customer": "c1", "limit": null});
    for dialect in [
        Dialect::OpenAiChat { strict: false },
        Dialect::Anthropic { strict: false },
        Dialect::Mcp,
    ] {
        let out = run_in(dialect, arguments.clone()).await;
        assert_eq!(
            out.error().map(toolsmith::ToolError::code),
            Some(toolsmith::ErrorCode::InvalidArguments),
            "{dialect}: {}",
            out.to_json()
        );
    }
    let direct = Toolbox::new()
        .with(echo())
        .call("find_orders", arguments, &ToolContext::new())
        .await;
    assert!(!direct.is_success(), "{}", direct.to_json());
}

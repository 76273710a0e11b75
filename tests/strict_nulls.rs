//! A strict export declares every optional parameter nullable, and the model sends `null` for
//! one it leaves out: every tool takes that `null` as "left out", hand-written ones too, at any
//! depth; a required parameter's `null` is still refused.

use serde_json::{Value, json};
use toolsmith::tool::BoxFuture;
use toolsmith::{Arguments, Dialect, ToolCall, ToolContext, ToolDefinition, ToolOutcome, Toolbox};

/// A hand-written tool that answers with the arguments the toolbox read.
struct Echo(ToolDefinition);

impl toolsmith::Tool for Echo {
    fn definition(&self) -> &ToolDefinition {
        &self.0
    }
    fn call<'a>(
        &'a self,
        arguments: Arguments<'a>,
        _: &'a ToolContext,
    ) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            match self.0.validate(arguments) {
                Ok(read) => ToolOutcome::success(&read).unwrap_or_else(ToolOutcome::Error),
                Err(err) => ToolOutcome::Error(err),
            }
        })
    }
}

fn echo() -> Echo {
    Echo(ToolDefinition::new(
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
    let toolbox = Toolbox::new().with(echo());
    let openai = toolbox.provider(Dialect::OpenAiChat { strict: true });
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

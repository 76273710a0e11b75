//! Parameters that take any JSON (`serde_json::Value`, maps of values) register, advertise an
//! open schema, export where a provider can take it (and say why where it cannot), and are
//! reported by the `open_map` lint.

use std::collections::HashMap;

use serde_json::{Value, json};
use toolsmith::{Dialect, ToolContext, ToolDefinition, Toolbox, tool};

#[path = "support/defined.rs"]
mod defined;
use defined::Defined;

/// Stores a document's metadata. Writes data. Not for the document's text.
#[tool(effect = "write")]
fn store_metadata(
    /// The document.
    #[arg(range(min = 1))]
    id: u64,
    /// Any JSON the caller wants kept with the document.
    metadata: Value,
    /// Extra labels, by name.
    labels: Option<HashMap<String, Value>>,
) -> Value {
    json!({"id": id, "metadata": metadata, "labels": labels})
}

#[tokio::test]
async fn any_json_parameters_register_and_run() {
    let toolbox = Toolbox::new().with(StoreMetadata);
    let def = toolbox.get("store_metadata").unwrap().definition();
    let schema = def.input_schema();
    assert!(schema["properties"]["metadata"].is_object());
    let ctx = ToolContext::new();
    for metadata in [
        json!({"a": [1, 2]}),
        json!("text"),
        json!(7),
        json!(null),
        json!([true]),
    ] {
        let out = toolbox
            .call(
                "store_metadata",
                json!({"id": 1, "metadata": metadata}),
                &ctx,
            )
            .await;
        assert!(out.is_success(), "{metadata}: {}", out.to_json());
    }
}

/// Records an event. Writes data. Not for metrics.
#[tool(effect = "write")]
fn record_event(
    /// The event's payload, any JSON.
    payload: Value,
) -> usize {
    payload.to_string().len()
}

#[test]
fn any_json_exports_open_where_it_can_and_says_why_where_it_cannot() {
    let toolbox = Toolbox::new().with(RecordEvent);
    let def = toolbox.get("record_event").unwrap().definition();
    assert_eq!(
        def.input_schema()["properties"]["payload"],
        json!({"description": "The event's payload, any JSON."})
    );
    for dialect in [
        Dialect::OpenAiChat { strict: false },
        Dialect::OpenAiResponses { strict: false },
        Dialect::Anthropic { strict: false },
        Dialect::Gemini,
        Dialect::Mcp,
    ] {
        assert!(def.export(dialect).is_ok(), "{dialect}");
    }
    for dialect in [
        Dialect::OpenAiChat { strict: true },
        Dialect::OpenAiResponses { strict: true },
        Dialect::Anthropic { strict: true },
    ] {
        let err = def.export(dialect).unwrap_err();
        assert_eq!(err.path, "/properties/payload", "{dialect}");
        assert!(err.reason.contains("any JSON"), "{err}");
    }
    // The runtime lint reports free JSON as it reports open maps. (This package allows
    // `open_map` crate-wide in its Cargo.toml, which `#[tool]` reads; a definition written by
    // hand has the default levels.)
    let open = ToolDefinition::new(
        "record_event",
        "Records an event. Writes data. Not for metrics.",
        json!({"type": "object", "properties": {"payload": {"description": "Any JSON."}},
               "required": ["payload"], "additionalProperties": false}),
    );
    let mut toolbox = Toolbox::new();
    toolbox.register(Defined(open)).unwrap();
    let findings = toolbox.lint();
    assert!(
        findings
            .iter()
            .any(|f| f.lint == "open_map" && f.path == "/properties/payload"),
        "{findings:#?}"
    );
}

//! The README's `search_web` tool, end to end: schema, valid calls and invalid ones.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolsmith::{ErrorCode, Tool, ToolContext, ToolError, Toolbox, tool};

/// A recent time window.
#[derive(Debug, Deserialize, JsonSchema, Serialize, PartialEq)]
#[serde(rename_all = "lowercase")]
enum DateRestrict {
    D1,
    W1,
    M1,
}

#[derive(Debug, Serialize)]
struct SearchResults {
    query: String,
    num_results: u8,
    date_restrict: Option<DateRestrict>,
    trace_id: String,
}

/// Search the web for real-time information. Read-only.
///
/// Use for news, documentation and fact checks. Not for private internal documents.
#[tool(effect = "read")]
async fn search_web(
    ctx: &ToolContext,
    /// Search keywords in natural language; never a URL or SQL.
    #[arg(length(min = 2, max = 300))]
    query: String,
    /// How many results to return.
    #[arg(range(min = 1, max = 10), default = 5)]
    num_results: u8,
    /// Only results from this recent window; omit for no limit.
    date_restrict: Option<DateRestrict>,
) -> Result<SearchResults, ToolError> {
    Ok(SearchResults {
        query,
        num_results,
        date_restrict,
        trace_id: ctx.trace_id().to_owned(),
    })
}

fn toolbox() -> Toolbox {
    Toolbox::new().with(SearchWeb)
}

async fn call(args: &str) -> Value {
    let ctx = ToolContext::new().with_trace_id("tr_test");
    let out = toolbox().call("search_web", args, &ctx).await;
    serde_json::from_str(&out.to_json()).unwrap()
}

#[test]
fn canonical_schema() {
    let def = SearchWeb.definition();
    assert_eq!(def.name(), "search_web");
    assert_eq!(
        def.description(),
        "Search the web for real-time information. Read-only.\n\nUse for news, documentation and fact checks. Not for private internal documents."
    );
    let expected = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": "Search keywords in natural language; never a URL or SQL.",
                "minLength": 2,
                "maxLength": 300
            },
            "num_results": {
                "type": ["integer", "null"],
                "format": "uint8",
                "default": 5,
                "maximum": 10,
                "minimum": 1,
                "description": "How many results to return."
            },
            "date_restrict": {
                "anyOf": [{"$ref": "#/$defs/DateRestrict"}, {"type": "null"}],
                "description": "Only results from this recent window; omit for no limit."
            }
        },
        "additionalProperties": false,
        "required": ["query"],
        "$defs": {
            "DateRestrict": {"description": "A recent time window.", "type": "string", "enum": ["d1", "w1", "m1"]}
        }
    });
    assert_eq!(def.input_schema(), &expected, "{:#}", def.input_schema());
    assert!(jsonschema::meta::is_valid(def.input_schema()));
}

#[test]
fn schema_is_built_once() {
    let a: *const _ = SearchWeb.definition();
    let b: *const _ = SearchWeb.definition();
    assert_eq!(a, b);
}

#[tokio::test]
async fn valid_call_uses_defaults() {
    let out = call(r#"{"query":"rust"}"#).await;
    assert_eq!(
        out,
        json!({"status":"success","data":{"query":"rust","num_results":5,"date_restrict":null,"trace_id":"tr_test"}})
    );
    let out = call(r#"{"query":"rust","num_results":null,"date_restrict":null}"#).await;
    assert_eq!(out["data"]["num_results"], 5);
    let out = call(r#"{"query":"rust","num_results":3,"date_restrict":"w1"}"#).await;
    assert_eq!(out["data"]["num_results"], 3);
    assert_eq!(out["data"]["date_restrict"], "w1");
}

#[tokio::test]
async fn arguments_as_a_json_string() {
    let encoded = serde_json::to_string(r#"{"query":"rust"}"#).unwrap();
    let out = call(&encoded).await;
    assert_eq!(out["status"], "success", "{out}");
    let ctx = ToolContext::new();
    let value = Value::String(r#"{"query":"rust"}"#.into());
    let out = toolbox().call("search_web", &value, &ctx).await;
    assert!(out.is_success());
    let value = json!({"query": "rust", "num_results": 2});
    let out = toolbox().call("search_web", value, &ctx).await;
    assert_eq!(out.into_result::<Value>().unwrap()["num_results"], 2);
}

#[tokio::test]
async fn every_violation_is_reported_with_its_pointer() {
    let out = call(r#"{"query":"r","num_results":11,"date_restrict":"y9","extra":1}"#).await;
    assert_eq!(out["status"], "error");
    let err = &out["error"];
    assert_eq!(err["code"], "invalid_arguments");
    assert_eq!(err["retryable"], false);
    assert_eq!(err["trace_id"], "tr_test");
    let fields: Vec<(String, String)> = err["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["pointer"].as_str().unwrap().to_owned(),
                f["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let find = |p: &str| {
        fields
            .iter()
            .find(|(ptr, _)| ptr == p)
            .map(|(_, m)| m.clone())
            .unwrap_or_else(|| panic!("no error at {p}: {fields:?}"))
    };
    assert_eq!(find("/num_results"), "11 is greater than the maximum of 10");
    assert_eq!(
        find("/query"),
        r#""r" is 1 character; use at least 2 characters"#
    );
    assert_eq!(
        find("/date_restrict"),
        r#""y9" is not allowed; use one of "d1", "w1", "m1" or null"#
    );
    assert!(find("/extra").starts_with("unknown parameter `extra`; remove it; the known parameters are `query`, `num_results`, `date_restrict`"));
    assert_eq!(fields.len(), 4);
    let message = err["message"].as_str().unwrap();
    assert!(
        message.contains("/num_results: 11 is greater than the maximum of 10"),
        "{message}"
    );
}

#[tokio::test]
async fn missing_and_mistyped() {
    let out = call(r#"{"num_results":"5"}"#).await;
    let fields = out["error"]["fields"].as_array().unwrap();
    assert!(
        fields.iter().any(|f| f["pointer"] == "/query"
            && f["message"] == "required parameter `query` is missing; add it"),
        "{fields:?}"
    );
    assert!(
        fields.iter().any(|f| f["pointer"] == "/num_results"
            && f["message"] == r#"expected an integer or null, got a string "5""#),
        "{fields:?}"
    );
}

#[tokio::test]
async fn not_json_and_not_an_object() {
    let out = call(r#"{"query": "rust""#).await;
    assert_eq!(out["error"]["code"], "invalid_arguments");
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not valid JSON")
    );
    let out = call("[1,2]").await;
    assert_eq!(
        out["error"]["fields"][0]["message"],
        "the arguments must be an object, got an array; send one JSON object whose keys are the parameter names"
    );
}

#[tokio::test]
async fn unknown_tool_lists_the_available_ones() {
    let out = toolbox()
        .call("search", "{}", &ToolContext::default())
        .await;
    let err = out.error().unwrap();
    assert_eq!(err.code(), ErrorCode::UnknownTool);
    assert!(err.message().contains("`search_web`"), "{}", err.message());
}

//! Provider dialects: each exported schema obeys its provider's rules (checked here by code
//! written from PROVIDERS.md, independent of the transforms), what a dialect cannot express is
//! an error naming the tool and the place, the runtime agrees with the canonical schema on
//! documents drawn from every dialect's schema, names map both ways, calls parse, results encode.

mod common;

use std::collections::BTreeSet;

use common::{Gen, toolbox};
use serde_json::{Map, Value, json};
use toolsmith::{
    Annotations, Dialect, RegistrationError, Tool, ToolCall, ToolContext, ToolDefinition, Toolbox,
    tool,
};

/// The schema part of an exported tool.
fn schema_of(dialect: Dialect, tool: &Value) -> Option<&Value> {
    match dialect {
        Dialect::OpenAiChat { .. } => tool.pointer("/function/parameters"),
        Dialect::OpenAiResponses { .. } => tool.get("parameters"),
        Dialect::Anthropic { .. } => tool.get("input_schema"),
        Dialect::Gemini => tool.get("parameters"),
        Dialect::Mcp => tool.get("inputSchema"),
    }
}

/// Every schema node under `node`, with its pointer.
fn nodes<'v>(node: &'v Value, path: String, out: &mut Vec<(String, &'v Map<String, Value>)>) {
    let Value::Object(map) = node else { return };
    out.push((path.clone(), map));
    for (key, value) in map {
        match (key.as_str(), value) {
            ("properties" | "$defs" | "patternProperties", Value::Object(children)) => {
                for (name, child) in children {
                    nodes(child, format!("{path}/{key}/{name}"), out);
                }
            }
            ("anyOf" | "oneOf" | "allOf" | "prefixItems", Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    nodes(item, format!("{path}/{key}/{i}"), out);
                }
            }
            ("items" | "additionalProperties" | "not" | "if" | "then" | "else", child) => {
                nodes(child, format!("{path}/{key}"), out);
            }
            _ => {}
        }
    }
}

fn is_object(node: &Map<String, Value>) -> bool {
    node.get("type") == Some(&json!("object")) || node.contains_key("properties")
}

/// The provider's rules, as violations found in `tool`.
fn violations(dialect: Dialect, tool: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let name = match dialect {
        Dialect::OpenAiChat { .. } => tool.pointer("/function/name"),
        _ => tool.get("name"),
    }
    .and_then(Value::as_str)
    .unwrap_or_default();
    let name_ok = match dialect {
        Dialect::Mcp => {
            name.len() <= 128
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
        }
        Dialect::Gemini => {
            name.len() <= 64
                && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_.:-".contains(&b))
        }
        _ => {
            !name.is_empty()
                && name.len() <= 64
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_-".contains(&b))
        }
    };
    if !name_ok {
        out.push(format!("bad name {name:?}"));
    }
    match dialect {
        Dialect::OpenAiResponses { strict } if tool.get("strict") != Some(&json!(strict)) => {
            out.push("Responses tools always carry `strict`".into());
        }
        Dialect::OpenAiChat { strict }
            if tool.pointer("/function/strict") != Some(&json!(strict)) =>
        {
            out.push("`strict` missing".into());
        }
        _ => {}
    }
    let Some(schema) = schema_of(dialect, tool) else {
        if dialect != Dialect::Gemini {
            out.push("no schema".into());
        }
        return out;
    };
    if dialect != Dialect::Gemini {
        if schema.get("type") != Some(&json!("object")) {
            out.push("root is not an object".into());
        }
        if !jsonschema::meta::is_valid(schema) {
            out.push("not a valid JSON Schema".into());
        }
    }
    let mut all = Vec::new();
    nodes(schema, String::new(), &mut all);
    for (path, node) in all {
        let mut bad = |what: &str| out.push(format!("{path}: {what}"));
        match dialect {
            Dialect::OpenAiChat { strict: true } | Dialect::OpenAiResponses { strict: true } => {
                if path.is_empty() && (node.contains_key("$schema") || node.contains_key("anyOf")) {
                    bad("root has `$schema` or `anyOf`");
                }
                if is_object(node) {
                    if node.get("additionalProperties") != Some(&json!(false)) {
                        bad("object without additionalProperties:false");
                    }
                    let keys: Vec<&String> = node
                        .get("properties")
                        .and_then(Value::as_object)
                        .map(|p| p.keys().collect())
                        .unwrap_or_default();
                    let required: Vec<&str> = node
                        .get("required")
                        .and_then(Value::as_array)
                        .map(|r| r.iter().filter_map(Value::as_str).collect())
                        .unwrap_or_default();
                    if keys.len() != required.len()
                        || keys.iter().any(|k| !required.contains(&k.as_str()))
                    {
                        bad("not every property is required");
                    }
                }
                for key in [
                    "minLength",
                    "maxLength",
                    "oneOf",
                    "allOf",
                    "not",
                    "if",
                    "then",
                    "else",
                    "prefixItems",
                    "dependentRequired",
                    "dependentSchemas",
                ] {
                    if node.contains_key(key) {
                        bad(&format!("`{key}` is not supported"));
                    }
                }
                if let Some(f) = node.get("format").and_then(Value::as_str)
                    && ![
                        "date-time",
                        "time",
                        "date",
                        "duration",
                        "email",
                        "hostname",
                        "ipv4",
                        "ipv6",
                        "uuid",
                    ]
                    .contains(&f)
                {
                    bad(&format!("format {f} not allowed"));
                }
                if node.contains_key("$ref") && node.len() > 1 {
                    bad("`$ref` with siblings");
                }
            }
            Dialect::Anthropic { strict: true } => {
                if is_object(node) && node.get("additionalProperties") != Some(&json!(false)) {
                    bad("object without additionalProperties:false");
                }
                for key in [
                    "minimum",
                    "maximum",
                    "exclusiveMinimum",
                    "exclusiveMaximum",
                    "multipleOf",
                    "minLength",
                    "maxLength",
                    "maxItems",
                    "oneOf",
                    "$ref",
                    "$defs",
                    "prefixItems",
                ] {
                    if node.contains_key(key) {
                        bad(&format!("`{key}` is not supported"));
                    }
                }
                if node
                    .get("minItems")
                    .and_then(Value::as_u64)
                    .is_some_and(|n| n > 1)
                {
                    bad("minItems above 1");
                }
                if node.get("type").is_some_and(Value::is_array) {
                    bad("type array");
                }
            }
            Dialect::Gemini => {
                const ALLOWED: &[&str] = &[
                    "type",
                    "format",
                    "title",
                    "description",
                    "nullable",
                    "enum",
                    "properties",
                    "required",
                    "propertyOrdering",
                    "items",
                    "minItems",
                    "maxItems",
                    "minLength",
                    "maxLength",
                    "pattern",
                    "minimum",
                    "maximum",
                    "minProperties",
                    "maxProperties",
                    "anyOf",
                    "default",
                    "example",
                ];
                for key in node.keys() {
                    if !ALLOWED.contains(&key.as_str()) {
                        bad(&format!("`{key}` is not in Gemini's Schema"));
                    }
                }
                if node.get("type").is_some_and(|t| !t.is_string()) {
                    bad("type is not a single string");
                }
                if node
                    .get("enum")
                    .and_then(Value::as_array)
                    .is_some_and(|v| v.iter().any(|x| !x.is_string()))
                {
                    bad("non-string enum value");
                }
                if node.contains_key("anyOf") && node.len() > 1 {
                    bad("`anyOf` beside other fields");
                }
                if !path.is_empty() && !node.contains_key("type") && !node.contains_key("anyOf") {
                    bad("a value without a type");
                }
                if let Some(props) = node.get("properties").and_then(Value::as_object) {
                    for key in props.keys() {
                        let ok = key.len() <= 64
                            && key.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                            && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
                        if !ok {
                            bad(&format!("parameter name {key:?}"));
                        }
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// What each dialect cannot express among the shapes, by tool name.
fn expected_failures(dialect: Dialect) -> BTreeSet<&'static str> {
    match dialect {
        Dialect::OpenAiChat { strict: true } | Dialect::OpenAiResponses { strict: true } => {
            ["count_words", "pair"].into()
        }
        Dialect::Anthropic { strict: true } => ["count_words", "pair", "walk"].into(),
        Dialect::Gemini => ["pair", "walk"].into(),
        _ => BTreeSet::new(),
    }
}

#[test]
fn every_dialect_obeys_its_rules_or_says_why_not() {
    let toolbox = toolbox();
    for dialect in Dialect::ALL {
        let mut failed = BTreeSet::new();
        for def in toolbox.definitions() {
            match def.export(dialect) {
                Ok(tool) => {
                    let v = violations(dialect, tool);
                    assert!(v.is_empty(), "{dialect} {}: {v:#?}\n{tool:#}", def.name());
                }
                Err(err) => {
                    let text = err.to_string();
                    assert!(
                        text.contains(def.name()) && text.contains(dialect.name()),
                        "{text}"
                    );
                    assert!(!err.reason.is_empty());
                    failed.insert(def.name().to_owned());
                }
            }
        }
        let expected: BTreeSet<String> = expected_failures(dialect)
            .into_iter()
            .map(str::to_owned)
            .collect();
        assert_eq!(failed, expected, "{dialect}");
    }
}

#[test]
fn export_text_is_the_export_serialized() {
    let toolbox = toolbox();
    for dialect in Dialect::ALL {
        for def in toolbox.definitions() {
            match (def.export(dialect), def.export_text(dialect)) {
                (Ok(value), Ok(text)) => {
                    assert_eq!(text, serde_json::to_string(value).unwrap());
                }
                (Err(a), Err(b)) => assert_eq!(a, b),
                (a, b) => panic!("{dialect} {}: {a:?} vs {b:?}", def.name()),
            }
        }
        // Whole toolboxes: the dialect's request shape, or the same error.
        let mut exportable = Toolbox::new();
        for def in toolbox
            .definitions()
            .filter(|def| def.export(dialect).is_ok())
        {
            exportable
                .register_arc(toolbox.get(def.name()).unwrap().clone())
                .unwrap();
        }
        for tb in [&toolbox, &exportable] {
            match (tb.export(dialect), tb.export_text(dialect)) {
                (Ok(value), Ok(text)) => {
                    assert_eq!(
                        serde_json::from_str::<Value>(&text).unwrap(),
                        value,
                        "{dialect}"
                    );
                    assert_eq!(text, serde_json::to_string(&value).unwrap());
                }
                (Err(a), Err(b)) => assert_eq!(a, b),
                (a, b) => panic!("{dialect}: {a:?} vs {b:?}"),
            }
        }
    }
}

#[test]
fn export_errors_name_the_place_and_the_reason() {
    let toolbox = toolbox();
    let err = toolbox
        .export(Dialect::OpenAiChat { strict: true })
        .unwrap_err();
    assert_eq!(err.tool, "count_words");
    assert_eq!(err.path, "/properties/counts");
    assert!(err.reason.contains("open map"), "{err}");
    let walk = toolbox.resolve(Dialect::Mcp, "walk").unwrap();
    let err = walk
        .definition()
        .export(Dialect::Anthropic { strict: true })
        .unwrap_err();
    assert!(err.reason.contains("contains itself"), "{err}");
    let pair = toolbox.resolve(Dialect::Mcp, "pair").unwrap();
    let err = pair.definition().export(Dialect::Gemini).unwrap_err();
    assert_eq!(err.path, "/properties/pair");
    assert!(err.reason.contains("tuple"), "{err}");
}

fn property<'v>(tool: &'v Value, dialect: Dialect, name: &str) -> &'v Value {
    &schema_of(dialect, tool).unwrap()["properties"][name]
}

#[test]
fn constraints_a_dialect_cannot_carry_are_written_into_the_description() {
    let toolbox = toolbox();
    let search = toolbox
        .resolve(Dialect::Mcp, "search")
        .unwrap()
        .definition();
    let strict = Dialect::OpenAiChat { strict: true };
    let tool = search.export(strict).unwrap();
    assert_eq!(
        property(tool, strict, "query")["description"],
        "Keywords. (2 to 30 characters)"
    );
    assert_eq!(
        property(tool, strict, "num_results")["minimum"],
        1,
        "OpenAI strict keeps numeric bounds"
    );
    let anthropic = Dialect::Anthropic { strict: true };
    let tool = search.export(anthropic).unwrap();
    assert_eq!(
        property(tool, anthropic, "query")["description"],
        "Keywords. (2 to 30 characters)"
    );
    assert_eq!(
        property(tool, anthropic, "num_results")["description"],
        "How many. (1 to 10)"
    );
    assert_eq!(
        property(tool, anthropic, "num_results")["anyOf"][1],
        json!({"type": "null"})
    );
    let levels = toolbox
        .resolve(Dialect::Mcp, "set_level")
        .unwrap()
        .definition();
    let tool = levels.export(Dialect::Gemini).unwrap();
    let level = property(tool, Dialect::Gemini, "level");
    assert_eq!(level["description"], "The level. (one of: 1, 2, 3)");
    assert_eq!(level["type"], "integer");
    let search = search.export(Dialect::Gemini).unwrap();
    let window = property(search, Dialect::Gemini, "date_restrict");
    assert_eq!(window["nullable"], true);
    assert_eq!(window["enum"], json!(["d1", "w1", "m1"]));
    let optional = toolbox
        .resolve(Dialect::Mcp, "optional")
        .unwrap()
        .definition();
    let tool = optional.export(Dialect::Gemini).unwrap();
    assert_eq!(
        property(tool, Dialect::Gemini, "ratio")["description"],
        "A ratio. (greater than -1.5; less than 2.5)"
    );
}

#[test]
fn strict_dialects_make_optional_parameters_required_and_nullable() {
    let toolbox = toolbox();
    let search = toolbox
        .resolve(Dialect::Mcp, "search")
        .unwrap()
        .definition();
    let dialect = Dialect::OpenAiResponses { strict: true };
    let tool = search.export(dialect).unwrap();
    let params = schema_of(dialect, tool).unwrap();
    assert_eq!(
        params["required"],
        json!(["query", "num_results", "date_restrict"])
    );
    assert_eq!(
        params["properties"]["num_results"]["type"],
        json!(["integer", "null"])
    );
    assert_eq!(
        params["properties"]["date_restrict"]["anyOf"][1],
        json!({"type": "null"})
    );
    assert!(
        params.get("$defs").is_none(),
        "non-recursive types are inlined"
    );
    let walk = toolbox.resolve(Dialect::Mcp, "walk").unwrap().definition();
    let tool = walk.export(dialect).unwrap();
    let params = schema_of(dialect, tool).unwrap();
    assert_eq!(
        params["$defs"]["Tree"]["properties"]["children"]["items"],
        json!({"$ref": "#/$defs/Tree"})
    );
}

#[test]
fn mcp_tools_carry_title_annotations_and_output_schema() {
    let toolbox = toolbox();
    let exported = toolbox.export(Dialect::Mcp).unwrap();
    let forecast = exported["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "forecast")
        .unwrap();
    assert_eq!(forecast["title"], "Weather forecast");
    assert_eq!(
        forecast["annotations"],
        json!({"readOnlyHint": true, "openWorldHint": false})
    );
    assert_eq!(forecast["outputSchema"]["type"], "object");
    assert_eq!(
        forecast["outputSchema"]["required"],
        json!(["celsius", "sky"])
    );
    let ping = exported["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "ping")
        .unwrap();
    assert!(
        ping.get("outputSchema").is_none(),
        "a string result has no object schema"
    );
    assert_eq!(
        ping["annotations"],
        json!({"readOnlyHint": true}),
        "from `effect = \"read\"`"
    );
}

#[tokio::test]
async fn structured_results_match_the_output_schema() {
    let toolbox = toolbox();
    let call = ToolCall {
        id: Some("1".into()),
        name: "forecast".into(),
        arguments: json!({"city": "Paris"}),
    };
    let result = toolbox
        .provider(Dialect::Mcp)
        .respond(&call, &ToolContext::new())
        .await;
    assert_eq!(result["isError"], false);
    let schema = toolbox
        .resolve(Dialect::Mcp, "forecast")
        .unwrap()
        .definition()
        .output_schema()
        .unwrap()
        .clone();
    let validator = jsonschema::validator_for(&schema).unwrap();
    assert!(
        validator.is_valid(&result["structuredContent"]),
        "{result:#}"
    );
    assert_eq!(
        result["structuredContent"],
        json!({"celsius": 21.5, "sky": "w1"})
    );
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        text, result["structuredContent"],
        "the text block carries the same JSON"
    );
}

/// Documents drawn from each dialect's schema: the runtime accepts exactly those the canonical
/// schema accepts (strict dialects send `null` for every optional parameter; that is the default).
#[test]
fn runtime_agrees_with_the_canonical_schema_on_every_dialects_documents() {
    let toolbox = toolbox();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ctx = ToolContext::new();
    let per_dialect = std::env::var("TOOLSMITH_DIFF_CASES")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(2_000);
    for dialect in Dialect::ALL {
        let defs: Vec<(&ToolDefinition, Value)> = toolbox
            .definitions()
            .filter_map(|d| {
                d.export(dialect).ok().map(|t| {
                    (
                        d,
                        schema_of(dialect, t)
                            .cloned()
                            .unwrap_or_else(|| json!({"type": "object"})),
                    )
                })
            })
            .collect();
        let oracles: Vec<_> = defs
            .iter()
            .map(|(d, _)| {
                jsonschema::options()
                    .with_draft(jsonschema::Draft::Draft202012)
                    .should_validate_formats(true)
                    .build(d.input_schema())
                    .unwrap()
            })
            .collect();
        let (mut accepted, mut rejected) = (0, 0);
        for seed in 0..per_dialect {
            let index = (seed % defs.len() as u64) as usize;
            let (def, schema) = &defs[index];
            let mut g = Gen {
                root: schema,
                state: seed.wrapping_mul(0x9E37_79B9) ^ dialect.name().len() as u64,
            };
            let mut doc = g.valid(schema, 0);
            if g.chance(30) {
                g.mutate(&mut doc);
            }
            let expected = common::accepts(&oracles[index], &doc);
            let outcome = rt.block_on(toolbox.call(def.name(), &doc, &ctx));
            assert_eq!(
                outcome.is_success(),
                expected,
                "{dialect} `{}` on {doc}: {outcome}",
                def.name()
            );
            if expected {
                accepted += 1
            } else {
                rejected += 1
            }
        }
        assert!(
            accepted > per_dialect / 10 && rejected > per_dialect / 20,
            "{dialect}: {accepted} accepted, {rejected} rejected"
        );
    }
}

#[test]
fn dotted_names_map_per_provider_and_collisions_are_refused() {
    /// Create an event.
    #[tool(
        name = "calendar.create_event",
        effect = "read",
        allow(description_scope, tool_name, unbounded_string)
    )]
    fn create_event() {}

    /// Another tool whose OpenAI name would be the same.
    #[tool(
        name = "calendar_create_event",
        effect = "read",
        allow(description_scope, tool_name, unbounded_string)
    )]
    fn create_event_2() {}

    let toolbox = Toolbox::new().with(CreateEvent);
    for (dialect, exported) in [
        (
            Dialect::OpenAiChat { strict: false },
            "calendar_create_event",
        ),
        (Dialect::Anthropic { strict: true }, "calendar_create_event"),
        (Dialect::Gemini, "calendar.create_event"),
        (Dialect::Mcp, "calendar.create_event"),
    ] {
        assert_eq!(dialect.tool_name("calendar.create_event"), exported);
        assert!(toolbox.resolve(dialect, exported).is_some(), "{dialect}");
    }
    let err = Toolbox::new()
        .with(CreateEvent)
        .register(CreateEvent2)
        .map(|_| ())
        .unwrap_err();
    assert!(
        matches!(&err, RegistrationError::NameCollision { exported, dialect, .. } if exported == "calendar_create_event" && *dialect == "openai"),
        "{err}"
    );
}

#[tokio::test]
async fn calls_parse_from_every_provider_and_map_back() {
    /// Create an event.
    #[tool(
        name = "calendar.create_event",
        effect = "read",
        allow(description_scope, tool_name, unbounded_string)
    )]
    async fn create_event(
        /// The title.
        title: String,
    ) -> String {
        title
    }
    let toolbox = Toolbox::new().with(CreateEvent);
    let ctx = ToolContext::new();
    let cases = [
        (
            Dialect::OpenAiChat { strict: true },
            json!({"id": "chatcmpl-1", "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "calendar_create_event", "arguments": "{\"title\":\"Standup\"}"}}]}}]}),
            Some("call_a"),
        ),
        (
            Dialect::OpenAiResponses { strict: true },
            json!({"id": "resp_1", "output": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "function_call", "id": "fc_1", "call_id": "call_b", "name": "calendar_create_event", "arguments": "{\"title\":\"Standup\"}"}]}),
            Some("call_b"),
        ),
        (
            Dialect::Anthropic { strict: false },
            json!({"id": "msg_1", "role": "assistant", "content": [
            {"type": "text", "text": "Creating it."},
            {"type": "tool_use", "id": "toolu_c", "name": "calendar_create_event", "input": {"title": "Standup"}}]}),
            Some("toolu_c"),
        ),
        (
            Dialect::Gemini,
            json!({"candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"id": "g1", "name": "calendar.create_event", "args": {"title": "Standup"}}}]}}]}),
            Some("g1"),
        ),
        (
            Dialect::Mcp,
            json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "calendar.create_event", "arguments": {"title": "Standup"}}}),
            Some("7"),
        ),
    ];
    for (dialect, response, id) in cases {
        let calls = ToolCall::parse(dialect, &response).unwrap();
        assert_eq!(calls.len(), 1, "{dialect}");
        assert_eq!(calls[0].id.as_deref(), id);
        let outcome = toolbox.provider(dialect).run(&calls[0], &ctx).await;
        assert_eq!(
            outcome.into_result::<String>().unwrap(),
            "Standup",
            "{dialect}"
        );
    }
}

#[test]
fn malformed_responses_are_clear_errors() {
    let cases = [
        (
            Dialect::OpenAiChat { strict: false },
            json!({"choices": [{"message": {"tool_calls": [{"id": "x", "type": "function", "function": {"arguments": "{}"}}]}}]}),
            "/choices/0/message/tool_calls/0/function/name",
        ),
        (Dialect::OpenAiChat { strict: false }, json!("hello"), ""),
        (
            Dialect::OpenAiResponses { strict: false },
            json!({"output": [{"type": "function_call", "name": "f", "arguments": "{}"}]}),
            "/output/0/call_id",
        ),
        (
            Dialect::Anthropic { strict: false },
            json!({"content": [{"type": "tool_use", "id": "t", "name": "f", "input": "oops"}]}),
            "/content/0/input",
        ),
        (
            Dialect::Gemini,
            json!({"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "args": [1]}}]}}]}),
            "/candidates/0/content/parts/0/functionCall/args",
        ),
        (
            Dialect::Mcp,
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            "/method",
        ),
        (Dialect::Mcp, json!({"name": 5}), "/name"),
    ];
    for (dialect, response, path) in cases {
        let err = ToolCall::parse(dialect, &response).unwrap_err();
        assert_eq!(err.path, path, "{dialect}: {err}");
        assert!(
            err.to_string()
                .starts_with(&format!("not a {} tool call", dialect.name())),
            "{err}"
        );
    }
    // No calls is not an error.
    assert!(
        ToolCall::parse(
            Dialect::Anthropic { strict: false },
            &json!({"content": [{"type": "text", "text": "hi"}]})
        )
        .unwrap()
        .is_empty()
    );
}

#[tokio::test]
async fn results_are_encoded_in_each_providers_shape() {
    let toolbox = toolbox();
    let ctx = ToolContext::new().with_trace_id("tr_p");
    let ok = ToolCall {
        id: Some("c1".into()),
        name: "ping".into(),
        arguments: json!({}),
    };
    let bad = ToolCall {
        id: Some("c2".into()),
        name: "search".into(),
        arguments: json!({"query": "x"}),
    };

    let envelope_ok = r#"{"status":"success","data":"pong"}"#;
    let d = Dialect::OpenAiChat { strict: false };
    assert_eq!(
        toolbox.provider(d).respond(&ok, &ctx).await,
        json!({"role": "tool", "tool_call_id": "c1", "content": envelope_ok})
    );
    let d = Dialect::OpenAiResponses { strict: true };
    assert_eq!(
        toolbox.provider(d).respond(&ok, &ctx).await,
        json!({"type": "function_call_output", "call_id": "c1", "output": envelope_ok})
    );
    let d = Dialect::Anthropic { strict: false };
    let block = toolbox.provider(d).respond(&bad, &ctx).await;
    assert_eq!(block["type"], "tool_result");
    assert_eq!(block["tool_use_id"], "c2");
    assert_eq!(block["is_error"], true);
    let text: Value = serde_json::from_str(block["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text["error"]["code"], "invalid_arguments");
    let d = Dialect::Gemini;
    assert_eq!(
        toolbox.provider(d).respond(&ok, &ctx).await,
        json!({"functionResponse": {"name": "ping", "id": "c1", "response": {"output": "pong"}}})
    );
    let part = toolbox.provider(d).respond(&bad, &ctx).await;
    assert_eq!(
        part["functionResponse"]["response"]["error"]["code"],
        "invalid_arguments"
    );
    let d = Dialect::Mcp;
    assert_eq!(
        toolbox.provider(d).respond(&ok, &ctx).await,
        json!({"content": [{"type": "text", "text": envelope_ok}], "isError": false})
    );
    let result = toolbox.provider(d).respond(&bad, &ctx).await;
    assert_eq!(result["isError"], true);
    assert!(result.get("structuredContent").is_none());
}

#[test]
fn anthropic_strict_request_limits() {
    fn def(name: String, optional: usize) -> ToolDefinition {
        let props: Map<String, Value> = (0..optional)
            .map(|i| (format!("p{i}"), json!({"type": "string"})))
            .collect();
        ToolDefinition::new(
            name,
            "A tool.",
            json!({"type": "object", "properties": props, "additionalProperties": false}),
        )
    }
    struct Manual(ToolDefinition);
    impl Tool for Manual {
        fn definition(&self) -> &ToolDefinition {
            &self.0
        }
        fn call<'a>(
            &'a self,
            _: toolsmith::Arguments<'a>,
            _: &'a ToolContext,
        ) -> toolsmith::tool::BoxFuture<'a, toolsmith::ToolOutcome> {
            Box::pin(async {
                toolsmith::ToolOutcome::success(&()).unwrap_or_else(toolsmith::ToolOutcome::Error)
            })
        }
    }
    let strict = Dialect::Anthropic { strict: true };
    let mut many = Toolbox::new();
    for i in 0..21 {
        many.register(Manual(def(format!("t{i}"), 0))).unwrap();
    }
    assert!(
        many.export(strict)
            .unwrap_err()
            .reason
            .contains("21 strict tools")
    );
    assert!(many.export(Dialect::Anthropic { strict: false }).is_ok());
    let optional = Toolbox::new()
        .with(Manual(def("a".into(), 13)))
        .with(Manual(def("b".into(), 12)));
    assert!(
        optional
            .export(strict)
            .unwrap_err()
            .reason
            .contains("25 optional parameters")
    );
}

#[test]
fn openai_strict_size_limits() {
    let strict = Dialect::OpenAiChat { strict: true };
    let values: Vec<String> = (0..1001).map(|i| format!("v{i}")).collect();
    let big_enum = ToolDefinition::new(
        "e",
        "d",
        json!({"type": "object", "properties": {"x": {"type": "string", "enum": values}}}),
    );
    assert!(
        big_enum
            .export(strict)
            .unwrap_err()
            .reason
            // 1001 values and the `null` an optional parameter takes in strict mode.
            .contains("1002 enum values")
    );
    let mut deep = json!({"type": "object", "properties": {}});
    for _ in 0..11 {
        deep = json!({"type": "object", "properties": {"n": deep}});
    }
    let deep = ToolDefinition::new("d", "d", deep);
    assert!(
        deep.export(strict)
            .unwrap_err()
            .reason
            .contains("levels deep")
    );
    let annotated =
        ToolDefinition::new("a", "d", json!({"type": "object"})).with_annotations(Annotations {
            idempotent: Some(true),
            ..Annotations::default()
        });
    assert_eq!(
        annotated.export(Dialect::Mcp).unwrap()["annotations"],
        json!({"idempotentHint": true})
    );
}

#[test]
fn exports_are_built_once() {
    let toolbox = toolbox();
    let def = toolbox
        .resolve(Dialect::Mcp, "search")
        .unwrap()
        .definition();
    let a: *const Value = def.export(Dialect::Gemini).unwrap();
    let b: *const Value = def.export(Dialect::Gemini).unwrap();
    assert_eq!(a, b);
}

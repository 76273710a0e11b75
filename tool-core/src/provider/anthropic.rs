//! Anthropic tools.
//!
//! Non-strict: the canonical schema (2020-12 is documented) without `$schema`. Strict: `$ref`s
//! inlined and recursion refused, every object closed, unions as `anyOf` (the SDK's own
//! transform cannot read `type: [T, "null"]`), no numeric or length constraints and `minItems`
//! only 0 or 1 (the rest said in the description), only the allowed `format`s; and per request
//! at most 20 strict tools, 24 optional parameters and 16 union-typed parameters.

use serde_json::{Map, Value, json};

use super::call::{CallParseError, Reader, ToolCall};
use super::transform::{Target, derive, downgrade, strict_common};
use crate::definition::ToolDefinition;
use crate::dialect::{Dialect, ExportError};
use crate::outcome::ToolOutcome;

/// Formats strict tool use accepts (Structured outputs, "JSON Schema limitations").
const STRICT_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "uri",
    "ipv4",
    "ipv6",
    "uuid",
];

const MAX_STRICT_TOOLS: usize = 20;
const MAX_OPTIONAL_PARAMS: usize = 24;
const MAX_UNION_PARAMS: usize = 16;

pub(super) fn input_schema(
    def: &ToolDefinition,
    dialect: Dialect,
    strict: bool,
) -> Result<Value, ExportError> {
    derive(def, dialect, strict, false, strict_node)
}

fn strict_node(
    node: &mut Map<String, Value>,
    path: &str,
    target: Target<'_>,
) -> Result<(), ExportError> {
    strict_common(node, path, target, STRICT_FORMATS)?;
    let min_items_ok = node
        .get("minItems")
        .and_then(Value::as_u64)
        .is_none_or(|n| n <= 1);
    if !min_items_ok {
        downgrade(node, &["minItems", "maxItems"]);
    }
    downgrade(
        node,
        &[
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
            "multipleOf",
            "minLength",
            "maxLength",
            "maxItems",
            "uniqueItems",
            "minProperties",
            "maxProperties",
            "propertyNames",
        ],
    );
    // Last, so that what was said above stays on the outer node with the description.
    type_array_to_any_of(node);
    Ok(())
}

/// `{"type": ["integer", "null"], "minimum": 1}` → `{"anyOf": [{"type": "integer", "minimum": 1},
/// {"type": "null"}]}`, keeping the description and default on the outer node.
fn type_array_to_any_of(node: &mut Map<String, Value>) {
    let Some(Value::Array(types)) = node.get("type") else {
        return;
    };
    let types: Vec<Value> = types.clone();
    node.shift_remove("type");
    let outer_keys = ["description", "default", "title"];
    let mut inner = Map::new();
    for key in node.keys().cloned().collect::<Vec<_>>() {
        if !outer_keys.contains(&key.as_str())
            && let Some(v) = node.shift_remove(&key)
        {
            inner.insert(key, v);
        }
    }
    let variants: Vec<Value> = types
        .into_iter()
        .map(|t| {
            if t == "null" {
                json!({"type": "null"})
            } else {
                let mut branch = Map::new();
                branch.insert("type".into(), t);
                // Keywords apply to the type they constrain; every branch gets them.
                for (k, v) in &inner {
                    branch.insert(k.clone(), v.clone());
                }
                if let Some(Value::Array(values)) = branch.get_mut("enum") {
                    values.retain(|v| !v.is_null());
                }
                Value::Object(branch)
            }
        })
        .collect();
    node.insert("anyOf".into(), Value::Array(variants));
}

/// Per-request limits of strict tool use, over all tools of one request.
pub(super) fn check_request_limits(tools: &[&Value]) -> Result<(), ExportError> {
    let dialect = Dialect::Anthropic { strict: true }.name();
    if tools.len() > MAX_STRICT_TOOLS {
        return Err(ExportError::new(
            "",
            dialect,
            "",
            format!(
                "{} strict tools; a request allows {MAX_STRICT_TOOLS}: split the tools across requests or export some non-strict",
                tools.len()
            ),
        ));
    }
    let mut optional = 0;
    let mut unions = 0;
    for tool in tools {
        let schema = &tool["input_schema"];
        let required: Vec<&str> = schema["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let props = schema["properties"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        optional += props
            .keys()
            .filter(|k| !required.contains(&k.as_str()))
            .count();
        unions += props.values().filter(|p| p.get("anyOf").is_some()).count();
    }
    if optional > MAX_OPTIONAL_PARAMS {
        return Err(ExportError::new(
            "",
            dialect,
            "",
            format!(
                "{optional} optional parameters in all; strict tool use allows {MAX_OPTIONAL_PARAMS} per request: make some required, or export fewer tools together"
            ),
        ));
    }
    if unions > MAX_UNION_PARAMS {
        return Err(ExportError::new(
            "",
            dialect,
            "",
            format!(
                "{unions} parameters with union types (`Option`, enums with data) in all; strict tool use allows {MAX_UNION_PARAMS} per request"
            ),
        ));
    }
    Ok(())
}

pub(crate) fn parse(response: &Value) -> Result<Vec<ToolCall>, CallParseError> {
    let r = Reader {
        dialect: Dialect::Anthropic { strict: false },
    };
    let (path, blocks) = match response.get("content") {
        Some(blocks) => ("/content", blocks),
        None if response.is_array() => ("", response),
        None => return Err(r.error("", "a message with `content`, or its blocks")),
    };
    let mut out = Vec::new();
    for (i, block) in r.array(blocks, path)?.iter().enumerate() {
        let at = format!("{path}/{i}");
        r.object(block, &at)?;
        if block.get("type").and_then(Value::as_str) != Some("tool_use") {
            continue;
        }
        let input = block
            .get("input")
            .filter(|v| v.is_object())
            .ok_or_else(|| r.error(&format!("{at}/input"), "an object"))?;
        out.push(ToolCall {
            id: Some(r.string(block, "id", &at)?),
            name: r.string(block, "name", &at)?,
            arguments: input.clone(),
        });
    }
    Ok(out)
}

/// A `tool_result` block holding the envelope, marked as an error unless the call succeeded.
pub(crate) fn encode(id: String, envelope: String, outcome: &ToolOutcome) -> Value {
    json!({
        "type": "tool_result",
        "tool_use_id": id,
        "content": [{"type": "text", "text": envelope}],
        "is_error": !outcome.is_success(),
    })
}

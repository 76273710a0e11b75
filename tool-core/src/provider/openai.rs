//! OpenAI function tools (Chat Completions and Responses).
//!
//! Non-strict: the canonical schema as it is, without `$schema`. Strict (Structured Outputs):
//! every object closed and every property listed in `required` (optional ones already accept
//! `null`), `oneOf` read as `anyOf`, `$ref`s inlined but for recursive types (kept bare in
//! `$defs`), only the allowed `format`s, no `minLength`/`maxLength` (said in the description),
//! and the documented size limits checked.

use serde_json::{Map, Value, json};

use super::call::{CallParseError, Reader, ToolCall};
use super::transform::{Target, derive, downgrade, is_object, strict_common};
use crate::definition::ToolDefinition;
use crate::dialect::{Dialect, ExportError};

/// Formats strict mode accepts ("Supported schemas", Structured Outputs guide).
const STRICT_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Limits of strict mode ("Supported schemas").
const MAX_PROPERTIES: usize = 5000;
const MAX_NESTING: usize = 10;
const MAX_STRING_CHARS: usize = 120_000;
const MAX_ENUM_VALUES: usize = 1000;
const LARGE_ENUM: usize = 250;
const LARGE_ENUM_CHARS: usize = 15_000;

pub(super) fn parameters(
    def: &ToolDefinition,
    dialect: Dialect,
    strict: bool,
) -> Result<Value, ExportError> {
    let mut schema = derive(def, dialect, strict, true, strict_node)?;
    if strict {
        // The limits count the schema as OpenAI resolves it: before anything is hoisted.
        check_limits(
            &schema,
            Target {
                tool: def.name(),
                dialect,
            },
        )?;
        super::transform::hoist(&mut schema);
    }
    Ok(schema)
}

fn strict_node(
    node: &mut Map<String, Value>,
    path: &str,
    target: Target<'_>,
) -> Result<(), ExportError> {
    if strict_common(node, path, target, STRICT_FORMATS)? {
        // Every property required, and an optional one made to accept `null` (the model's
        // way to leave it out, which the toolbox takes as left out).
        let required: Vec<String> = node
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        if let Some(Value::Object(properties)) = node.get_mut("properties") {
            for (key, property) in properties.iter_mut() {
                if !required.contains(key) {
                    super::transform::make_nullable(property);
                }
            }
        }
        let keys: Vec<Value> = node
            .get("properties")
            .and_then(Value::as_object)
            .map(|props| props.keys().cloned().map(Value::String).collect())
            .unwrap_or_default();
        node.entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        node.insert("required".into(), Value::Array(keys));
    }
    downgrade(
        node,
        &[
            "minLength",
            "maxLength",
            "uniqueItems",
            "minProperties",
            "maxProperties",
            "propertyNames",
        ],
    );
    Ok(())
}

#[derive(Default)]
struct Size {
    properties: usize,
    string_chars: usize,
    enum_values: usize,
}

fn check_limits(schema: &Value, target: Target<'_>) -> Result<(), ExportError> {
    let mut size = Size::default();
    if let Some(defs) = schema.get("$defs").and_then(Value::as_object) {
        size.string_chars += defs.keys().map(|k| k.chars().count()).sum::<usize>();
    }
    measure(schema, "", 0, &mut size, target)?;
    if size.properties > MAX_PROPERTIES {
        return Err(target.error(
            "",
            format!(
                "{} object properties in all; strict mode allows {MAX_PROPERTIES}",
                size.properties
            ),
        ));
    }
    if size.string_chars > MAX_STRING_CHARS {
        return Err(target.error(
            "",
            format!(
                "property names, definition names, enum and const values add up to {} characters; strict mode allows {MAX_STRING_CHARS}",
                size.string_chars
            ),
        ));
    }
    if size.enum_values > MAX_ENUM_VALUES {
        return Err(target.error(
            "",
            format!(
                "{} enum values in all; strict mode allows {MAX_ENUM_VALUES}",
                size.enum_values
            ),
        ));
    }
    Ok(())
}

fn measure(
    node: &Value,
    path: &str,
    depth: usize,
    size: &mut Size,
    target: Target<'_>,
) -> Result<(), ExportError> {
    let Value::Object(map) = node else {
        return Ok(());
    };
    let mut depth = depth;
    if is_object(map) {
        depth += 1;
        if depth > MAX_NESTING {
            return Err(target.error(
                path,
                format!("objects nest {depth} levels deep; strict mode allows {MAX_NESTING}"),
            ));
        }
    }
    if let Some(props) = map.get("properties").and_then(Value::as_object) {
        size.properties += props.len();
        size.string_chars += props.keys().map(|k| k.chars().count()).sum::<usize>();
    }
    if let Some(values) = map.get("enum").and_then(Value::as_array) {
        size.enum_values += values.len();
        let chars: usize = values
            .iter()
            .filter_map(Value::as_str)
            .map(|s| s.chars().count())
            .sum();
        size.string_chars += chars;
        if values.len() > LARGE_ENUM && chars > LARGE_ENUM_CHARS {
            return Err(target.error(
                path,
                format!(
                    "an enum of {} string values with {chars} characters in all; strict mode allows {LARGE_ENUM_CHARS} characters for enums of more than {LARGE_ENUM} values",
                    values.len()
                ),
            ));
        }
    }
    if let Some(Value::String(s)) = map.get("const") {
        size.string_chars += s.chars().count();
    }
    for (key, value) in map {
        match (key.as_str(), value) {
            ("properties" | "$defs", Value::Object(children)) => {
                for (name, child) in children {
                    measure(child, &format!("{path}/{key}/{name}"), depth, size, target)?;
                }
            }
            ("anyOf", Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    measure(item, &format!("{path}/{key}/{i}"), depth, size, target)?;
                }
            }
            ("items" | "additionalProperties", child) => {
                measure(child, &format!("{path}/{key}"), depth, size, target)?;
            }
            _ => {}
        }
    }
    Ok(())
}

pub(crate) fn parse_chat(response: &Value) -> Result<Vec<ToolCall>, CallParseError> {
    let r = Reader {
        dialect: Dialect::OpenAiChat { strict: false },
    };
    let mut lists: Vec<(String, &Value)> = Vec::new();
    if let Some(choices) = response.get("choices") {
        for (i, choice) in r.array(choices, "/choices")?.iter().enumerate() {
            if let Some(calls) = choice
                .pointer("/message/tool_calls")
                .filter(|c| !c.is_null())
            {
                lists.push((format!("/choices/{i}/message/tool_calls"), calls));
            }
        }
    } else if let Some(calls) = response.get("tool_calls") {
        if !calls.is_null() {
            lists.push(("/tool_calls".into(), calls));
        }
    } else if response.is_array() {
        lists.push((String::new(), response));
    } else {
        return Err(r.error("", "a chat completion, a message or a `tool_calls` array"));
    }
    let mut out = Vec::new();
    for (path, list) in lists {
        for (i, call) in r.array(list, &path)?.iter().enumerate() {
            let at = format!("{path}/{i}");
            r.object(call, &at)?;
            if call
                .get("type")
                .and_then(Value::as_str)
                .is_some_and(|t| t != "function")
            {
                continue; // custom tools are not function calls
            }
            let function = call
                .get("function")
                .ok_or_else(|| r.error(&format!("{at}/function"), "an object"))?;
            let arguments = function
                .get("arguments")
                .filter(|a| a.is_string() || a.is_object())
                .ok_or_else(|| r.error(&format!("{at}/function/arguments"), "a JSON string"))?;
            out.push(ToolCall {
                id: Some(r.string(call, "id", &at)?),
                name: r.string(function, "name", &format!("{at}/function"))?,
                arguments: arguments.clone(),
            });
        }
    }
    Ok(out)
}

pub(crate) fn parse_responses(response: &Value) -> Result<Vec<ToolCall>, CallParseError> {
    let r = Reader {
        dialect: Dialect::OpenAiResponses { strict: false },
    };
    let (path, items) = match response.get("output") {
        Some(items) => ("/output", items),
        None if response.is_array() => ("", response),
        None if response.get("type").is_some() => {
            return parse_responses(&Value::Array(vec![response.clone()]));
        }
        None => return Err(r.error("", "a response with `output`, or its items")),
    };
    let mut out = Vec::new();
    for (i, item) in r.array(items, path)?.iter().enumerate() {
        let at = format!("{path}/{i}");
        r.object(item, &at)?;
        if item.get("type").and_then(Value::as_str) != Some("function_call") {
            continue;
        }
        let arguments = item
            .get("arguments")
            .filter(|a| a.is_string() || a.is_object())
            .ok_or_else(|| r.error(&format!("{at}/arguments"), "a JSON string"))?;
        out.push(ToolCall {
            id: Some(r.string(item, "call_id", &at)?),
            name: r.string(item, "name", &at)?,
            arguments: arguments.clone(),
        });
    }
    Ok(out)
}

/// A Chat Completions `tool` message holding the envelope.
pub(crate) fn encode_chat(id: String, envelope: String) -> Value {
    json!({"role": "tool", "tool_call_id": id, "content": envelope})
}

/// A Responses `function_call_output` item holding the envelope.
pub(crate) fn encode_responses(id: String, envelope: String) -> Value {
    json!({"type": "function_call_output", "call_id": id, "output": envelope})
}

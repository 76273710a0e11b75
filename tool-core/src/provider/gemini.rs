//! Google Gemini function declarations with the OpenAPI-subset `parameters`.
//!
//! `$ref`s inlined (recursion refused: `ref`/`defs` are allowed only at the root), no
//! `$schema`/`$defs`, single scalar `type` with `nullable: true` instead of type arrays and
//! `null` branches, `const` as a one-value `enum`, `oneOf` as `anyOf` alone on its node, string
//! enums only, only the keywords of the SDK's `Schema` model (others said in the description),
//! and the name rules for tools and parameters.

use serde_json::{Map, Value, json};

use super::call::{CallParseError, Reader, ToolCall};
use super::transform::{
    Target, describe, downgrade, inline_refs, is_null, merge_all_of, one_of_to_any_of,
    reject_unsupported,
};
use crate::definition::ToolDefinition;
use crate::dialect::{Dialect, ExportError};
use crate::outcome::ToolOutcome;
use crate::schema::visit_mut;

/// The fields of the SDK's `Schema` model (`extra='forbid'`).
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

pub(super) fn declaration(def: &ToolDefinition, name: &str) -> Result<Value, ExportError> {
    let target = Target {
        tool: def.name(),
        dialect: Dialect::Gemini,
    };
    let mut declaration = json!({"name": name, "description": def.description()});
    let has_params = def
        .input_schema()
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty());
    // An OBJECT with no properties is refused; a tool without parameters has no `parameters`.
    if has_params {
        declaration["parameters"] = parameters(def.input_schema(), target)?;
    }
    // The result's schema goes in `responseJsonSchema`, which takes full JSON Schema.
    if let Some(output) = def.output_schema() {
        declaration["responseJsonSchema"] = super::transform::without_dialect(output);
    }
    Ok(declaration)
}

fn parameters(canonical: &Value, target: Target<'_>) -> Result<Value, ExportError> {
    let mut schema = inline_refs(canonical, false, target)?;
    visit_mut(&mut schema, "", &mut |node, path| {
        node_rules(node, path, target)
    })?;
    Ok(schema)
}

fn valid_param_name(name: &str) -> bool {
    name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

fn node_rules(
    node: &mut Map<String, Value>,
    path: &str,
    target: Target<'_>,
) -> Result<(), ExportError> {
    one_of_to_any_of(node);
    merge_all_of(node, path, target)?;
    nullable_from_any_of(node);
    // What `nullable_from_any_of` merged in from the one non-null branch gets the same rules.
    one_of_to_any_of(node);
    merge_all_of(node, path, target)?;
    reject_unsupported(node, path, target)?;
    names_to_enum(node);
    if let Some(props) = node.get("properties").and_then(Value::as_object)
        && let Some(bad) = props.keys().find(|k| !valid_param_name(k))
    {
        return Err(target.error(
            path,
            format!(
                "the name `{bad}` is not allowed: Gemini names start with a letter or `_` and use only letters, digits and `_` (at most 64); use `#[arg(rename = \"...\")]` or `#[serde(rename = \"...\")]`"
            ),
        ));
    }
    nullable_from_type_array(node, path, target)?;
    if let Some(value) = node.shift_remove("const") {
        if !value.is_string() {
            return Err(target.error(
                path,
                "a `const` that is not a string cannot be expressed; Gemini enums are strings",
            ));
        }
        node.insert("enum".into(), Value::Array(vec![value]));
    }
    if let Some(Value::Array(values)) = node.get_mut("enum") {
        if values.iter().any(Value::is_null) {
            values.retain(|v| !v.is_null());
            node.insert("nullable".into(), Value::Bool(true));
        }
        if node
            .get("enum")
            .and_then(Value::as_array)
            .is_some_and(|v| v.iter().any(|x| !x.is_string()))
        {
            // Integer enums (`serde_repr`): keep the type, say the values.
            downgrade(node, &["enum"]);
        }
    }
    let format_ok = match (
        node.get("type").and_then(Value::as_str),
        node.get("format").and_then(Value::as_str),
    ) {
        (_, None) => true,
        (Some("string"), Some(f)) => matches!(f, "date-time" | "enum"),
        (Some("number"), Some(f)) => matches!(f, "float" | "double"),
        (Some("integer"), Some(f)) => matches!(f, "int32" | "int64"),
        _ => false,
    };
    if !format_ok {
        downgrade(node, &["format"]);
    }
    if node.get("additionalProperties") == Some(&Value::Bool(false)) {
        node.shift_remove("additionalProperties");
    }
    let extra: Vec<String> = node
        .keys()
        .filter(|k| !ALLOWED.contains(&k.as_str()))
        .cloned()
        .collect();
    let extra_refs: Vec<&str> = extra.iter().map(String::as_str).collect();
    downgrade(node, &extra_refs);
    // On Gemini 3 a node with `anyOf` may hold nothing else.
    if node.contains_key("anyOf") {
        let nullable = node.get("nullable") == Some(&Value::Bool(true));
        node.retain(|k, _| k == "anyOf");
        if nullable && let Some(Value::Array(variants)) = node.get_mut("anyOf") {
            for variant in variants.iter_mut().filter_map(Value::as_object_mut) {
                variant.insert("nullable".into(), Value::Bool(true));
            }
        }
    }
    Ok(())
}

/// A union of variant names (a unit enum whose variants have docs: `anyOf` of `const`s) →
/// one string `enum`, with the variants' docs said in the description.
fn names_to_enum(node: &mut Map<String, Value>) {
    let Some(Value::Array(variants)) = node.get("anyOf") else {
        return;
    };
    let mut values = Vec::new();
    let mut docs = Vec::new();
    for variant in variants {
        let Some(v) = variant.as_object() else { return };
        let is_name = v.get("type").is_none_or(|t| t == "string")
            && v.keys().all(|k| {
                matches!(
                    k.as_str(),
                    "type" | "const" | "enum" | "description" | "title"
                )
            });
        if !is_name {
            return;
        }
        let names: Vec<Value> = match (v.get("const"), v.get("enum")) {
            (Some(c @ Value::String(_)), _) => vec![c.clone()],
            (None, Some(Value::Array(e))) if e.iter().all(Value::is_string) => e.clone(),
            _ => return,
        };
        if let Some(doc) = v.get("description").and_then(Value::as_str) {
            let listed: Vec<&str> = names.iter().filter_map(Value::as_str).collect();
            docs.push(format!("{}: {doc}", listed.join(", ")));
        }
        values.extend(names);
    }
    node.shift_remove("anyOf");
    node.insert("type".into(), Value::String("string".into()));
    node.insert("enum".into(), Value::Array(values));
    describe(node, &docs);
}

/// `type: ["integer", "null"]` → `type: "integer", nullable: true`.
fn nullable_from_type_array(
    node: &mut Map<String, Value>,
    path: &str,
    target: Target<'_>,
) -> Result<(), ExportError> {
    let Some(Value::Array(types)) = node.get("type") else {
        return Ok(());
    };
    let nullable = types.iter().any(|t| t == "null");
    let others: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
    match others.as_slice() {
        [one] => {
            node.insert("type".into(), one.clone());
        }
        _ => {
            return Err(target.error(
                path,
                "a value of several JSON types cannot be expressed; Gemini takes one type per value",
            ));
        }
    }
    if nullable {
        node.insert("nullable".into(), Value::Bool(true));
    }
    Ok(())
}

/// `anyOf: [X, {"type": "null"}]` → `X` with `nullable: true` (the node's description kept).
fn nullable_from_any_of(node: &mut Map<String, Value>) {
    let Some(Value::Array(variants)) = node.get("anyOf") else {
        return;
    };
    if !variants.iter().any(is_null) {
        return;
    }
    let rest: Vec<Value> = variants.iter().filter(|v| !is_null(v)).cloned().collect();
    node.insert("nullable".into(), Value::Bool(true));
    if let [Value::Object(only)] = rest.as_slice() {
        node.shift_remove("anyOf");
        let description = node.shift_remove("description");
        for (k, v) in only {
            node.entry(k.clone()).or_insert_with(|| v.clone());
        }
        if let Some(Value::String(outer)) = description {
            let inner = node
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned);
            node.insert("description".into(), Value::String(outer));
            if let Some(inner) = inner.filter(|i| !i.is_empty()) {
                describe(node, &[inner]);
            }
        }
    } else {
        node.insert("anyOf".into(), Value::Array(rest));
    }
}

pub(crate) fn parse(response: &Value) -> Result<Vec<ToolCall>, CallParseError> {
    let r = Reader {
        dialect: Dialect::Gemini,
    };
    let mut lists: Vec<(String, &Value)> = Vec::new();
    if let Some(candidates) = response.get("candidates") {
        for (i, candidate) in r.array(candidates, "/candidates")?.iter().enumerate() {
            if let Some(parts) = candidate.pointer("/content/parts") {
                lists.push((format!("/candidates/{i}/content/parts"), parts));
            }
        }
    } else if let Some(parts) = response.get("parts") {
        lists.push(("/parts".into(), parts));
    } else if response.is_array() {
        lists.push((String::new(), response));
    } else {
        return Err(r.error(
            "",
            "a response with `candidates`, a content with `parts`, or its parts",
        ));
    }
    let mut out = Vec::new();
    for (path, parts) in lists {
        for (i, part) in r.array(parts, &path)?.iter().enumerate() {
            let at = format!("{path}/{i}");
            r.object(part, &at)?;
            let Some(call) = part.get("functionCall") else {
                continue;
            };
            let at = format!("{at}/functionCall");
            r.object(call, &at)?;
            let args = match call.get("args") {
                None | Some(Value::Null) => json!({}),
                Some(args @ Value::Object(_)) => args.clone(),
                Some(_) => return Err(r.error(&format!("{at}/args"), "an object")),
            };
            out.push(ToolCall {
                id: call.get("id").and_then(Value::as_str).map(str::to_owned),
                name: r.string(call, "name", &at)?,
                arguments: args,
            });
        }
    }
    Ok(out)
}

/// A `functionResponse` part: the data under `output`, or the error under `error`.
pub(crate) fn encode(call: &ToolCall, outcome: &ToolOutcome) -> Value {
    let mut response = match (outcome.data(), outcome.error()) {
        // A stored result is given as the envelope gives it: the reference, not the data.
        _ if matches!(outcome, ToolOutcome::Stored(..)) => {
            serde_json::to_value(outcome).unwrap_or(Value::Null)
        }
        (Some(data), _) => {
            json!({"output": serde_json::from_str::<Value>(data.get()).unwrap_or(Value::Null)})
        }
        (None, err) => json!({ "error": err }),
    };
    if outcome.is_replay() {
        // As the envelope says it: the first call's result again, the tool not run.
        response["replayed"] = Value::Bool(true);
    }
    // What the output checks did, beside the output, as the envelope says it.
    if let ToolOutcome::Checked(_, notes) = outcome
        && let (Value::Object(response), Ok(Value::Object(notes))) =
            (&mut response, serde_json::to_value(&**notes))
    {
        response.extend(notes);
    }
    let mut part = json!({"name": call.name, "response": response});
    if let Some(id) = &call.id {
        part["id"] = Value::String(id.clone());
    }
    json!({ "functionResponse": part })
}

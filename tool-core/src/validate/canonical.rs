//! A call's arguments read once, into the one form every step of the call sees: validated,
//! `null` for an optional parameter read as the parameter left out, defaults applied, numbers
//! written as integers where they are integers, and hashed as canonical JSON (RFC 8785).
//!
//! Two documents a tool reads as the same value become the same canonical value, so they
//! match the same approval and share an idempotency key; the tool itself is handed that
//! value, so what was approved, hashed and recorded is what runs.

use serde_json::{Map, Value};

use crate::arguments::Arguments;
use crate::error::ToolError;
use crate::limits::InputLimits;

use super::Validation;

/// A call's arguments, read once: the canonical value and its hash
/// ([`arguments_hash`](crate::policy::arguments_hash)).
#[derive(Clone, Debug)]
pub(crate) struct Checked {
    pub(crate) value: Value,
    pub(crate) hash: String,
}

/// Reads `arguments` for the tool `def` once: validated with the full validator (every
/// violation explained), then made canonical and hashed.
pub(crate) fn read_once(
    def: &Validation,
    arguments: &Arguments<'_>,
    limits: &InputLimits,
) -> Result<Checked, ToolError> {
    let mut value = super::validate_full(def, arguments, limits)?;
    canonicalize(def.input_schema(), &mut value);
    let hash = crate::json::canonical::arguments_hash(&value);
    Ok(Checked { value, hash })
}

/// How deep the schema is followed; deeper values are kept as they are (the limits on
/// arguments refuse deeper documents long before).
const MAX_DEPTH: usize = 128;

/// Rewrites a valid `value` of the schema `root` into its canonical form: in every object the
/// schema describes, a `null` for a property that is not required is removed (an optional
/// parameter reads `null` as absent), an absent property with a `default` gets it, and
/// everywhere integral floats (below 2^53) become integers. Parts of the value the schema does
/// not describe with certainty (a choice between several object shapes) keep their keys as
/// they are. One walk of the value.
pub(crate) fn canonicalize(root: &Value, value: &mut Value) {
    node(root, Some(root), value, 0);
}

fn node(root: &Value, schema: Option<&Value>, value: &mut Value, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    let schema = schema.map(|schema| resolve(root, schema));
    match value {
        Value::Object(map) => object(root, schema, map, depth),
        Value::Array(items) => {
            let item = schema
                .and_then(|s| s.get("items"))
                .filter(|s| s.is_object());
            for value in items {
                node(root, item, value, depth + 1);
            }
        }
        Value::Number(number) => {
            if let Some(f) = number.as_f64().filter(|_| number.is_f64())
                && f.fract() == 0.0
                && f.abs() < 9_007_199_254_740_992.0
            {
                // Exact below 2^53; -0.0 is 0.
                #[allow(clippy::cast_possible_truncation)]
                let n = f as i64;
                *value = Value::from(n);
            }
        }
        _ => {}
    }
}

fn object(root: &Value, schema: Option<&Value>, map: &mut Map<String, Value>, depth: usize) {
    let properties = schema
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object);
    let extra = schema
        .and_then(|s| s.get("additionalProperties"))
        .filter(|s| s.is_object());
    if properties.is_none() && extra.is_none() {
        // `Option<Struct>` and the like: one object shape beside `null`.
        if let Some(only) = schema.and_then(single_branch) {
            return object(root, Some(resolve(root, only)), map, depth + 1);
        }
    }
    if let Some(properties) = properties {
        let required = schema
            .and_then(|s| s.get("required"))
            .and_then(Value::as_array);
        let is_required = |name: &str| required.is_some_and(|r| r.iter().any(|n| n == name));
        for (name, sub) in properties {
            if map.get(name).is_some_and(Value::is_null) && !is_required(name) {
                map.shift_remove(name);
            }
            if !map.contains_key(name)
                && !is_required(name)
                && let Some(default) = sub
                    .get("default")
                    .or_else(|| resolve(root, sub).get("default"))
            {
                map.insert(name.clone(), default.clone());
            }
        }
    }
    for (name, value) in map.iter_mut() {
        let sub = properties.and_then(|p| p.get(name)).or(extra);
        node(root, sub, value, depth + 1);
    }
}

/// The one branch of an `anyOf`/`oneOf` that is not `{"type": "null"}`, when there is one.
fn single_branch(schema: &Value) -> Option<&Value> {
    let branches = schema
        .get("anyOf")
        .or_else(|| schema.get("oneOf"))?
        .as_array()?;
    let mut others = branches
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) != Some("null"));
    let only = others.next()?;
    others.next().is_none().then_some(only)
}

/// `schema` with local references (`#/$defs/..`) followed.
fn resolve<'s>(root: &'s Value, mut schema: &'s Value) -> &'s Value {
    for _ in 0..32 {
        let Some(pointer) = schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix('#'))
        else {
            return schema;
        };
        match root.pointer(pointer) {
            Some(target) => schema = target,
            None => return schema,
        }
    }
    schema
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn canonical(schema: &Value, mut value: Value) -> Value {
        canonicalize(schema, &mut value);
        value
    }

    #[test]
    fn null_is_absent_and_defaults_apply() {
        let schema = json!({
            "type": "object",
            "properties": {
                "flight": {"type": "string"},
                "cabin": {"type": ["string", "null"]},
                "seats": {"type": ["integer", "null"], "default": 1},
                "note": {"type": "null"}
            },
            "required": ["flight", "note"]
        });
        let sent = json!({"flight": "F1", "cabin": null, "seats": null, "note": null});
        let left_out = json!({"note": null, "flight": "F1"});
        let explicit = json!({"flight": "F1", "seats": 1.0, "note": null});
        let expected = json!({"flight": "F1", "seats": 1, "note": null});
        assert_eq!(canonical(&schema, sent), expected);
        assert_eq!(canonical(&schema, left_out), expected);
        assert_eq!(canonical(&schema, explicit), expected);
    }

    #[test]
    fn nested_objects_through_references_and_options() {
        let schema = json!({
            "type": "object",
            "properties": {
                "to": {"$ref": "#/$defs/Address"},
                "cc": {"anyOf": [{"$ref": "#/$defs/Address"}, {"type": "null"}]},
                "all": {"type": "array", "items": {"$ref": "#/$defs/Address"}},
                "by_name": {"type": "object", "additionalProperties": {"$ref": "#/$defs/Address"}}
            },
            "required": ["to"],
            "$defs": {
                "Address": {
                    "type": "object",
                    "properties": {
                        "city": {"type": "string"},
                        "zip": {"type": ["string", "null"]},
                        "country": {"type": "string", "default": "FR"}
                    },
                    "required": ["city"]
                }
            }
        });
        let value = json!({
            "to": {"city": "Paris", "zip": null},
            "cc": {"city": "Lyon", "country": "FR"},
            "all": [{"city": "Nice", "zip": null}],
            "by_name": {"ada": {"city": "Brest", "zip": null}}
        });
        assert_eq!(
            canonical(&schema, value),
            json!({
                "to": {"city": "Paris", "country": "FR"},
                "cc": {"city": "Lyon", "country": "FR"},
                "all": [{"city": "Nice", "country": "FR"}],
                "by_name": {"ada": {"city": "Brest", "country": "FR"}}
            })
        );
    }

    #[test]
    fn a_choice_between_shapes_is_left_alone() {
        let schema = json!({
            "type": "object",
            "properties": {"shape": {"oneOf": [
                {"type": "object", "properties": {"r": {"type": ["number", "null"]}}},
                {"type": "object", "properties": {"w": {"type": ["number", "null"]}}}
            ]}}
        });
        let value = json!({"shape": {"r": null}});
        assert_eq!(canonical(&schema, value.clone()), value);
    }

    #[test]
    fn reference_cycles_end() {
        let schema = json!({"$ref": "#/$defs/A", "$defs": {"A": {"$ref": "#/$defs/A"}}});
        assert_eq!(canonical(&schema, json!({"x": null})), json!({"x": null}));
    }
}

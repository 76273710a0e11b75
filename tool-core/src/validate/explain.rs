//! Why arguments were refused, in words: the validator's errors and inexact numbers turned
//! into messages that say what was wrong and how to fix it.

use jsonschema::error::{TypeKind, ValidationErrorKind};
use serde_json::Value;

use crate::error::FieldError;
use crate::json::text::{
    brief, cut, escape, join_or, kind_of, push_count, push_display, type_name, unescape,
};
use crate::spec::{LengthKind, Side};
use crate::validate::reader::Inexact;

/// The refused inexact numbers, each with the range its parameter takes.
pub(crate) fn inexact_fields(root: &Value, inexact: &[Inexact]) -> Vec<FieldError> {
    inexact
        .iter()
        .filter_map(|number| {
            let schema = schema_at(root, &number.pointer);
            // A `number` parameter takes the float as it is: not what was refused.
            if schema.is_some_and(|s| !allows_integer_only(root, s)) {
                return None;
            }
            let range = schema
                .map(|s| integer_range(root, s))
                .filter(|r| !r.is_empty())
                .map_or_else(String::new, |r| format!(" {r}"));
            Some(FieldError::new(
                number.pointer.clone(),
                format!(
                    "{} is not an integer this parameter can take exactly; send a whole number{range}, without a fraction or exponent",
                    number.literal
                ),
            ))
        })
        .collect()
}

/// The subschema that describes the instance at `pointer`, followed through `properties`,
/// `items`, `prefixItems`, `additionalProperties`, local `$ref`s and `Option`'s `anyOf`.
fn schema_at<'s>(root: &'s Value, pointer: &str) -> Option<&'s Value> {
    let mut schema = deref(root, root);
    for segment in pointer.split('/').skip(1) {
        let key = unescape(segment);
        schema = deref(root, non_null(root, schema));
        let next = schema
            .get("properties")
            .and_then(|p| p.get(&key))
            .or_else(|| {
                let index = key.parse::<usize>().ok()?;
                schema
                    .get("prefixItems")
                    .and_then(|items| items.get(index))
                    .or_else(|| schema.get("items"))
            })
            .or_else(|| schema.get("additionalProperties").filter(|s| s.is_object()))?;
        schema = deref(root, next);
    }
    Some(deref(root, non_null(root, schema)))
}

fn deref<'s>(root: &'s Value, schema: &'s Value) -> &'s Value {
    schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| resolve_ref(root, r))
        .unwrap_or(schema)
}

/// `T` for `anyOf: [T, {"type": "null"}]`.
fn non_null<'s>(root: &'s Value, schema: &'s Value) -> &'s Value {
    let branches = schema
        .get("anyOf")
        .or_else(|| schema.get("oneOf"))
        .and_then(Value::as_array);
    match branches.map(|b| {
        b.iter()
            .filter(|s| !is_null_schema(deref(root, s)))
            .collect::<Vec<_>>()
    }) {
        Some(rest) if rest.len() == 1 => deref(root, rest[0]),
        _ => schema,
    }
}

fn allows_integer_only(root: &Value, schema: &Value) -> bool {
    let schema = deref(root, schema);
    match schema.get("type") {
        Some(Value::String(t)) => t == "integer",
        Some(Value::Array(types)) => {
            types.iter().any(|t| t == "integer") && !types.iter().any(|t| t == "number")
        }
        _ => false,
    }
}

/// "from -128 to 127", "of at least 0", or nothing, from the schema's bounds.
fn integer_range(root: &Value, schema: &Value) -> String {
    let schema = deref(root, schema);
    match (schema.get("minimum"), schema.get("maximum")) {
        (Some(min), Some(max)) => format!("from {min} to {max}"),
        (Some(min), None) => format!("of at least {min}"),
        (None, Some(max)) => format!("of at most {max}"),
        (None, None) => String::new(),
    }
}

/// Follows a schema location (`/properties/a/$ref/properties/b`) through local `$ref`s.
fn resolve<'s>(root: &'s Value, location: &str) -> Option<&'s Value> {
    let mut node = root;
    for segment in location.split('/').skip(1) {
        let segment = unescape(segment);
        if segment == "$ref" {
            node = resolve_ref(root, node.get("$ref")?.as_str()?)?;
            continue;
        }
        node = match node {
            Value::Object(map) => map.get(&segment)?,
            Value::Array(items) => items.get(segment.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(node)
}

fn resolve_ref<'s>(root: &'s Value, reference: &str) -> Option<&'s Value> {
    root.pointer(reference.strip_prefix('#')?)
}

fn parent(location: &str) -> &str {
    location.rsplit_once('/').map_or("", |(head, _)| head)
}

/// The values a subschema allows, if it is made only of `enum`, `const` and `null`.
fn allowed_values(root: &Value, schema: &Value, out: &mut Vec<String>) -> bool {
    let schema = match schema.get("$ref").and_then(Value::as_str) {
        Some(reference) => match resolve_ref(root, reference) {
            Some(target) => target,
            None => return false,
        },
        None => schema,
    };
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        out.extend(values.iter().map(Value::to_string));
        true
    } else if let Some(value) = schema.get("const") {
        out.push(value.to_string());
        true
    } else if schema.get("type").and_then(Value::as_str) == Some("null") {
        out.push("null".into());
        true
    } else if let Some(variants) = schema
        .get("anyOf")
        .or_else(|| schema.get("oneOf"))
        .and_then(Value::as_array)
    {
        variants.iter().all(|v| allowed_values(root, v, out))
    } else {
        false
    }
}

fn is_null_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
}

/// Appends the field errors for one validation error.
pub(crate) fn describe(
    root: &Value,
    err: &jsonschema::ValidationError<'_>,
    out: &mut Vec<FieldError>,
) {
    let pointer = err.instance_path().as_str().to_owned();
    let schema_path = err.schema_path().as_str();
    let instance = err.instance();
    let at_root = pointer.is_empty();
    let noun = if at_root { "parameter" } else { "field" };
    // A value out of its bounds: one message, whatever the shape around it.
    if let Some(message) = bound_message(err.kind(), instance) {
        out.push(FieldError::new(pointer, message));
        return;
    }
    let message = match err.kind() {
        ValidationErrorKind::Required { property } => {
            let name = property.as_str().unwrap_or_default();
            out.push(FieldError::new(
                format!("{pointer}/{}", escape(name)),
                format!("required {noun} `{name}` is missing; add it"),
            ));
            return;
        }
        ValidationErrorKind::AdditionalProperties { unexpected }
        | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
            let known: Vec<String> = resolve(root, parent(schema_path))
                .and_then(|s| s.get("properties"))
                .and_then(Value::as_object)
                .map(|props| props.keys().map(|k| format!("`{k}`")).collect())
                .unwrap_or_default();
            for name in unexpected {
                let shown = cut(name, 60);
                let hint = if known.is_empty() {
                    format!("this object takes no {noun}s; remove it")
                } else {
                    format!("remove it; the known {noun}s are {}", known.join(", "))
                };
                out.push(FieldError::new(
                    format!("{pointer}/{}", escape(name)),
                    format!("unknown {noun} `{shown}`; {hint}"),
                ));
            }
            return;
        }
        ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } => {
            let node = resolve(root, schema_path).and_then(Value::as_array);
            if let Some(variants) = node {
                let mut values = Vec::new();
                if variants
                    .iter()
                    .all(|v| allowed_values(root, v, &mut values))
                {
                    out.push(FieldError::new(
                        pointer,
                        format!(
                            "{} is not allowed; use one of {}",
                            brief(instance),
                            join_or(&values)
                        ),
                    ));
                    return;
                }
                // `Option<T>`: report what is wrong with the `T`, not that no branch matched.
                let non_null: Vec<usize> = (0..variants.len())
                    .filter(|&i| !is_null_schema(&variants[i]))
                    .collect();
                if let [only] = non_null[..]
                    && !instance.is_null()
                    && let Some(errors) = context.get(only)
                    && !errors.is_empty()
                {
                    for inner in errors {
                        describe(root, inner, out);
                    }
                    return;
                }
                format!(
                    "{} does not match any of the {} allowed shapes described in the schema",
                    brief(instance),
                    variants.len()
                )
            } else {
                format!("{} does not match any allowed shape", brief(instance))
            }
        }
        ValidationErrorKind::OneOfMultipleValid { .. } => format!(
            "{} matches more than one allowed shape; make it match exactly one",
            brief(instance)
        ),
        ValidationErrorKind::Type { kind } => {
            let expected: Vec<String> = match resolve(root, schema_path) {
                Some(Value::String(t)) => vec![type_name(t).to_owned()],
                Some(Value::Array(ts)) => ts
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|t| type_name(t).to_owned())
                    .collect(),
                _ => match kind {
                    TypeKind::Single(t) => vec![type_name(&t.to_string()).to_owned()],
                    TypeKind::Multiple(_) => vec!["another type".to_owned()],
                },
            };
            if at_root {
                format!(
                    "the arguments must be {}, got {}; send one JSON object whose keys are the parameter names",
                    join_or(&expected),
                    kind_of(instance)
                )
            } else if instance.is_null() {
                format!("expected {}, got null", join_or(&expected))
            } else {
                format!(
                    "expected {}, got {} {}",
                    join_or(&expected),
                    kind_of(instance),
                    brief(instance)
                )
            }
        }
        ValidationErrorKind::FalseSchema => format!("{noun} is not allowed here; remove it"),
        _ => crate::echo::message(&err.to_string(), 300),
    };
    out.push(FieldError::new(pointer, message));
}

/// "`shown` is greater than the maximum of `limit`", and the like for each side of a range:
/// the words every explanation of a number out of its range uses. `limit` writes the bound.
pub(crate) fn out_of_range(shown: &str, side: Side, limit: impl FnOnce(&mut String)) -> String {
    let words = match side {
        Side::Min => " is less than the minimum of ",
        Side::Max => " is greater than the maximum of ",
        Side::ExclusiveMin => " must be greater than ",
        Side::ExclusiveMax => " must be less than ",
    };
    let mut message = String::with_capacity(shown.len() + words.len() + 8);
    message.push_str(shown);
    message.push_str(words);
    limit(&mut message);
    message
}

/// Writes a schema's limit as its `Display` does, for [`out_of_range`].
pub(crate) fn display(limit: &Value) -> impl FnOnce(&mut String) + '_ {
    move |out| push_display(out, limit)
}

/// A string with fewer characters than `min` (quoted as `shown`), or a list with fewer items.
pub(crate) fn too_short(kind: LengthKind, shown: &str, len: u64, min: u64) -> String {
    let mut out = String::with_capacity(shown.len() + 48);
    match kind {
        LengthKind::Chars => {
            out.push_str(shown);
            out.push_str(" is ");
        }
        LengthKind::Items => out.push_str("has "),
    }
    push_length(&mut out, kind, len, min, "least");
    out
}

/// A string with more characters than `max`, or a list with more items.
pub(crate) fn too_long(kind: LengthKind, len: u64, max: u64) -> String {
    let mut out = String::with_capacity(48);
    out.push_str(match kind {
        LengthKind::Chars => "is ",
        LengthKind::Items => "has ",
    });
    push_length(&mut out, kind, len, max, "most");
    out
}

/// "2 characters; use at least 3 characters", "4 items; send at most 3 items".
fn push_length(out: &mut String, kind: LengthKind, len: u64, bound: u64, side: &str) {
    let (noun, verb) = match kind {
        LengthKind::Chars => ("character", "; use at "),
        LengthKind::Items => ("item", "; send at "),
    };
    push_count(out, len, noun);
    out.push_str(verb);
    out.push_str(side);
    out.push(' ');
    push_count(out, bound, noun);
}

/// The problems a validator of a parameter's `pattern`/`format` finds in `value`, each at
/// `pointer`.
pub(crate) fn describe_text(
    validator: &jsonschema::Validator,
    value: &Value,
    pointer: &str,
    out: &mut Vec<FieldError>,
) {
    let start = out.len();
    for err in validator.iter_errors(value) {
        describe(&Value::Null, &err, out);
    }
    for field in &mut out[start..] {
        field.pointer.insert_str(0, pointer);
    }
}

/// The message for a value outside what its schema allows of it (a set of values, a range,
/// a length, a count, a pattern, a format), or `None` for another kind of error.
fn bound_message(kind: &ValidationErrorKind, instance: &Value) -> Option<String> {
    Some(match kind {
        ValidationErrorKind::Enum { options } => {
            let values: Vec<String> = options
                .as_array()
                .map(|a| a.iter().map(Value::to_string).collect())
                .unwrap_or_default();
            format!(
                "{} is not allowed; use one of {}",
                brief(instance),
                join_or(&values)
            )
        }
        ValidationErrorKind::Constant { expected_value } => {
            format!(
                "{} is not allowed; the only allowed value is {expected_value}",
                brief(instance)
            )
        }
        ValidationErrorKind::Minimum { limit } => {
            out_of_range(&brief(instance), Side::Min, display(limit))
        }
        ValidationErrorKind::Maximum { limit } => {
            out_of_range(&brief(instance), Side::Max, display(limit))
        }
        ValidationErrorKind::ExclusiveMinimum { limit } => {
            out_of_range(&brief(instance), Side::ExclusiveMin, display(limit))
        }
        ValidationErrorKind::ExclusiveMaximum { limit } => {
            out_of_range(&brief(instance), Side::ExclusiveMax, display(limit))
        }
        ValidationErrorKind::MultipleOf { multiple_of } => {
            format!("{} is not a multiple of {multiple_of}", brief(instance))
        }
        ValidationErrorKind::MinLength { limit } => too_short(
            LengthKind::Chars,
            &brief(instance),
            instance.as_str().map_or(0, |s| s.chars().count()) as u64,
            *limit,
        ),
        ValidationErrorKind::MaxLength { limit } => too_long(
            LengthKind::Chars,
            instance.as_str().map_or(0, |s| s.chars().count()) as u64,
            *limit,
        ),
        ValidationErrorKind::MinItems { limit } => too_short(
            LengthKind::Items,
            "",
            instance.as_array().map_or(0, Vec::len) as u64,
            *limit,
        ),
        ValidationErrorKind::MaxItems { limit } => too_long(
            LengthKind::Items,
            instance.as_array().map_or(0, Vec::len) as u64,
            *limit,
        ),
        ValidationErrorKind::MinProperties { limit } => {
            format!("must have at least {limit} keys")
        }
        ValidationErrorKind::MaxProperties { limit } => {
            format!("must have at most {limit} keys")
        }
        ValidationErrorKind::UniqueItems => {
            "has repeated items; every item must be different".to_owned()
        }
        ValidationErrorKind::Pattern { pattern } => {
            format!("{} does not match the pattern {pattern:?}", brief(instance))
        }
        ValidationErrorKind::Format { format } => {
            let what = match format.as_str() {
                "email" => "an email address",
                "uri" => "an absolute URL (e.g. https://example.com/page)",
                "date-time" => "an RFC 3339 date-time (e.g. 2026-01-31T09:30:00Z)",
                "date" => "a date (YYYY-MM-DD)",
                "uuid" => "a UUID",
                other => other,
            };
            format!("{} is not {what}", brief(instance))
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lengths_are_worded_by_kind_and_number() {
        assert_eq!(
            too_short(LengthKind::Chars, "\"r\"", 1, 2),
            "\"r\" is 1 character; use at least 2 characters"
        );
        assert_eq!(
            too_short(LengthKind::Items, "[]", 0, 1),
            "has 0 items; send at least 1 item"
        );
        assert_eq!(
            too_long(LengthKind::Chars, 301, 300),
            "is 301 characters; use at most 300 characters"
        );
        assert_eq!(
            too_long(LengthKind::Items, 2, 1),
            "has 2 items; send at most 1 item"
        );
    }

    #[test]
    fn resolves_schema_locations_through_refs() {
        let root = json!({"properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"properties": {"b": {"type": "string"}}}}});
        assert_eq!(
            resolve(&root, "/properties/a/$ref/properties/b/type"),
            Some(&json!("string"))
        );
    }
}

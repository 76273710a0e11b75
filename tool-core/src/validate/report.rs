//! Reporting invalid arguments without the full JSON Schema validator.
//!
//! When the typed path refuses a call, the model needs every problem with its pointer. Running
//! the whole `jsonschema` validator for that costs far more than the call: it builds an error
//! tree with schema locations, which must then be resolved back to messages. Most argument
//! schemas are flat: an object of scalars, strings, string enums and optional values. For those,
//! a [`Report`] read once from the schema checks each parameter's keywords directly and writes
//! the same messages the validator path writes.
//!
//! A [`Report`] exists only for schemas made entirely of what it models; anything else (nested
//! objects, arrays, combinators beyond "one of these values" and "this or null") leaves the
//! tool on the validator path. The reporter only explains a refusal; when it finds nothing,
//! the validator decides. `tests/differential.rs` checks that both paths list the same problems.

use std::borrow::Cow;
use std::collections::HashSet;
use std::hash::BuildHasher;

use jsonschema::Validator;
use serde_json::{Map, Value};

use crate::error::FieldError;
use crate::json::number::compare_json_numbers;
use crate::json::text::{brief, cut, escape, join_or, kind_of, type_name};
use crate::spec::{LengthKind, Side};
use crate::validate::explain::{describe_text, display, out_of_range, too_long, too_short};

/// Root keywords a reportable schema may have besides its properties.
const ROOT_KEYS: &[&str] = &[
    "$schema",
    "type",
    "properties",
    "required",
    "additionalProperties",
    "$defs",
    "title",
    "description",
];

/// Keywords that assert nothing.
const ANNOTATIONS: &[&str] = &[
    "description",
    "title",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$comment",
];

/// The per-parameter checks of one tool, read from its input schema.
pub(crate) struct Report {
    params: Vec<Param>,
    /// "`a`, `b`", for the unknown-parameter hint.
    known: String,
}

struct Param {
    name: String,
    pointer: String,
    required: bool,
    leaf: Leaf,
}

enum Leaf {
    /// Independent assertions, checked in the schema's key order.
    Keywords(Vec<Keyword>),
    /// `anyOf`/`oneOf` whose branches are only constants, enums and `null`: one message.
    Values { allowed: Vec<Value>, listed: String },
    /// `anyOf: [T, {"type": "null"}]`: `null`, or what `T` says.
    Nullable(Box<Leaf>),
}

enum Keyword {
    Type {
        types: Vec<String>,
        expected: String,
    },
    Enum {
        allowed: Vec<Value>,
        listed: String,
    },
    Const(Value),
    Minimum(Value),
    Maximum(Value),
    ExclusiveMinimum(Value),
    ExclusiveMaximum(Value),
    MinLength(u64),
    MaxLength(u64),
    /// `pattern` and `format`, checked by a validator of just those keywords.
    Text(Box<Validator>),
}

impl Report {
    /// The report for `schema`, or `None` when the schema has shapes it does not model.
    pub(crate) fn build(schema: &Value) -> Option<Self> {
        let root = schema.as_object()?;
        if root.keys().any(|k| !ROOT_KEYS.contains(&k.as_str()))
            || root.get("type").and_then(Value::as_str) != Some("object")
            || root.get("additionalProperties") != Some(&Value::Bool(false))
        {
            return None;
        }
        let required: Vec<&str> = match root.get("required") {
            None => Vec::new(),
            Some(list) => list
                .as_array()?
                .iter()
                .map(Value::as_str)
                .collect::<Option<_>>()?,
        };
        let empty = Map::new();
        let props = match root.get("properties") {
            None => &empty,
            Some(props) => props.as_object()?,
        };
        if required.iter().any(|name| !props.contains_key(*name)) {
            return None;
        }
        let mut params = Vec::with_capacity(props.len());
        for (name, node) in props {
            params.push(Param {
                name: name.clone(),
                pointer: format!("/{}", escape(name)),
                required: required.contains(&name.as_str()),
                leaf: leaf(schema, node, 0)?,
            });
        }
        let known = props
            .keys()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ");
        Some(Self { params, known })
    }

    /// Every problem with the arguments object `map`, in document order. Empty when the
    /// reporter sees none (the validator then decides).
    pub(crate) fn check(&self, map: &Map<String, Value>) -> Vec<FieldError> {
        let mut members = self.members();
        for (key, value) in map {
            // A map holds each key once.
            members.member(Cow::Borrowed(key), value);
        }
        members.finish()
    }

    /// A check of an arguments object fed one member at a time, as a reader meets them: the
    /// same problems, in the same order, as [`check`](Self::check) of the whole object,
    /// without the object being built.
    pub(crate) fn members(&self) -> Members<'_, '_> {
        Members {
            report: self,
            out: Vec::new(),
            given: Given::default(),
            unknown: Vec::new(),
            unknown_hashes: None,
        }
    }
}

/// A [`Report`]'s check, fed one member at a time ([`Report::members`]).
pub(crate) struct Members<'r, 'k> {
    report: &'r Report,
    out: Vec<FieldError>,
    /// Which parameters were given.
    given: Given,
    /// The keys no parameter has, in document order.
    unknown: Vec<Cow<'k, str>>,
    /// Past the first few unknown keys, a hash of each, so that finding a repeat stays
    /// linear in the object's size (a hash shared by two keys reads as a repeat: the caller
    /// then reads the object whole, which compares the keys themselves).
    unknown_hashes: Option<HashSet<u64, foldhash::fast::RandomState>>,
}

/// Which parameters (by their place in the schema) were given: the first 64 a bit each, without
/// allocating; the rest listed.
#[derive(Default)]
struct Given {
    first: u64,
    past: Vec<usize>,
}

impl Given {
    /// Records parameter `i`; `false` when it was given before.
    fn mark(&mut self, i: usize) -> bool {
        if i < 64 {
            let bit = 1_u64 << i;
            let new = self.first & bit == 0;
            self.first |= bit;
            new
        } else if self.past.contains(&i) {
            false
        } else {
            self.past.push(i);
            true
        }
    }

    fn has(&self, i: usize) -> bool {
        if i < 64 {
            self.first & (1 << i) != 0
        } else {
            self.past.contains(&i)
        }
    }
}

/// How many unknown keys are compared one by one before they are hashed.
const FEW_UNKNOWN: usize = 16;

impl<'k> Members<'_, 'k> {
    /// Checks the member `key` of the object. `false` when the object already had `key`
    /// (nothing is checked then: a repeated key is a refusal of its own, not explained here).
    pub(crate) fn member(&mut self, key: Cow<'k, str>, value: &Value) -> bool {
        let params = &self.report.params;
        match params.iter().position(|p| p.name == *key) {
            Some(i) => {
                if !self.given.mark(i) {
                    return false;
                }
                let param = &params[i];
                param.leaf.check(&param.pointer, value, &mut self.out);
            }
            None => {
                if self.repeats_unknown(&key) {
                    return false;
                }
                self.unknown.push(key);
            }
        }
        true
    }

    /// Whether `key`, which no parameter has, was seen before (or, past the first few, shares
    /// a hash with one that was); it is recorded as seen.
    fn repeats_unknown(&mut self, key: &str) -> bool {
        if self.unknown.len() < FEW_UNKNOWN {
            return self.unknown.iter().any(|k| k == key);
        }
        let unknown = &self.unknown;
        let hashes = self.unknown_hashes.get_or_insert_with(|| {
            let state = foldhash::fast::RandomState::default();
            let mut hashes = HashSet::with_capacity_and_hasher(unknown.len() * 2, state.clone());
            hashes.extend(unknown.iter().map(|k| state.hash_one(k.as_ref())));
            hashes
        });
        let hash = hashes.hasher().hash_one(key);
        !hashes.insert(hash)
    }

    /// Every problem found: each member's, then the required parameters missing, then the
    /// unknown keys.
    pub(crate) fn finish(self) -> Vec<FieldError> {
        let Self {
            report,
            mut out,
            given,
            unknown,
            unknown_hashes: _,
        } = self;
        for (i, param) in report.params.iter().enumerate() {
            if param.required && !given.has(i) {
                out.push(FieldError::new(
                    param.pointer.clone(),
                    ["required parameter `", &param.name, "` is missing; add it"].concat(),
                ));
            }
        }
        for name in unknown {
            let shown = cut(&name, 60);
            let message = if report.params.is_empty() {
                [
                    "unknown parameter `",
                    &shown,
                    "`; this object takes no parameters; remove it",
                ]
                .concat()
            } else {
                [
                    "unknown parameter `",
                    &shown,
                    "`; remove it; the known parameters are ",
                    &report.known,
                ]
                .concat()
            };
            out.push(FieldError::new(["/", &escape(&name)].concat(), message));
        }
        out
    }
}

/// How deep `$ref`s and `anyOf`s may nest before a schema is left to the validator.
const MAX_DEPTH: usize = 8;

fn leaf(root: &Value, node: &Value, depth: usize) -> Option<Leaf> {
    if depth > MAX_DEPTH {
        return None;
    }
    let node = node.as_object()?;
    let asserting: Vec<(&String, &Value)> = node
        .iter()
        .filter(|(k, _)| !ANNOTATIONS.contains(&k.as_str()))
        .collect();
    // `$ref`, `anyOf` or `oneOf` alone (with annotations): follow it.
    if let [(key, value)] = asserting[..] {
        match key.as_str() {
            "$ref" => return leaf(root, target(root, value)?, depth + 1),
            "anyOf" | "oneOf" => return combinator(root, key, value.as_array()?, depth),
            _ => {}
        }
    }
    let mut keywords = Vec::with_capacity(asserting.len());
    let mut text = Map::new();
    for (key, value) in asserting {
        keywords.push(match key.as_str() {
            "type" => {
                let types: Vec<String> = match value {
                    Value::String(t) => vec![t.clone()],
                    Value::Array(ts) => ts
                        .iter()
                        .map(|t| t.as_str().map(str::to_owned))
                        .collect::<Option<_>>()?,
                    _ => return None,
                };
                if !types.iter().all(|t| JSON_TYPES.contains(&t.as_str())) {
                    return None;
                }
                let named: Vec<String> = types.iter().map(|t| type_name(t).to_owned()).collect();
                Keyword::Type {
                    expected: join_or(&named),
                    types,
                }
            }
            "enum" => {
                let allowed = value.as_array()?.clone();
                if !allowed.iter().all(plain_value) {
                    return None;
                }
                Keyword::Enum {
                    listed: listed(&allowed),
                    allowed,
                }
            }
            "const" if plain_value(value) => Keyword::Const(value.clone()),
            "minimum" if value.is_number() => Keyword::Minimum(value.clone()),
            "maximum" if value.is_number() => Keyword::Maximum(value.clone()),
            "exclusiveMinimum" if value.is_number() => Keyword::ExclusiveMinimum(value.clone()),
            "exclusiveMaximum" if value.is_number() => Keyword::ExclusiveMaximum(value.clone()),
            "minLength" => Keyword::MinLength(value.as_u64()?),
            "maxLength" => Keyword::MaxLength(value.as_u64()?),
            "pattern" | "format" => {
                text.insert(key.clone(), value.clone());
                continue;
            }
            _ => return None,
        });
    }
    if !text.is_empty() {
        let validator = crate::schema::compile(&Value::Object(text)).ok()?;
        keywords.push(Keyword::Text(Box::new(validator)));
    }
    Some(Leaf::Keywords(keywords))
}

const JSON_TYPES: &[&str] = &[
    "null", "boolean", "integer", "number", "string", "array", "object",
];

/// Values compared by plain equality: numbers are left out, because JSON Schema compares them
/// by value (`1` equals `1.0`).
fn plain_value(value: &Value) -> bool {
    matches!(value, Value::String(_) | Value::Bool(_) | Value::Null)
}

fn listed(values: &[Value]) -> String {
    let shown: Vec<String> = values.iter().map(Value::to_string).collect();
    join_or(&shown)
}

fn target<'s>(root: &'s Value, reference: &Value) -> Option<&'s Value> {
    root.pointer(reference.as_str()?.strip_prefix('#')?)
}

fn combinator(root: &Value, key: &str, branches: &[Value], depth: usize) -> Option<Leaf> {
    let mut allowed = Vec::new();
    if branches
        .iter()
        .all(|b| value_set(root, b, &mut allowed, depth + 1).is_some())
    {
        // `oneOf` fails on a value two branches allow; distinct values keep it "any of".
        let distinct = allowed
            .iter()
            .enumerate()
            .all(|(i, v)| !allowed[..i].contains(v));
        if key == "oneOf" && !distinct {
            return None;
        }
        return Some(Leaf::Values {
            listed: listed(&allowed),
            allowed,
        });
    }
    // `T` or null; `oneOf` would also fail on a null that `T` allows: only `anyOf`.
    if key != "anyOf" {
        return None;
    }
    match branches {
        [inner, null] | [null, inner] if is_null(null) && !is_null(inner) => {
            Some(Leaf::Nullable(Box::new(leaf(root, inner, depth + 1)?)))
        }
        _ => None,
    }
}

fn is_null(schema: &Value) -> bool {
    schema.as_object().is_some_and(|node| {
        node.get("type").and_then(Value::as_str) == Some("null")
            && node
                .keys()
                .all(|k| k == "type" || ANNOTATIONS.contains(&k.as_str()))
    })
}

/// Collects the values a branch allows, if it is made only of `const`, `enum`, `null` and
/// combinations of them. A `type` beside them must admit every listed value.
fn value_set(root: &Value, schema: &Value, out: &mut Vec<Value>, depth: usize) -> Option<()> {
    if depth > MAX_DEPTH {
        return None;
    }
    let node = schema.as_object()?;
    let asserting: Vec<(&String, &Value)> = node
        .iter()
        .filter(|(k, _)| !ANNOTATIONS.contains(&k.as_str()))
        .collect();
    let ty = node.get("type");
    match asserting[..] {
        [(key, reference)] if key == "$ref" => {
            return value_set(root, target(root, reference)?, out, depth + 1);
        }
        [(key, branches)] if key == "anyOf" || key == "oneOf" => {
            for branch in branches.as_array()? {
                value_set(root, branch, out, depth + 1)?;
            }
            return Some(());
        }
        _ => {}
    }
    let values: Vec<Value> = if let Some(values) = node.get("enum") {
        values.as_array()?.clone()
    } else if let Some(value) = node.get("const") {
        vec![value.clone()]
    } else if is_null(schema) {
        vec![Value::Null]
    } else {
        return None;
    };
    let only_known = asserting
        .iter()
        .all(|(k, _)| matches!(k.as_str(), "enum" | "const" | "type"));
    let typed = ty.is_none_or(|ty| values.iter().all(|v| has_type(v, ty)));
    if !only_known || !typed || !values.iter().all(plain_value) || asserting.len() > 2 {
        return None;
    }
    out.extend(values);
    Some(())
}

/// Whether `value` is of the JSON type(s) `ty` (a name or a list of names).
fn has_type(value: &Value, ty: &Value) -> bool {
    match ty {
        Value::String(t) => is_type(value, t),
        Value::Array(ts) => ts
            .iter()
            .any(|t| t.as_str().is_some_and(|t| is_type(value, t))),
        _ => false,
    }
}

fn is_type(value: &Value, ty: &str) -> bool {
    match (ty, value) {
        ("null", Value::Null)
        | ("boolean", Value::Bool(_))
        | ("number", Value::Number(_))
        | ("string", Value::String(_))
        | ("array", Value::Array(_))
        | ("object", Value::Object(_)) => true,
        // JSON Schema counts a number with a zero fraction (`5.0`) as an integer.
        ("integer", Value::Number(n)) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

impl Leaf {
    fn check(&self, pointer: &str, value: &Value, out: &mut Vec<FieldError>) {
        match self {
            Self::Keywords(keywords) => {
                for keyword in keywords {
                    keyword.check(pointer, value, out);
                }
            }
            Self::Values { allowed, listed } => {
                if !allowed.contains(value) {
                    out.push(FieldError::new(
                        pointer,
                        [&brief(value), " is not allowed; use one of ", listed].concat(),
                    ));
                }
            }
            Self::Nullable(inner) => {
                if !value.is_null() {
                    inner.check(pointer, value, out);
                }
            }
        }
    }
}

impl Keyword {
    fn check(&self, pointer: &str, value: &Value, out: &mut Vec<FieldError>) {
        use std::cmp::Ordering::{Equal, Greater, Less};
        let bound = |limit: &Value, refused: &[std::cmp::Ordering]| {
            value.is_number()
                && compare_json_numbers(value, limit).is_some_and(|o| refused.contains(&o))
        };
        // Counted only for a length keyword, once a string is known to be too long or short
        // by its bytes (a character is 1 to 4 of them).
        let chars = || value.as_str().map(|s| s.chars().count() as u64);
        let bytes = value.as_str().map_or(0, |s| s.len() as u64);
        let message = match self {
            Self::Type { types, expected } => {
                if types.iter().any(|t| is_type(value, t)) {
                    return;
                }
                if value.is_null() {
                    format!("expected {expected}, got null")
                } else {
                    format!(
                        "expected {expected}, got {} {}",
                        kind_of(value),
                        brief(value)
                    )
                }
            }
            Self::Enum { allowed, listed } => {
                if allowed.contains(value) {
                    return;
                }
                [&brief(value), " is not allowed; use one of ", listed].concat()
            }
            Self::Const(expected) => {
                if value == expected {
                    return;
                }
                format!(
                    "{} is not allowed; the only allowed value is {expected}",
                    brief(value)
                )
            }
            Self::Minimum(limit) if bound(limit, &[Less]) => {
                out_of_range(&brief(value), Side::Min, display(limit))
            }
            Self::Maximum(limit) if bound(limit, &[Greater]) => {
                out_of_range(&brief(value), Side::Max, display(limit))
            }
            Self::ExclusiveMinimum(limit) if bound(limit, &[Less, Equal]) => {
                out_of_range(&brief(value), Side::ExclusiveMin, display(limit))
            }
            Self::ExclusiveMaximum(limit) if bound(limit, &[Greater, Equal]) => {
                out_of_range(&brief(value), Side::ExclusiveMax, display(limit))
            }
            Self::MinLength(min) if bytes >= min.saturating_mul(4) => return,
            Self::MaxLength(max) if bytes <= *max => return,
            Self::MinLength(min) => match chars() {
                Some(n) if n < *min => too_short(LengthKind::Chars, &brief(value), n, *min),
                _ => return,
            },
            Self::MaxLength(max) => match chars() {
                Some(n) if n > *max => too_long(LengthKind::Chars, n, *max),
                _ => return,
            },
            Self::Text(validator) => {
                if value.is_string() && !validator.is_valid(value) {
                    describe_text(validator, value, pointer, out);
                }
                return;
            }
            Self::Minimum(_)
            | Self::Maximum(_)
            | Self::ExclusiveMinimum(_)
            | Self::ExclusiveMaximum(_) => return,
        };
        out.push(FieldError::new(pointer, message));
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use serde_json::{Value, json};

    use super::Report;

    fn report() -> Report {
        Report::build(&json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 2},
                "n": {"type": "integer", "maximum": 10}
            },
            "required": ["query"],
            "additionalProperties": false
        }))
        .expect("a flat schema")
    }

    #[test]
    fn members_fed_one_at_a_time_are_explained_as_the_whole_object() {
        let report = report();
        let object = json!({"zz": 1, "query": "r", "n": 11, "a": true});
        let Value::Object(map) = &object else {
            unreachable!()
        };
        let mut members = report.members();
        for (key, value) in map {
            assert!(members.member(Cow::Owned(key.clone()), value));
        }
        let fed = members.finish();
        assert_eq!(fed, report.check(map));
        let pointers: Vec<&str> = fed.iter().map(|f| f.pointer.as_str()).collect();
        assert_eq!(pointers, ["/query", "/n", "/zz", "/a"]);
    }

    #[test]
    fn a_repeated_key_is_found_however_many_keys_came_before() {
        let report = report();
        let mut members = report.members();
        assert!(members.member(Cow::Borrowed("query"), &json!("rust")));
        assert!(!members.member(Cow::Borrowed("query"), &json!("rust")));
        let names: Vec<String> = (0..100).map(|i| format!("extra_{i}")).collect();
        for name in &names {
            assert!(members.member(Cow::Borrowed(name), &Value::Null), "{name}");
        }
        for name in [&names[0], &names[20], &names[99]] {
            assert!(!members.member(Cow::Borrowed(name), &Value::Null), "{name}");
        }
        let fields = members.finish();
        assert_eq!(fields.len(), 100);
        assert_eq!(fields[0].pointer, "/extra_0");
        assert_eq!(fields[99].pointer, "/extra_99");
    }
}

//! Turning a model's arguments into the typed argument struct, or into errors the model can fix.
//!
//! The success path deserializes the text straight into the struct and checks the `#[arg]`
//! constraints on the typed values. Only when that fails are the violations collected, each
//! with its JSON pointer: by the direct reporter of `report.rs` for flat schemas, else by the
//! full JSON Schema validator on the text parsed into a `serde_json::Value`. See
//! `docs/validation.md` for why the paths agree.

use std::cmp::Ordering;
use std::fmt::Write as _;

use jsonschema::error::{TypeKind, ValidationErrorKind};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::error::{FieldError, ToolError};
use crate::report::{Member, Members};
use crate::tool::{Arguments, Bound, Constraint, ToolDefinition};

/// The check `#[tool]` generates for the typed `#[arg]` constraints of one argument struct.
pub type Check<A> = fn(&A, &ToolDefinition) -> bool;

/// Parses and validates `arguments` for the tool defined by `def`.
///
/// The only code generic over `A` is the typed read (from text, or from an object that arrived
/// parsed, or the accepted document after a refusal) and the check; everything else
/// (explaining a refusal, unwrapping, normalizing) is shared by every tool, so that a crate of
/// many tools compiles one copy of it.
///
/// # Errors
///
/// `invalid_arguments` with one [`FieldError`] per violation; `internal_error` if the tool's
/// own schema is broken.
pub fn parse_arguments<A: DeserializeOwned>(
    def: &ToolDefinition,
    arguments: Arguments<'_>,
    check: Check<A>,
) -> Result<A, ToolError> {
    let read = match typed_input(def, &arguments) {
        Some(Typed::Text(text)) => Some(crate::strict::from_str::<A>(text)),
        Some(Typed::Value(value)) => Some(crate::strict::from_value::<A>(value)),
        None => None,
    };
    let refused = match read {
        Some(Ok(args)) if check(&args, def) => return Ok(args),
        Some(Ok(_)) | None => None,
        Some(Err(err)) => Some(err),
    };
    let mut slot = None;
    explain_refusal(
        def,
        arguments,
        refused.as_ref(),
        &mut |value| match crate::strict::from_value::<A>(value) {
            Ok(args) => {
                let passed = check(&args, def);
                slot = Some(args);
                Read::Typed { passed }
            }
            Err(err) => Read::Refused(err),
        },
    )?;
    slot.ok_or_else(|| ToolError::internal("the arguments were accepted but not kept"))
}

/// What one typed read of an accepted document gave.
enum Read {
    /// The struct was read (and kept by the reader); whether it passed the typed checks.
    Typed { passed: bool },
    /// serde refused the document.
    Refused(serde_json::Error),
}

/// The steps of [`parse_arguments`] after the typed read refused the arguments (or was
/// skipped), which do not depend on the argument struct: every problem, or the accepted
/// document read through `read`. `Ok` means its last read passed.
fn explain_refusal(
    def: &ToolDefinition,
    arguments: Arguments<'_>,
    refused: Option<&serde_json::Error>,
    read: &mut dyn FnMut(&Value) -> Read,
) -> Result<(), ToolError> {
    let duplicate = refused.and_then(duplicate_field);
    let mut refused = None;
    for value in accepted_values(def, arguments, duplicate)? {
        match read(&value) {
            Read::Typed { passed: true } => return Ok(()),
            Read::Typed { passed: false } => return Err(broken_constraint(def)),
            Read::Refused(err) => refused = Some(err),
        }
    }
    Err(unreadable(def, refused))
}

/// A document the schema accepts, in the forms to read in turn: as sent, then with integers
/// written with a fraction (`5.0`, which JSON Schema accepts and serde refuses) normalized.
fn accepted_values(
    def: &ToolDefinition,
    arguments: Arguments<'_>,
    duplicate: Option<String>,
) -> Result<Vec<Value>, ToolError> {
    let accepted = explain(def, arguments, duplicate)?;
    let normalized = match normalized_integers(&accepted) {
        std::borrow::Cow::Owned(normalized) => Some(normalized),
        std::borrow::Cow::Borrowed(_) => None,
    };
    Ok(std::iter::once(accepted).chain(normalized).collect())
}

fn broken_constraint(def: &ToolDefinition) -> ToolError {
    invalid(
        def,
        vec![FieldError::new(
            "",
            "the arguments break a constraint of the tool",
        )],
    )
}

fn unreadable(def: &ToolDefinition, err: Option<serde_json::Error>) -> ToolError {
    let why = err.map_or_else(String::new, |err| format!(": {err}"));
    invalid(
        def,
        vec![FieldError::new(
            "",
            format!("the arguments could not be read{why}"),
        )],
    )
}

/// What the typed read tries first.
enum Typed<'a> {
    /// The arguments' own text (`{}` for blank text).
    Text(&'a str),
    /// An object that arrived parsed (Anthropic, Gemini, MCP), read as it is: writing it out as
    /// text to read it again would cost more than the read.
    Value(&'a Value),
}

/// The typed read's input; none for a tool that validates fully, or for arguments that are
/// neither text nor an object (the explanation says what is wrong with them).
fn typed_input<'a>(def: &ToolDefinition, arguments: &'a Arguments<'_>) -> Option<Typed<'a>> {
    if def.full_validation {
        return None;
    }
    let text = match arguments {
        Arguments::Text(text) => text.as_ref(),
        Arguments::Value(value) => match &**value {
            Value::String(text) => text.as_str(),
            value @ Value::Object(_) => return Some(Typed::Value(value)),
            _ => return None,
        },
    };
    // An object starts with `{`; only other texts can be blank.
    if !text.starts_with('{') && text.trim().is_empty() {
        Some(Typed::Text("{}"))
    } else {
        Some(Typed::Text(text))
    }
}

/// Validates `arguments` with the full validator, whatever the tool's fast path, and returns
/// them as a value.
pub(crate) fn validate_full(
    def: &ToolDefinition,
    arguments: Arguments<'_>,
) -> Result<Value, ToolError> {
    let value = match arguments {
        Arguments::Text(text) => text_value(def, &text)?,
        Arguments::Value(value) => match &*value {
            Value::String(text) => text_value(def, text)?,
            value => value.clone(),
        },
    };
    // Most calls are valid: the validator's yes/no answer is much cheaper than its errors.
    if def.validator().is_ok_and(|v| v.is_valid(&value)) {
        return Ok(value);
    }
    explain_value(def, value, None)
}

fn text_value(def: &ToolDefinition, text: &str) -> Result<Value, ToolError> {
    if text.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    let value: Value = serde_json::from_str(text).map_err(|err| invalid_json(def, &err))?;
    match value {
        Value::String(inner) if inner.trim().is_empty() => Ok(Value::Object(Map::new())),
        Value::String(inner) => serde_json::from_str(&inner).map_err(|err| invalid_json(def, &err)),
        other => Ok(other),
    }
}

/// Every problem with `arguments`, or the document when the schema accepts it. `duplicate` is
/// a key the typed read found twice.
fn explain(
    def: &ToolDefinition,
    arguments: Arguments<'_>,
    duplicate: Option<String>,
) -> Result<Value, ToolError> {
    match arguments {
        Arguments::Text(text) => explain_text(def, &text, duplicate, false),
        Arguments::Value(value) => {
            if let Value::String(text) = &*value {
                return explain_text(def, text, duplicate, true);
            }
            explain_value(def, value.into_owned(), duplicate)
        }
    }
}

fn explain_text(
    def: &ToolDefinition,
    text: &str,
    duplicate: Option<String>,
    unwrapped: bool,
) -> Result<Value, ToolError> {
    if !text.starts_with('{') && text.trim().is_empty() {
        return explain_value(def, Value::Object(Map::new()), duplicate);
    }
    // A flat schema's problems are found from the object's members, without a map.
    if let Some(report) = def.report()
        && let Ok(members) = serde_json::from_str::<Members<'_>>(text)
        && !members.has_duplicates()
    {
        let entries: Vec<(&str, Member<'_>)> = members
            .0
            .iter()
            .map(|(k, raw)| (k.as_ref(), Member::Raw(raw)))
            .collect();
        let fields = report.check(&entries);
        if !fields.is_empty() {
            return Err(invalid(def, fields));
        }
    }
    let value: Value = serde_json::from_str(text).map_err(|err| invalid_json(def, &err))?;
    match value {
        Value::String(inner) if !unwrapped => explain_text(def, &inner, duplicate, true),
        value => explain_value(def, value, duplicate),
    }
}

/// Reports every violation (the direct reporter, else the full validator), or returns the
/// accepted document.
fn explain_value(
    def: &ToolDefinition,
    value: Value,
    duplicate: Option<String>,
) -> Result<Value, ToolError> {
    let mut fields = match (def.report(), &value) {
        (Some(report), Value::Object(map)) => report.check(&entries_of(map)),
        _ => Vec::new(),
    };
    if fields.is_empty() {
        fields = explain_with_validator(def, &value)?;
    }
    if let Some(name) = duplicate {
        fields.push(FieldError::new(
            format!("/{}", escape(&name)),
            format!("`{name}` appears more than once; send each key once"),
        ));
    }
    if fields.is_empty() {
        Ok(value)
    } else {
        Err(invalid(def, fields))
    }
}

fn entries_of(map: &Map<String, Value>) -> Vec<(&str, Member<'_>)> {
    map.iter()
        .map(|(k, v)| (k.as_str(), Member::Value(v)))
        .collect()
}

/// The problems with `value` as the direct reporter lists them (`None` when the tool's schema
/// has none) and as the full validator does. For tests that hold the two to each other.
#[doc(hidden)]
pub fn explanations(
    def: &ToolDefinition,
    value: &Value,
) -> (Option<Vec<FieldError>>, Result<Vec<FieldError>, ToolError>) {
    let direct = def.report().map(|report| match value {
        Value::Object(map) => report.check(&entries_of(map)),
        _ => Vec::new(),
    });
    (direct, explain_with_validator(def, value))
}

/// Every problem the full validator finds in `value`, described for the model.
fn explain_with_validator(
    def: &ToolDefinition,
    value: &Value,
) -> Result<Vec<FieldError>, ToolError> {
    let validator = def.validator().map_err(ToolError::internal)?;
    let schema = def.input_schema();
    let mut fields = Vec::new();
    for err in validator.iter_errors(value) {
        describe(schema, &err, &mut fields);
    }
    Ok(fields)
}

/// At most this many problems are listed; a document with thousands of unknown keys should
/// not produce an error larger than itself.
const MAX_FIELDS: usize = 20;

fn invalid(def: &ToolDefinition, mut fields: Vec<FieldError>) -> ToolError {
    if fields.len() > MAX_FIELDS {
        let more = fields.len() - MAX_FIELDS;
        fields.truncate(MAX_FIELDS);
        fields.push(FieldError::new("", format!("and {more} more problems")));
    }
    let mut message = format!("The arguments for `{}` are invalid: ", def.name());
    for (i, field) in fields.iter().enumerate() {
        if i > 0 {
            message.push_str("; ");
        }
        let _ = write!(message, "{field}");
    }
    message.push_str(". Fix these and call the tool again.");
    fields
        .into_iter()
        .fold(ToolError::invalid_arguments(message), ToolError::with_field)
}

fn invalid_json(def: &ToolDefinition, err: &serde_json::Error) -> ToolError {
    invalid(
        def,
        vec![FieldError::new(
            "",
            format!(
                "the arguments are not valid JSON ({err}); send one JSON object whose keys are the parameter names"
            ),
        )],
    )
}

/// `duplicate field `x`` is serde's wording (`serde::de::Error::duplicate_field`).
fn duplicate_field(err: &serde_json::Error) -> Option<String> {
    // Syntax and EOF errors are not it; only data errors need their text read.
    if err.classify() != serde_json::error::Category::Data {
        return None;
    }
    let text = err.to_string();
    let rest = text.strip_prefix("duplicate field `")?;
    Some(rest[..rest.find('`')?].to_owned())
}

/// `value` with integral numbers written as integers (`5.0` → `5`); borrowed when it has none
/// written with a fraction, which is almost always.
pub(crate) fn normalized_integers(value: &Value) -> std::borrow::Cow<'_, Value> {
    fn has_integral_float(value: &Value) -> bool {
        match value {
            Value::Number(n) => n.is_f64() && n.as_f64().is_some_and(|f| f.fract() == 0.0),
            Value::Array(items) => items.iter().any(has_integral_float),
            Value::Object(map) => map.values().any(has_integral_float),
            _ => false,
        }
    }
    if has_integral_float(value) {
        std::borrow::Cow::Owned(normalize_integers(value))
    } else {
        std::borrow::Cow::Borrowed(value)
    }
}

pub(crate) fn normalize_integers(value: &Value) -> Value {
    match value {
        Value::Number(n) if n.is_f64() => n
            .as_f64()
            .filter(|f| f.fract() == 0.0)
            .and_then(|f| {
                #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
                if f >= 0.0 && f < u64::MAX as f64 {
                    Some(Value::from(f as u64))
                } else if f < 0.0 && f >= i64::MIN as f64 {
                    Some(Value::from(f as i64))
                } else {
                    None
                }
            })
            .unwrap_or_else(|| value.clone()),
        Value::Array(items) => Value::Array(items.iter().map(normalize_integers).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), normalize_integers(v)))
                .collect(),
        ),
        _ => value.clone(),
    }
}

// ---------------------------------------------------------------------------------------------
// Messages

pub(crate) fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

fn unescape(segment: &str) -> String {
    segment.replace("~1", "/").replace("~0", "~")
}

/// `text` cut to `max` characters, marked with `…` when cut.
pub(crate) fn cut(text: &str, max: usize) -> String {
    let mut text = text.to_owned();
    shorten(&mut text, max);
    text
}

/// Cuts `text` to `max` characters, marking the cut with `…`.
fn shorten(text: &mut String, max: usize) {
    // At most `max` bytes is at most `max` characters: no counting.
    if text.len() <= max {
        return;
    }
    if let Some((end, _)) = text.char_indices().nth(max) {
        text.truncate(end);
        text.push('…');
    }
}

/// A short rendering of a value for messages: long values are cut.
pub(crate) fn brief(value: &Value) -> String {
    let mut text = value.to_string();
    shorten(&mut text, 60);
    text
}

pub(crate) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

pub(crate) fn type_name(name: &str) -> &str {
    match name {
        "integer" => "an integer",
        "number" => "a number",
        "string" => "a string",
        "boolean" => "a boolean",
        "array" => "an array",
        "object" => "an object",
        "null" => "null",
        other => other,
    }
}

/// "1 character", "2 characters".
pub(crate) fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

pub(crate) fn join_or(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
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
            } else {
                format!(
                    "expected {}, got {} {}",
                    join_or(&expected),
                    kind_of(instance),
                    brief(instance)
                )
            }
        }
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
            format!("{} is less than the minimum of {limit}", brief(instance))
        }
        ValidationErrorKind::Maximum { limit } => {
            format!("{} is greater than the maximum of {limit}", brief(instance))
        }
        ValidationErrorKind::ExclusiveMinimum { limit } => {
            format!("{} must be greater than {limit}", brief(instance))
        }
        ValidationErrorKind::ExclusiveMaximum { limit } => {
            format!("{} must be less than {limit}", brief(instance))
        }
        ValidationErrorKind::MultipleOf { multiple_of } => {
            format!("{} is not a multiple of {multiple_of}", brief(instance))
        }
        ValidationErrorKind::MinLength { limit } => format!(
            "{} is {}; use at least {}",
            brief(instance),
            count(
                instance.as_str().map_or(0, |s| s.chars().count()) as u64,
                "character"
            ),
            count(*limit, "character")
        ),
        ValidationErrorKind::MaxLength { limit } => format!(
            "is {}; use at most {}",
            count(
                instance.as_str().map_or(0, |s| s.chars().count()) as u64,
                "character"
            ),
            count(*limit, "character")
        ),
        ValidationErrorKind::MinItems { limit } => format!(
            "has {}; send at least {}",
            count(instance.as_array().map_or(0, Vec::len) as u64, "item"),
            count(*limit, "item")
        ),
        ValidationErrorKind::MaxItems { limit } => format!(
            "has {}; send at most {}",
            count(instance.as_array().map_or(0, Vec::len) as u64, "item"),
            count(*limit, "item")
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
        ValidationErrorKind::FalseSchema => format!("{noun} is not allowed here; remove it"),
        _ => cut(&err.to_string(), 200),
    };
    out.push(FieldError::new(pointer, message));
}

// ---------------------------------------------------------------------------------------------
// Typed checks of `#[arg]` constraints, called by the code `#[tool]` generates.

/// A number, exact for every Rust integer type.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub enum Num {
    /// An integer.
    Int(i128),
    /// A float.
    Float(f64),
}

impl From<Bound> for Num {
    fn from(bound: Bound) -> Self {
        match bound {
            Bound::Int(n) => Self::Int(i128::from(n)),
            Bound::UInt(n) => Self::Int(i128::from(n)),
            Bound::Float(f) => Self::Float(f),
        }
    }
}

/// Compares an integer with a float exactly (no rounding of large integers).
fn cmp_int_float(i: i128, f: f64) -> Option<Ordering> {
    if f.is_nan() {
        return None;
    }
    #[allow(clippy::cast_precision_loss)]
    let (lo, hi) = (i128::MIN as f64, i128::MAX as f64);
    if f >= hi {
        return Some(Ordering::Less);
    }
    if f < lo {
        return Some(Ordering::Greater);
    }
    let t = f.trunc();
    #[allow(clippy::cast_possible_truncation)]
    let ti = t as i128;
    Some(i.cmp(&ti).then(if f > t {
        Ordering::Less
    } else if f < t {
        Ordering::Greater
    } else {
        Ordering::Equal
    }))
}

impl Num {
    pub(crate) fn compare(self, other: Self) -> Option<Ordering> {
        match (self, other) {
            (Self::Int(a), Self::Int(b)) => Some(a.cmp(&b)),
            (Self::Float(a), Self::Float(b)) => a.partial_cmp(&b),
            (Self::Int(a), Self::Float(b)) => cmp_int_float(a, b),
            (Self::Float(a), Self::Int(b)) => cmp_int_float(b, a).map(Ordering::reverse),
        }
    }

    fn from_json(value: &Value) -> Option<Self> {
        let n = value.as_number()?;
        n.as_i64()
            .map(|i| Self::Int(i128::from(i)))
            .or_else(|| n.as_u64().map(|u| Self::Int(i128::from(u))))
            .or_else(|| n.as_f64().map(Self::Float))
    }
}

pub(crate) fn compare_json_numbers(a: &Value, b: &Value) -> Option<Ordering> {
    Num::from_json(a)?.compare(Num::from_json(b)?)
}

/// Whether `n` satisfies a `range` constraint.
pub(crate) fn in_range(n: Num, constraint: &Constraint) -> bool {
    let Constraint::Range {
        min,
        max,
        exclusive_min,
        exclusive_max,
    } = *constraint
    else {
        return true;
    };
    let cmp = |bound: Bound| n.compare(bound.into());
    min.is_none_or(|b| matches!(cmp(b), Some(Ordering::Greater | Ordering::Equal)))
        && max.is_none_or(|b| matches!(cmp(b), Some(Ordering::Less | Ordering::Equal)))
        && exclusive_min.is_none_or(|b| cmp(b) == Some(Ordering::Greater))
        && exclusive_max.is_none_or(|b| cmp(b) == Some(Ordering::Less))
}

/// Whether a length satisfies a `length` constraint.
pub(crate) fn in_length(len: usize, constraint: &Constraint) -> bool {
    let Constraint::Length { min, max, .. } = *constraint else {
        return true;
    };
    let len = len as u64;
    min.is_none_or(|m| len >= m) && max.is_none_or(|m| len <= m)
}

/// Whether `text` satisfies the `pattern`/`format` constraints of parameter `index`.
pub(crate) fn text_matches(def: &ToolDefinition, index: usize, text: &str) -> bool {
    match def.compiled.text.get(index) {
        Some(Some(validator)) => validator.is_valid(&Value::String(text.to_owned())),
        Some(None) => true,
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn exact_number_comparison() {
        let big = i128::from(u64::MAX);
        assert_eq!(
            Num::Int(big).compare(Num::Float(1.8e19)),
            Some(Ordering::Greater)
        );
        assert_eq!(
            Num::Int(10).compare(Num::Float(10.0)),
            Some(Ordering::Equal)
        );
        assert_eq!(Num::Int(10).compare(Num::Float(10.5)), Some(Ordering::Less));
        assert_eq!(Num::Float(-0.5).compare(Num::Int(0)), Some(Ordering::Less));
        assert_eq!(
            Num::Int(9_007_199_254_740_993).compare(Num::Float(9_007_199_254_740_992.0)),
            Some(Ordering::Greater)
        );
    }

    #[test]
    fn integers_written_with_a_fraction_are_normalized() {
        assert_eq!(
            normalize_integers(&json!({"a": [5.0, 5.5, -2.0]})),
            json!({"a": [5, 5.5, -2]})
        );
        let whole = json!({"a": [5.0]});
        assert!(
            matches!(normalized_integers(&whole), std::borrow::Cow::Owned(v) if v == json!({"a": [5]}))
        );
        let plain = json!({"a": [5, 5.5, "x"]});
        assert!(matches!(
            normalized_integers(&plain),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn resolves_schema_locations_through_refs() {
        let root = json!({"properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"properties": {"b": {"type": "string"}}}}});
        assert_eq!(
            resolve(&root, "/properties/a/$ref/properties/b/type"),
            Some(&json!("string"))
        );
    }

    #[test]
    fn brief_cuts_long_values() {
        let long = Value::String("x".repeat(500));
        assert!(brief(&long).chars().count() <= 61);
    }
}

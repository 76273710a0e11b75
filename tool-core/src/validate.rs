//! Turning a model's arguments into the typed argument struct, or into errors the model can fix.
//!
//! The success path deserializes the text straight into the struct (through the strict
//! adapter, which also holds the [`InputLimits`] and refuses repeated keys) and checks the
//! `#[arg]` constraints on the typed values. Only when that fails is the document read again
//! by the explaining reader (`reader.rs`: exact numbers, repeated keys and limits with their
//! pointers) and its violations collected, each with its JSON pointer: by the direct reporter
//! of `report.rs` for flat schemas, else by the full JSON Schema validator. See
//! `docs/validation.md` for why the paths agree.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt::Write as _;

use jsonschema::error::{TypeKind, ValidationErrorKind};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::context::ToolContext;
use crate::error::{FieldError, ToolError};
use crate::limits::{InputLimits, Limit};
use crate::reader::{Inexact, Refusal};
use crate::tool::{Arguments, Bound, Constraint, ToolDefinition};

/// The check `#[tool]` generates for the typed `#[arg]` constraints of one argument struct.
pub type Check<A> = fn(&A, &ToolDefinition) -> bool;

/// The limits a call of the tool defined by `def` is read under: the context's (a toolbox
/// sets them), else the tool's own, else the defaults.
pub(crate) fn limits_for<'a>(
    def: &'a ToolDefinition,
    ctx: Option<&'a ToolContext>,
) -> &'a InputLimits {
    ctx.and_then(ToolContext::input_limits)
        .or_else(|| def.input_limits())
        .unwrap_or(&InputLimits::DEFAULT)
}

/// Parses and validates `arguments` for the tool defined by `def`.
///
/// The only code generic over `A` is the typed read (from text, or from an object that arrived
/// parsed, or the accepted document after a refusal) and the check; everything else
/// (explaining a refusal, unwrapping, reading exactly) is shared by every tool, so that a crate
/// of many tools compiles one copy of it.
///
/// # Errors
///
/// `invalid_arguments` with one [`FieldError`] per violation; `internal_error` if the tool's
/// own schema is broken.
pub fn parse_arguments<A: DeserializeOwned>(
    def: &ToolDefinition,
    arguments: Arguments<'_>,
    ctx: &ToolContext,
    check: Check<A>,
) -> Result<A, ToolError> {
    let limits = limits_for(def, Some(ctx));
    let read = match typed_input(def, &arguments, limits) {
        Some(Typed::Text(text)) => Some(crate::strict::from_str::<A>(text, limits)),
        Some(Typed::Value(value)) => Some(crate::strict::from_value::<A>(value, limits)),
        None => None,
    };
    match read {
        Some(Ok(args)) if check(&args, def) => return Ok(args),
        _ => {}
    }
    let mut slot = None;
    let explained =
        explain_refusal(
            def,
            &arguments,
            limits,
            &mut |value| match crate::strict::from_value::<A>(value, limits) {
                Ok(args) => {
                    let passed = check(&args, def);
                    slot = Some(args);
                    Read::Typed { passed }
                }
                Err(err) => Read::Refused(err),
            },
        );
    release(arguments);
    explained?;
    slot.ok_or_else(|| ToolError::internal("the arguments were accepted but not kept"))
}

/// Drops refused arguments; a parsed value is taken apart without recursion, since it may be
/// nested deeper than the stack allows.
fn release(arguments: Arguments<'_>) {
    if let Arguments::Value(Cow::Owned(value)) = arguments {
        crate::limits::dismantle(value);
    }
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
/// document read through `read`. `Ok` means its read passed.
fn explain_refusal(
    def: &ToolDefinition,
    arguments: &Arguments<'_>,
    limits: &InputLimits,
    read: &mut dyn FnMut(&Value) -> Read,
) -> Result<(), ToolError> {
    let document = document(def, arguments, limits)?;
    explain_value(def, &document.value)?;
    match read(&document.value) {
        Read::Typed { passed: true } => Ok(()),
        Read::Typed { passed: false } => Err(broken_constraint(def)),
        Read::Refused(err) => {
            let fields = inexact_fields(def, &document.inexact);
            if fields.is_empty() {
                Err(unreadable(def, Some(err)))
            } else {
                Err(invalid(def, fields))
            }
        }
    }
}

/// The numbers the typed read refused because they are not integers it can take exactly,
/// each with the range its schema allows.
fn inexact_fields(def: &ToolDefinition, inexact: &[Inexact]) -> Vec<FieldError> {
    let root = def.input_schema();
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
    let why = err.map_or_else(String::new, |err| {
        format!(": {}", crate::echo::message(&err.to_string(), 300))
    });
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

/// The typed read's input; none for a tool that validates fully, for arguments that are
/// neither text nor an object (the explanation says what is wrong with them), for text over
/// the byte limit and for a parsed value the typed read must not see as it is (over a limit,
/// or with integers written as floats).
fn typed_input<'a>(
    def: &ToolDefinition,
    arguments: &'a Arguments<'_>,
    limits: &InputLimits,
) -> Option<Typed<'a>> {
    if def.full_validation {
        return None;
    }
    let text = match arguments {
        Arguments::Text(text) => text.as_ref(),
        Arguments::Value(value) => match &**value {
            Value::String(text) => text.as_str(),
            value @ Value::Object(_) => {
                let found = crate::limits::check_value(value, limits);
                return (found.broken.is_none() && !found.integral_floats)
                    .then_some(Typed::Value(value));
            }
            _ => return None,
        },
    };
    if limits.too_long(text.len()) {
        return None;
    }
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
    arguments: &Arguments<'_>,
    limits: &InputLimits,
) -> Result<Value, ToolError> {
    let document = document(def, arguments, limits)?;
    let value = document.value.into_owned();
    // Most calls are valid: the validator's yes/no answer is much cheaper than its errors.
    if !def.validator().is_ok_and(|v| v.is_valid(&value)) {
        explain_value(def, &value)?;
    }
    // The validator takes a float that looks integral for an integer; the typed read would
    // refuse it, so a value handed to a reviewer or a hash must not carry it.
    let inexact = inexact_fields(def, &document.inexact);
    if !inexact.is_empty() {
        return Err(invalid(def, inexact));
    }
    Ok(value)
}

/// The arguments as one document, read under the limits (exact numbers, no repeated keys),
/// with the numbers an integer cannot take exactly.
struct Document<'a> {
    value: Cow<'a, Value>,
    inexact: Vec<Inexact>,
}

fn document<'a>(
    def: &ToolDefinition,
    arguments: &'a Arguments<'_>,
    limits: &InputLimits,
) -> Result<Document<'a>, ToolError> {
    match arguments {
        Arguments::Text(text) => text_document(def, text, limits, false),
        Arguments::Value(value) => match &**value {
            Value::String(text) => text_document(def, text, limits, true),
            value => value_document(def, value, limits),
        },
    }
}

fn empty<'a>() -> Document<'a> {
    Document {
        value: Cow::Owned(Value::Object(Map::new())),
        inexact: Vec::new(),
    }
}

fn text_document<'a>(
    def: &ToolDefinition,
    text: &str,
    limits: &InputLimits,
    unwrapped: bool,
) -> Result<Document<'a>, ToolError> {
    if limits.too_long(text.len()) {
        return Err(invalid(
            def,
            vec![Limit::Bytes.field(limits, String::new())],
        ));
    }
    if !text.starts_with('{') && text.trim().is_empty() {
        return Ok(empty());
    }
    let read = crate::reader::read(text, limits).map_err(|refusal| match refusal {
        Refusal::Syntax(err) => invalid_json(def, &err),
        Refusal::Limit(limit, pointer) => invalid(def, vec![limit.field(limits, pointer)]),
        Refusal::Duplicate { pointer, key } => invalid(
            def,
            vec![FieldError::new(
                pointer,
                format!("`{key}` appears more than once; send each key once"),
            )],
        ),
    })?;
    match read.value {
        // OpenAI sends the arguments as a JSON string holding the object's text.
        Value::String(inner) if !unwrapped => text_document(def, &inner, limits, true),
        value => Ok(Document {
            value: Cow::Owned(value),
            inexact: read.inexact,
        }),
    }
}

fn value_document<'a>(
    def: &ToolDefinition,
    value: &'a Value,
    limits: &InputLimits,
) -> Result<Document<'a>, ToolError> {
    let found = crate::limits::check_value(value, limits);
    if let Some((limit, pointer)) = found.broken {
        return Err(invalid(def, vec![limit.field(limits, pointer)]));
    }
    let value = if found.integral_floats {
        Cow::Owned(crate::limits::integral_floats_as_integers(value))
    } else {
        Cow::Borrowed(value)
    };
    let inexact = found
        .beyond_exact
        .into_iter()
        .map(|(pointer, literal)| Inexact { pointer, literal })
        .collect();
    Ok(Document { value, inexact })
}

/// Reports every violation (the direct reporter, else the full validator) of a document read
/// under the limits.
fn explain_value(def: &ToolDefinition, value: &Value) -> Result<(), ToolError> {
    let mut fields = match (def.report(), value) {
        (Some(report), Value::Object(map)) => report.check(map),
        _ => Vec::new(),
    };
    if fields.is_empty() {
        fields = explain_with_validator(def, value)?;
    }
    if fields.is_empty() {
        Ok(())
    } else {
        Err(invalid(def, fields))
    }
}

/// The problems with `value` as the direct reporter lists them (`None` when the tool's schema
/// has none) and as the full validator does. For tests that hold the two to each other.
#[doc(hidden)]
pub fn explanations(
    def: &ToolDefinition,
    value: &Value,
) -> (Option<Vec<FieldError>>, Result<Vec<FieldError>, ToolError>) {
    let direct = def.report().map(|report| match value {
        Value::Object(map) => report.check(map),
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
        // Enough to explain; a document with thousands of problems gets a short answer.
        if fields.len() > MAX_FIELDS {
            break;
        }
    }
    Ok(fields)
}

/// At most this many problems are listed; a document with thousands of unknown keys should
/// not produce an error larger than itself.
const MAX_FIELDS: usize = 20;

/// The `invalid_arguments` error for `fields`, as every refusal of arguments words it.
pub(crate) fn refused(def: &ToolDefinition, fields: Vec<FieldError>) -> ToolError {
    invalid(def, fields)
}

fn invalid(def: &ToolDefinition, mut fields: Vec<FieldError>) -> ToolError {
    if fields.len() > MAX_FIELDS {
        fields.truncate(MAX_FIELDS);
        fields.push(FieldError::new(
            "",
            "and more problems: fix these and call again to see the rest",
        ));
    }
    for field in &mut fields {
        if field.pointer.len() > crate::limits::MAX_POINTER {
            field.pointer =
                crate::echo::echo_to(&field.pointer, crate::limits::MAX_POINTER).into_owned();
        }
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
                "the arguments are not valid JSON ({}); send one JSON object whose keys are the parameter names",
                crate::echo::message(&err.to_string(), 300)
            ),
        )],
    )
}

/// `value` with integral numbers written as integers (`5.0` → `5`) where a float holds the
/// integer unambiguously (below 2^53); borrowed when it has none, which is almost always.
pub(crate) fn normalized_integers(value: &Value) -> Cow<'_, Value> {
    if crate::limits::check_value(value, &InputLimits::UNBOUNDED).integral_floats {
        Cow::Owned(crate::limits::integral_floats_as_integers(value))
    } else {
        Cow::Borrowed(value)
    }
}

// ---------------------------------------------------------------------------------------------
// Messages

/// A key as a JSON pointer segment (RFC 6901), cut to the echo cap with control characters
/// shown escaped: a pointer quotes the model's keys like any message does.
pub(crate) fn escape(segment: &str) -> String {
    crate::echo::echo(&segment.replace('~', "~0").replace('/', "~1")).into_owned()
}

fn unescape(segment: &str) -> String {
    segment.replace("~1", "/").replace("~0", "~")
}

/// `text` cut to `max` characters, marked with `…` when cut, control characters escaped.
pub(crate) fn cut(text: &str, max: usize) -> String {
    crate::echo::echo_to(text, max).into_owned()
}

/// A short rendering of a value for messages: its JSON, cut to the echo cap. Only the start
/// of a long value is ever written out.
pub(crate) fn brief(value: &Value) -> String {
    /// Takes bytes until it has enough, then refuses the rest (ending serialization early).
    struct Prefix(Vec<u8>);
    impl std::io::Write for Prefix {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let room = PREFIX.saturating_sub(self.0.len());
            if room == 0 {
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            let n = room.min(buf.len());
            self.0.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    // Enough bytes for the cap in any script (at most 4 bytes a character), plus one.
    const PREFIX: usize = crate::echo::ECHO_CAP * 4 + 4;
    let mut prefix = Prefix(Vec::new());
    let cut_short = serde_json::to_writer(&mut prefix, value).is_err();
    let text = String::from_utf8_lossy(&prefix.0);
    let shown = crate::echo::echo(&text);
    if cut_short && !shown.ends_with('…') {
        format!("{shown}…")
    } else {
        shown.into_owned()
    }
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
        _ => crate::echo::message(&err.to_string(), 300),
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
            normalized_integers(&json!({"a": [5.0, 5.5, -2.0, 1e19]})).into_owned(),
            json!({"a": [5, 5.5, -2, 1e19]})
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

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

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use std::sync::{Arc, OnceLock};

use crate::arguments::Arguments;
use crate::context::ToolContext;
use crate::error::{FieldError, ToolError};
use crate::limits::{InputLimits, Limit};
use crate::schema::Compiled;

pub(crate) mod canonical;
pub(crate) mod explain;
pub(crate) mod findings;
pub(crate) mod outline;
pub(crate) mod reader;
pub(crate) mod report;
pub(crate) mod stream;
pub(crate) mod strict;

use explain::{describe, inexact_fields};
pub use findings::Findings;
use reader::{Inexact, Refusal};
use report::Report;

/// What a tool's arguments are checked with: the tool's name (for messages), its input schema,
/// the constraints serde does not enforce, compiled patterns, its limits, and the full
/// validator and the direct reporter, each built on first use. A definition holds one; it
/// knows nothing about exports, lints or the execution policy.
#[doc(hidden)]
pub struct Validation {
    name: std::borrow::Cow<'static, str>,
    schema: Arc<Value>,
    /// Shared by the copies of a definition.
    pub(crate) compiled: Arc<Compiled>,
    pub(crate) full_validation: bool,
    limits: Option<InputLimits>,
    validator: OnceLock<Result<jsonschema::Validator, String>>,
    report: OnceLock<Option<Report>>,
    shape: OnceLock<canonical::Shape>,
    outline: OnceLock<Arc<outline::Outline>>,
}

impl Clone for Validation {
    /// The same checks: the schema and compiled patterns are shared; the validator, the
    /// reporter and the shape, built on first use, are built again for the copy.
    fn clone(&self) -> Self {
        Self {
            name: self.name.clone(),
            schema: Arc::clone(&self.schema),
            compiled: Arc::clone(&self.compiled),
            full_validation: self.full_validation,
            limits: self.limits,
            validator: OnceLock::new(),
            report: OnceLock::new(),
            shape: OnceLock::new(),
            outline: OnceLock::new(),
        }
    }
}

impl Validation {
    pub(crate) fn new(
        name: std::borrow::Cow<'static, str>,
        schema: Value,
        compiled: Compiled,
        full_validation: bool,
        limits: Option<InputLimits>,
    ) -> Self {
        Self {
            name,
            schema: Arc::new(schema),
            compiled: Arc::new(compiled),
            full_validation,
            limits,
            validator: OnceLock::new(),
            report: OnceLock::new(),
            shape: OnceLock::new(),
            outline: OnceLock::new(),
        }
    }

    /// The tool's name, as messages quote it.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn name_cow(&self) -> &std::borrow::Cow<'static, str> {
        &self.name
    }

    /// The input schema.
    pub(crate) fn input_schema(&self) -> &Value {
        &self.schema
    }

    pub(crate) fn input_schema_arc(&self) -> &Arc<Value> {
        &self.schema
    }

    /// The tool's own limits, if it sets any.
    pub(crate) fn input_limits(&self) -> Option<&InputLimits> {
        self.limits.as_ref()
    }

    /// The same schema and limits under another name, for a definition a model is shown
    /// under that name ([`ToolDefinition::view`](crate::ToolDefinition)); validating a call
    /// stays with the tool's own definition.
    pub(crate) fn renamed(&self, name: String) -> Self {
        Self {
            name: std::borrow::Cow::Owned(name),
            schema: Arc::clone(&self.schema),
            compiled: Arc::default(),
            full_validation: self.full_validation,
            limits: self.limits,
            validator: OnceLock::new(),
            report: OnceLock::new(),
            shape: OnceLock::new(),
            outline: OnceLock::new(),
        }
    }

    pub(crate) fn set_input_limits(&mut self, limits: InputLimits) {
        self.limits = Some(limits);
    }

    /// The full JSON Schema validator of the input schema, compiled on first use.
    pub(crate) fn validator(&self) -> Result<&jsonschema::Validator, &str> {
        self.validator
            .get_or_init(|| crate::schema::compile(&self.schema))
            .as_ref()
            .map_err(String::as_str)
    }

    /// The direct reporter of invalid arguments, if the input schema is flat enough for one;
    /// read from the schema on first use.
    pub(crate) fn report(&self) -> Option<&Report> {
        self.report
            .get_or_init(|| Report::build(&self.schema))
            .as_ref()
    }

    /// What the input schema says about the objects of the arguments, for their canonical
    /// form; read from the schema on first use.
    pub(crate) fn shape(&self) -> &canonical::Shape {
        self.shape
            .get_or_init(|| canonical::Shape::of(&self.schema))
    }

    /// What a stream's early checks read from the input schema, per location; read from the
    /// schema on first use.
    pub(crate) fn outline(&self) -> &Arc<outline::Outline> {
        self.outline
            .get_or_init(|| Arc::new(outline::Outline::of(&self.schema)))
    }

    /// Problems found while building (a `pattern` that does not compile) or compiling.
    pub(crate) fn problem(&self) -> Option<&str> {
        self.compiled
            .problem
            .as_deref()
            .or_else(|| self.validator().err())
    }
}

/// The check `#[tool]` generates for the typed `#[arg]` constraints of one argument struct:
/// it records each broken constraint in the findings, which stay empty when none is.
pub type Check<A> = fn(&A, &mut Findings<'_>);

/// The limits a call of the tool defined by `def` is read under: the context's (a toolbox
/// sets them), else the tool's own, else the defaults.
pub(crate) fn limits_for<'a>(def: &'a Validation, ctx: Option<&'a ToolContext>) -> &'a InputLimits {
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
    def: &Validation,
    arguments: Arguments<'_>,
    ctx: &ToolContext,
    check: Check<A>,
) -> Result<A, ToolError> {
    let limits = limits_for(def, Some(ctx));
    let read = match typed_input(def, &arguments, limits) {
        Some(Typed::Text(text)) => Some(strict::args_from_str::<A>(text, limits, true)),
        Some(Typed::Value(value)) => Some(strict::args_from_value::<A>(value, limits, true)),
        None => None,
    };
    if let Some(Ok(args)) = read {
        let mut findings = Findings::new(&def.compiled);
        check(&args, &mut findings);
        if findings.is_empty() {
            return Ok(args);
        }
        // serde read the struct: the broken `#[arg]` constraints are every problem.
        return Err(refused_by_checks(def, arguments, findings));
    }
    let mut slot = None;
    let mut read = |value: &Value| match strict::args_from_value::<A>(value, limits, false) {
        Ok(args) => {
            let mut findings = Findings::new(&def.compiled);
            check(&args, &mut findings);
            slot = Some(args);
            Read::Typed(findings.into_fields())
        }
        Err(err) => Read::Refused(err),
    };
    let explained = explain_refusal(def, &arguments, limits, &mut read);
    release(arguments);
    explained?;
    slot.ok_or_else(|| ToolError::internal("the arguments were accepted but not kept"))
}

/// The refusal of arguments serde read and the typed checks refused.
fn refused_by_checks(
    def: &Validation,
    arguments: Arguments<'_>,
    findings: Findings<'_>,
) -> ToolError {
    release(arguments);
    invalid(def, findings.into_fields())
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
    /// The struct was read (and kept by the reader); what its typed checks found broken.
    Typed(Vec<FieldError>),
    /// serde refused the document.
    Refused(serde_json::Error),
}

/// The steps of [`parse_arguments`] after the typed read refused the arguments (or was
/// skipped), which do not depend on the argument struct: every problem, or the accepted
/// document read through `read`. `Ok` means its read passed.
fn explain_refusal(
    def: &Validation,
    arguments: &Arguments<'_>,
    limits: &InputLimits,
    read: &mut dyn FnMut(&Value) -> Read,
) -> Result<(), ToolError> {
    // Text the direct reporter can explain is explained while it is read, one member at a
    // time, without the object being built: the usual refusal.
    if let Some(report) = def.report()
        && let Some(text) = arguments_text(arguments)
    {
        let mut members = report.members();
        if reader::read_members(text, limits, &mut |key, value| {
            members.member(Cow::Owned(key), &value)
        }) {
            let fields = members.finish();
            if !fields.is_empty() {
                return Err(invalid(def, fields));
            }
        }
    }
    let document = document(def, arguments, limits)?;
    explain_value(def, &document.value)?;
    match read(&document.value) {
        Read::Typed(broken) if broken.is_empty() => Ok(()),
        Read::Typed(broken) => Err(invalid(def, broken)),
        Read::Refused(err) => {
            let fields = inexact_fields(def.input_schema(), &document.inexact);
            if fields.is_empty() {
                Err(unreadable(def, Some(err)))
            } else {
                Err(invalid(def, fields))
            }
        }
    }
}

/// The arguments as text, when they came as text (a transport's, or a provider's string).
fn arguments_text<'a>(arguments: &'a Arguments<'_>) -> Option<&'a str> {
    match arguments {
        Arguments::Text(text) => Some(text),
        Arguments::Value(value) => value.as_str(),
    }
}

fn unreadable(def: &Validation, err: Option<serde_json::Error>) -> ToolError {
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
    def: &Validation,
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

/// Reads `arguments` for the tool `def` once: validated with the full validator (every
/// violation explained), then made canonical.
pub(crate) fn read_once(
    def: &Validation,
    arguments: &Arguments<'_>,
    limits: &InputLimits,
) -> Result<canonical::Checked, ToolError> {
    let mut value = validate_full(def, arguments, limits)?;
    def.shape().canonicalize(&mut value);
    Ok(canonical::Checked::new(value))
}

/// Validates `arguments` with the full validator, whatever the tool's fast path, and returns
/// them as a value.
pub(crate) fn validate_full(
    def: &Validation,
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
    let inexact = inexact_fields(def.input_schema(), &document.inexact);
    if !inexact.is_empty() {
        return Err(invalid(def, inexact));
    }
    Ok(value)
}

/// `arguments` with each `null` given for an optional property whose schema does not take
/// `null` left out, when there is one (`None` otherwise, or when the arguments cannot be read
/// under `limits`: the call's own read refuses them as it would). A strict export declares
/// such a property nullable and means `null` as "left out"; only a call in a strict dialect
/// is read this way, so the schema a model was given is the one it is held to.
pub(crate) fn nulls_left_out(
    def: &Validation,
    arguments: &Arguments<'_>,
    limits: &InputLimits,
) -> Option<Value> {
    let mut value = document(def, arguments, limits).ok()?.value.into_owned();
    if !has_null(&value, 0) {
        return None;
    }
    let schema = def.input_schema();
    prune_nulls(schema, schema, &mut value, 0);
    Some(value)
}

/// Whether a `null` appears anywhere in `value` (most arguments have none: nothing to prune).
fn has_null(value: &Value, depth: usize) -> bool {
    match value {
        Value::Null => true,
        Value::Object(map) if depth < 64 => map.values().any(|v| has_null(v, depth + 1)),
        Value::Array(items) if depth < 64 => items.iter().any(|v| has_null(v, depth + 1)),
        _ => false,
    }
}

/// Removes, at every depth the schema describes, a `null` given for an optional property whose
/// schema does not take `null`: the value a strict export tells the model to send for a
/// parameter it leaves out. A required property's `null` stays, to be refused.
fn prune_nulls(root: &Value, schema: &Value, value: &mut Value, depth: usize) {
    if depth > 64 {
        return;
    }
    let schema = resolve(root, schema);
    match value {
        Value::Object(map) => {
            let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
                return;
            };
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            map.retain(|key, v| {
                !(v.is_null()
                    && !required.contains(&key.as_str())
                    && properties.get(key).is_some_and(|p| !accepts_null(root, p)))
            });
            for (key, v) in map.iter_mut() {
                if let Some(property) = properties.get(key) {
                    prune_nulls(root, property, v, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = schema.get("items") {
                for v in items {
                    prune_nulls(root, item, v, depth + 1);
                }
            }
        }
        _ => {}
    }
}

/// The schema a `$ref` into the root's `$defs` names, or the schema itself.
fn resolve<'s>(root: &'s Value, schema: &'s Value) -> &'s Value {
    schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
        .and_then(|name| root.get("$defs").and_then(|defs| defs.get(name)))
        .unwrap_or(schema)
}

/// Whether a schema takes `null`.
fn accepts_null(root: &Value, schema: &Value) -> bool {
    let schema = resolve(root, schema);
    let Value::Object(map) = schema else {
        return schema != &Value::Bool(false);
    };
    match map.get("type") {
        Some(Value::String(t)) if t != "null" => return false,
        Some(Value::Array(types)) if !types.iter().any(|t| t == "null") => return false,
        _ => {}
    }
    if let Some(Value::Array(values)) = map.get("enum") {
        return values.iter().any(Value::is_null);
    }
    if let Some(value) = map.get("const") {
        return value.is_null();
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = map.get(key) {
            return branches.iter().any(|b| accepts_null(root, b));
        }
    }
    true
}

/// The arguments as one document, read under the limits (exact numbers, no repeated keys),
/// with the numbers an integer cannot take exactly.
struct Document<'a> {
    value: Cow<'a, Value>,
    inexact: Vec<Inexact>,
}

fn document<'a>(
    def: &Validation,
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
    def: &Validation,
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
    let read = reader::read(text, limits).map_err(|refusal| match refusal {
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
    def: &Validation,
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
fn explain_value(def: &Validation, value: &Value) -> Result<(), ToolError> {
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
    def: &Validation,
    value: &Value,
) -> (Option<Vec<FieldError>>, Result<Vec<FieldError>, ToolError>) {
    let direct = def.report().map(|report| match value {
        Value::Object(map) => report.check(map),
        _ => Vec::new(),
    });
    (direct, explain_with_validator(def, value))
}

/// Every problem the full validator finds in `value`, described for the model.
fn explain_with_validator(def: &Validation, value: &Value) -> Result<Vec<FieldError>, ToolError> {
    let validator = def.validator().map_err(ToolError::internal)?;
    let schema = def.input_schema();
    let mut fields = Vec::new();
    for err in validator.iter_errors(value) {
        describe(schema, &err, &mut fields);
        // Enough to explain; a document with thousands of problems gets a short answer.
        if fields.len() > crate::error::MAX_FIELDS {
            break;
        }
    }
    Ok(fields)
}

/// The `invalid_arguments` error for `fields`, as every refusal of arguments words it.
pub(crate) fn refused(def: &Validation, fields: Vec<FieldError>) -> ToolError {
    invalid(def, fields)
}

pub(crate) fn invalid(def: &Validation, mut fields: Vec<FieldError>) -> ToolError {
    if fields.len() > crate::error::MAX_FIELDS {
        fields.truncate(crate::error::MAX_FIELDS);
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
    const START: &str = "The arguments for `";
    const END: &str = ". Fix these and call the tool again.";
    let size = fields
        .iter()
        .map(|f| f.pointer.len() + f.message.len() + 4)
        .sum::<usize>();
    let mut message = String::with_capacity(START.len() + def.name().len() + 16 + size + END.len());
    message.push_str(START);
    message.push_str(def.name());
    message.push_str("` are invalid: ");
    let problems = message.len();
    for (i, field) in fields.iter().enumerate() {
        if i > 0 {
            message.push_str("; ");
        }
        // As `FieldError`'s `Display` writes it.
        if !field.pointer.is_empty() {
            message.push_str(&field.pointer);
            message.push_str(": ");
        }
        message.push_str(&field.message);
    }
    let problems = problems..message.len();
    message.push_str(END);
    ToolError::invalid_arguments(message)
        .with_fields(fields)
        .marked_refusal(problems)
}

fn invalid_json(def: &Validation, err: &serde_json::Error) -> ToolError {
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

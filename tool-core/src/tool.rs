//! The `Tool` trait and the definition a tool exports: name, description and input schema.

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use serde::Serialize;
use serde_json::Value;

use crate::context::ToolContext;
use crate::error::ToolError;
use crate::lint::LintLevel;
use crate::outcome::ToolOutcome;
use crate::policy::ToolPolicy;
use crate::provider::{Dialect, ExportError};
use crate::schema::{self, Compiled};

/// A boxed future, as returned by [`Tool::call`].
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A tool a model can call. `#[tool]` implements it for the unit struct it generates; a
/// [`Toolbox`](crate::Toolbox) holds tools as `dyn Tool`.
///
/// Implement it by hand for tools whose schema is only known at run time:
///
/// ```
/// use toolsmith::serde_json::json;
/// use toolsmith::{Arguments, BoxFuture, Tool, ToolContext, ToolDefinition, ToolOutcome, Toolbox};
///
/// struct Echo(ToolDefinition);
///
/// impl Tool for Echo {
///     fn definition(&self) -> &ToolDefinition {
///         &self.0
///     }
///     fn call<'a>(&'a self, arguments: Arguments<'a>, _ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutcome> {
///         Box::pin(async move {
///             match self.0.validate(arguments) {
///                 Ok(args) => ToolOutcome::success(&args["text"]).unwrap_or_else(ToolOutcome::Error),
///                 Err(err) => ToolOutcome::Error(err),
///             }
///         })
///     }
/// }
///
/// let schema = json!({"type": "object", "properties": {"text": {"type": "string"}},
///                     "required": ["text"], "additionalProperties": false});
/// let toolbox = Toolbox::new().with(Echo(ToolDefinition::new("echo", "Echoes the text.", schema)));
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let out = toolbox.call("echo", r#"{"text":"hi"}"#, &ToolContext::new()).await;
/// assert_eq!(out.to_json(), r#"{"status":"success","data":"hi"}"#);
/// # });
/// ```
pub trait Tool: Send + Sync + 'static {
    /// The tool's definition, built once and cached.
    fn definition(&self) -> &ToolDefinition;

    /// Validates `arguments` against the definition and runs the tool.
    ///
    /// Returns the envelope; a model's mistake is an error outcome, never a panic.
    fn call<'a>(
        &'a self,
        arguments: Arguments<'a>,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ToolOutcome>;

    /// Validates and runs the tool in place, when its definition says it is inline
    /// ([`ToolDefinition::is_inline`], `#[tool(inline)]`), putting the result data where
    /// `emit` says. `None` for every other tool (the default): those run through
    /// [`call`](Self::call).
    fn call_inline(
        &self,
        arguments: Arguments<'_>,
        ctx: &ToolContext,
        emit: Emit<'_>,
    ) -> Option<Result<Emitted, ToolError>> {
        let _ = (arguments, ctx, emit);
        None
    }
}

/// Where an inline call puts its result data (see [`Tool::call_inline`]).
#[derive(Debug)]
pub enum Emit<'b> {
    /// As a [`RawValue`](serde_json::value::RawValue), for a [`ToolOutcome`].
    Raw,
    /// Appended to the buffer as JSON text (the toolbox has written the envelope's start).
    Into(&'b mut Vec<u8>),
}

/// What an inline call produced (see [`Tool::call_inline`]).
#[derive(Debug)]
pub enum Emitted {
    /// The data, for [`Emit::Raw`].
    Raw(Box<serde_json::value::RawValue>),
    /// The data is in the buffer, for [`Emit::Into`].
    Written,
}

impl Emit<'_> {
    /// Serializes `data` where this says; a value serde cannot write is an `internal_error`
    /// (and leaves the buffer as it was).
    ///
    /// ```
    /// use toolsmith::{Emit, Emitted};
    /// let mut buf = b"data=".to_vec();
    /// assert!(matches!(Emit::Into(&mut buf).data(&[1, 2]), Ok(Emitted::Written)));
    /// assert_eq!(buf, b"data=[1,2]");
    /// ```
    ///
    /// # Errors
    ///
    /// When `data` does not serialize to JSON (a map with non-string keys, a failing
    /// `Serialize` impl).
    pub fn data<T: serde::Serialize + ?Sized>(self, data: &T) -> Result<Emitted, ToolError> {
        match self {
            Self::Raw => crate::outcome::raw_data(data).map(Emitted::Raw),
            Self::Into(buf) => {
                let start = buf.len();
                serde_json::to_writer(&mut *buf, data).map_err(|err| {
                    buf.truncate(start);
                    crate::outcome::not_json(&err)
                })?;
                Ok(Emitted::Written)
            }
        }
    }
}

/// The arguments of a call as they arrive from a provider: JSON text, or a parsed value.
///
/// Either may be an object, or a JSON string that contains the object's text (OpenAI sends the
/// arguments as a string). Empty text stands for `{}`.
///
/// ```
/// use toolsmith::Arguments;
/// let a: Arguments<'_> = r#"{"city":"Paris"}"#.into();
/// let v = toolsmith::serde_json::json!({"city": "Paris"});
/// let b: Arguments<'_> = (&v).into();
/// assert!(matches!(a, Arguments::Text(_)));
/// assert!(matches!(b, Arguments::Value(_)));
/// ```
#[derive(Clone, Debug)]
pub enum Arguments<'a> {
    /// JSON text.
    Text(Cow<'a, str>),
    /// An already-parsed JSON value.
    Value(Cow<'a, Value>),
}

impl Arguments<'_> {
    /// The same arguments, borrowed: no copy of owned text or values.
    pub(crate) fn reborrow(&self) -> Arguments<'_> {
        match self {
            Self::Text(text) => Arguments::Text(Cow::Borrowed(text)),
            Self::Value(value) => Arguments::Value(Cow::Borrowed(value)),
        }
    }
}

impl<'a> From<&'a str> for Arguments<'a> {
    fn from(text: &'a str) -> Self {
        Self::Text(Cow::Borrowed(text))
    }
}

impl<'a> From<&'a String> for Arguments<'a> {
    fn from(text: &'a String) -> Self {
        Self::Text(Cow::Borrowed(text))
    }
}

impl From<String> for Arguments<'_> {
    fn from(text: String) -> Self {
        Self::Text(Cow::Owned(text))
    }
}

impl<'a> From<&'a Value> for Arguments<'a> {
    fn from(value: &'a Value) -> Self {
        Self::Value(Cow::Borrowed(value))
    }
}

impl From<Value> for Arguments<'_> {
    fn from(value: Value) -> Self {
        Self::Value(Cow::Owned(value))
    }
}

/// What `#[tool]` records about a function; the runtime builds the [`ToolDefinition`] from it.
#[doc(hidden)]
#[derive(Debug)]
pub struct ToolSpec {
    /// The tool's name.
    pub name: &'static str,
    /// The raw description: doc lines joined by `\n`, or the explicit `description = "..."`.
    pub description: &'static str,
    /// Whether `description` came from doc comments (one leading space per line is stripped).
    pub description_from_docs: bool,
    /// One entry per model-visible parameter, in order.
    pub params: &'static [ParamSpec],
    /// `#[tool(title = "...")]`.
    pub title: Option<&'static str>,
    /// `#[tool(read_only, destructive, idempotent, open_world)]`.
    pub annotations: Annotations,
    /// The JSON Schema of the return value, when it implements `JsonSchema`.
    pub output_schema: fn() -> Option<Value>,
    /// `#[tool(effect = "...")]`.
    pub effect: Option<Effect>,
    /// `#[tool(requires_approval)]`.
    pub requires_approval: bool,
    /// The level of every lint for this tool (crate config and `#[tool]` settings).
    pub lint_levels: &'static [(&'static str, LintLevel)],
    /// `#[tool(timeout = "5s")]`, in milliseconds.
    pub timeout_ms: Option<u64>,
    /// `#[tool(attempts = 3)]`.
    pub max_attempts: Option<u32>,
    /// `#[tool(concurrency = 2)]`.
    pub concurrency: Option<usize>,
    /// `#[tool(sequential)]`.
    pub sequential: bool,
    /// `#[tool(inline)]`.
    pub inline: bool,
    /// `#[tool(fallback = "other_tool")]`.
    pub fallback: Option<&'static str>,
    /// `#[tool(scopes("tickets:write"))]`.
    pub scopes: &'static [&'static str],
    /// `#[tool(data_classification = "internal")]`.
    pub data_classification: Option<&'static str>,
    /// `#[tool(version = "1.2.0")]`.
    pub version: Option<&'static str>,
    /// `#[tool(limits(max_bytes = ..))]`.
    pub input_limits: Option<crate::limits::InputLimits>,
}

/// What a tool does to the world, from `#[tool(effect = "read" | "write" | "destructive")]`.
///
/// It sets the MCP hints (`readOnlyHint`, `destructiveHint`) unless they are given, and tells
/// execution policies (approval, retries) what they are dealing with.
///
/// ```
/// assert_eq!(toolsmith::Effect::Destructive.as_str(), "destructive");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Effect {
    /// Only reads.
    Read,
    /// Creates or changes data.
    Write,
    /// Deletes or overwrites data, or acts in bulk.
    Destructive,
}

impl Effect {
    /// `read`, `write` or `destructive`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
            Self::Destructive => "destructive",
        }
    }
}

/// Hints about a tool's behaviour, from `#[tool(read_only, destructive, idempotent, open_world)]`.
///
/// They become MCP's `ToolAnnotations` (`readOnlyHint`, ...); unset hints are left out, so
/// clients apply the protocol's defaults.
///
/// ```
/// use toolsmith::Annotations;
/// let hints = Annotations { read_only: Some(true), ..Annotations::default() };
/// assert_eq!(toolsmith::serde_json::Value::Object(hints.to_mcp())["readOnlyHint"], true);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Annotations {
    /// The tool does not change its environment.
    pub read_only: Option<bool>,
    /// The tool may destroy or overwrite data (meaningful when not read-only).
    pub destructive: Option<bool>,
    /// Calling it twice with the same arguments has no further effect.
    pub idempotent: Option<bool>,
    /// The tool reaches outside systems (the web, other services).
    pub open_world: Option<bool>,
}

impl Annotations {
    /// Fills the hints an effect implies, where they are not set.
    #[must_use]
    pub fn with_effect(mut self, effect: Option<Effect>) -> Self {
        let (read_only, destructive) = match effect {
            None => return self,
            Some(Effect::Read) => (true, None),
            Some(Effect::Write) => (false, Some(false)),
            Some(Effect::Destructive) => (false, Some(true)),
        };
        self.read_only = self.read_only.or(Some(read_only));
        self.destructive = self.destructive.or(destructive);
        self
    }

    /// MCP's `ToolAnnotations` object, without the unset hints.
    #[must_use]
    pub fn to_mcp(&self) -> serde_json::Map<String, Value> {
        [
            ("readOnlyHint", self.read_only),
            ("destructiveHint", self.destructive),
            ("idempotentHint", self.idempotent),
            ("openWorldHint", self.open_world),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k.to_owned(), Value::Bool(v))))
        .collect()
    }
}

/// One model-visible parameter.
#[doc(hidden)]
#[derive(Debug)]
pub struct ParamSpec {
    /// The JSON name.
    pub name: &'static str,
    /// The raw description (doc lines joined by `\n`, or `description = "..."`).
    pub description: &'static str,
    /// Whether `description` came from doc comments.
    pub description_from_docs: bool,
    /// The `#[arg]` constraints.
    pub constraints: &'static [Constraint],
    /// The `default = ...` value, as JSON.
    pub default: Option<fn() -> Value>,
    /// `#[arg(allow(..))]` and friends.
    pub lint_levels: &'static [(&'static str, LintLevel)],
    /// `#[arg(sensitive)]`: redacted in audit records.
    pub sensitive: bool,
}

/// One `#[arg(...)]` constraint.
#[doc(hidden)]
#[derive(Debug)]
pub enum Constraint {
    /// `length(min, max)`: Unicode code points of a string, or items of an array.
    Length {
        /// What is counted.
        kind: LengthKind,
        /// Inclusive minimum.
        min: Option<u64>,
        /// Inclusive maximum.
        max: Option<u64>,
    },
    /// `range(min, max, exclusive_min, exclusive_max)`.
    Range {
        /// Inclusive minimum.
        min: Option<Bound>,
        /// Inclusive maximum.
        max: Option<Bound>,
        /// Exclusive minimum.
        exclusive_min: Option<Bound>,
        /// Exclusive maximum.
        exclusive_max: Option<Bound>,
    },
    /// `pattern = "..."` (ECMA-262 regular expression, unanchored, as in JSON Schema).
    Pattern(&'static str),
    /// `email` (`"email"`) or `url` (`"uri"`).
    Format(&'static str),
}

/// What a `length` constraint counts.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LengthKind {
    /// Unicode code points of a string (`minLength`/`maxLength`).
    Chars,
    /// Items of an array (`minItems`/`maxItems`).
    Items,
}

/// A numeric bound written in `range(...)`.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bound {
    /// A negative or non-negative integer.
    Int(i64),
    /// A non-negative integer beyond `i64`.
    UInt(u64),
    /// A number with a fraction or exponent.
    Float(f64),
}

impl Bound {
    pub(crate) fn to_json(self) -> Value {
        match self {
            Self::Int(n) => Value::from(n),
            Self::UInt(n) => Value::from(n),
            Self::Float(n) => Value::from(n),
        }
    }
}

/// A tool's definition: its name, description and canonical input schema (JSON Schema 2020-12).
///
/// Built once per tool and cached; exporting or calling never rebuilds it.
pub struct ToolDefinition {
    name: Cow<'static, str>,
    description: String,
    title: Option<String>,
    annotations: Annotations,
    effect: Option<Effect>,
    requires_approval: bool,
    lint_levels: &'static [(&'static str, LintLevel)],
    param_lint_levels: Vec<(&'static str, &'static [(&'static str, LintLevel)])>,
    policy: ToolPolicy,
    scopes: Vec<String>,
    data_classification: Option<String>,
    version: Option<String>,
    sensitive: Vec<&'static str>,
    input_schema: Arc<Value>,
    output_schema: Option<Arc<Value>>,
    exports: [OnceLock<Result<Value, ExportError>>; 8],
    export_texts: [OnceLock<Result<String, ExportError>>; 8],
    pub(crate) compiled: Compiled,
    pub(crate) full_validation: bool,
    inline: bool,
    validator: OnceLock<Result<jsonschema::Validator, String>>,
    report: OnceLock<Option<crate::report::Report>>,
    input_limits: Option<crate::limits::InputLimits>,
}

impl ToolDefinition {
    /// The definition in `cell`, built on first use from the tool's spec and the schema of
    /// the argument struct `#[tool]` generated. Not generic, so that a crate of many tools
    /// compiles one copy of the building code.
    #[doc(hidden)]
    pub fn get_or_build(
        cell: &'static OnceLock<Self>,
        spec: &'static ToolSpec,
        schema: fn() -> Value,
    ) -> &'static Self {
        cell.get_or_init(|| Self::from_spec(spec, schema()))
    }

    fn from_spec(spec: &'static ToolSpec, schema: Value) -> Self {
        let built = schema::build(spec, schema);
        Self {
            name: Cow::Borrowed(spec.name),
            description: if spec.description_from_docs {
                schema::normalize_doc(spec.description)
            } else {
                spec.description.to_owned()
            },
            title: spec.title.map(str::to_owned),
            annotations: spec.annotations.with_effect(spec.effect),
            effect: spec.effect,
            requires_approval: spec.requires_approval,
            lint_levels: spec.lint_levels,
            param_lint_levels: spec
                .params
                .iter()
                .filter(|p| !p.lint_levels.is_empty())
                .map(|p| (p.name, p.lint_levels))
                .collect(),
            policy: ToolPolicy {
                timeout: spec.timeout_ms.map(std::time::Duration::from_millis),
                max_attempts: spec.max_attempts,
                concurrency: spec.concurrency,
                sequential: spec.sequential,
                fallback: spec.fallback.map(str::to_owned),
                retry: None,
                circuit: None,
            },
            scopes: spec.scopes.iter().map(|s| (*s).to_owned()).collect(),
            data_classification: spec.data_classification.map(str::to_owned),
            version: spec.version.map(str::to_owned),
            sensitive: spec
                .params
                .iter()
                .filter(|p| p.sensitive)
                .map(|p| p.name)
                .collect(),
            input_schema: Arc::new(built.schema),
            output_schema: (spec.output_schema)()
                .and_then(schema::output_schema)
                .map(Arc::new),
            exports: Default::default(),
            export_texts: Default::default(),
            compiled: built.compiled,
            full_validation: built.full_validation,
            inline: spec.inline,
            validator: OnceLock::new(),
            report: OnceLock::new(),
            input_limits: spec.input_limits,
        }
    }

    /// A definition from a hand-written JSON Schema, for tools implemented without `#[tool]`
    /// (proxies, tools loaded at run time). Every call of such a tool is checked by the full
    /// validator; see [`validate`](Self::validate). A schema that does not compile is reported
    /// by [`problem`](Self::problem), and a [`Toolbox`](crate::Toolbox) refuses it.
    ///
    /// ```
    /// use toolsmith::serde_json::json;
    /// use toolsmith::ToolDefinition;
    ///
    /// let def = ToolDefinition::new(
    ///     "get_time",
    ///     "Get the current time in a time zone. Read-only.",
    ///     json!({"type": "object", "properties": {"zone": {"type": "string"}},
    ///            "required": ["zone"], "additionalProperties": false}),
    /// );
    /// assert!(def.problem().is_none());
    /// assert_eq!(def.validate(r#"{"zone":"UTC"}"#.into()).unwrap()["zone"], "UTC");
    /// assert_eq!(def.validate("{}".into()).unwrap_err().fields()[0].pointer, "/zone");
    /// ```
    pub fn new(
        name: impl Into<Cow<'static, str>>,
        description: impl Into<String>,
        input_schema: Value,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            title: None,
            annotations: Annotations::default(),
            effect: None,
            requires_approval: false,
            lint_levels: &[],
            param_lint_levels: Vec::new(),
            policy: ToolPolicy::default(),
            scopes: Vec::new(),
            data_classification: None,
            version: None,
            sensitive: Vec::new(),
            input_schema: Arc::new(input_schema),
            output_schema: None,
            exports: Default::default(),
            export_texts: Default::default(),
            compiled: Compiled::default(),
            full_validation: true,
            inline: false,
            validator: OnceLock::new(),
            report: OnceLock::new(),
            input_limits: None,
        }
    }

    /// Sets the limits on this tool's arguments (size, depth, values, keys, items), for a tool
    /// that takes more (or less) than the defaults; see [`InputLimits`](crate::InputLimits).
    ///
    /// ```
    /// use toolsmith::{InputLimits, ToolDefinition};
    /// let def = ToolDefinition::new("t", "d", toolsmith::serde_json::json!({"type": "object"}))
    ///     .with_input_limits(InputLimits::default().with_max_bytes(16));
    /// let err = def.validate(r#"{"text": "longer than sixteen bytes"}"#.into()).unwrap_err();
    /// assert!(err.message().contains("max_bytes"));
    /// ```
    #[must_use]
    pub fn with_input_limits(mut self, limits: crate::limits::InputLimits) -> Self {
        self.input_limits = Some(limits);
        self
    }

    /// The limits set for this tool's arguments, if it sets its own.
    #[must_use]
    pub fn input_limits(&self) -> Option<&crate::limits::InputLimits> {
        self.input_limits.as_ref()
    }

    /// Sets the human-readable title (MCP's `title`).
    ///
    /// ```
    /// let def = toolsmith::ToolDefinition::new("t", "d", toolsmith::serde_json::json!({"type": "object"}))
    ///     .with_title("Time");
    /// assert_eq!(def.title(), Some("Time"));
    /// ```
    #[must_use]
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the behaviour hints.
    ///
    /// ```
    /// use toolsmith::{Annotations, ToolDefinition};
    /// let def = ToolDefinition::new("t", "d", toolsmith::serde_json::json!({"type": "object"}))
    ///     .with_annotations(Annotations { read_only: Some(true), ..Annotations::default() });
    /// assert_eq!(def.annotations().read_only, Some(true));
    /// ```
    #[must_use]
    pub fn with_annotations(mut self, annotations: Annotations) -> Self {
        self.annotations = annotations;
        self
    }

    /// Sets the JSON Schema of the tool's result data.
    ///
    /// ```
    /// use toolsmith::serde_json::json;
    /// let def = toolsmith::ToolDefinition::new("t", "d", json!({"type": "object"}))
    ///     .with_output_schema(json!({"type": "object", "properties": {"ok": {"type": "boolean"}}}));
    /// assert!(def.output_schema().is_some());
    /// ```
    #[must_use]
    pub fn with_output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(Arc::new(schema));
        self
    }

    /// Declares what the tool does to the world (and sets the MCP hints that follow from it).
    ///
    /// ```
    /// use toolsmith::{Effect, ToolDefinition};
    /// let def = ToolDefinition::new("t", "d", toolsmith::serde_json::json!({"type": "object"})).with_effect(Effect::Read);
    /// assert_eq!(def.annotations().read_only, Some(true));
    /// ```
    #[must_use]
    pub fn with_effect(mut self, effect: Effect) -> Self {
        self.effect = Some(effect);
        self.annotations = self.annotations.with_effect(Some(effect));
        self
    }

    /// Declares that a person must approve each call.
    ///
    /// ```
    /// let def = toolsmith::ToolDefinition::new("t", "d", toolsmith::serde_json::json!({"type": "object"}))
    ///     .with_requires_approval(true);
    /// assert!(def.requires_approval());
    /// ```
    #[must_use]
    pub fn with_requires_approval(mut self, required: bool) -> Self {
        self.requires_approval = required;
        self
    }

    /// Sets the scopes a caller needs (read by an [`Authorizer`](crate::Authorizer)).
    ///
    /// ```
    /// let def = toolsmith::ToolDefinition::new("t", "d", toolsmith::serde_json::json!({"type": "object"}))
    ///     .with_scopes(["tickets:write"]);
    /// assert_eq!(def.scopes(), ["tickets:write"]);
    /// ```
    #[must_use]
    pub fn with_scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the execution settings (timeout, attempts, concurrency, sequential, fallback).
    ///
    /// ```
    /// use toolsmith::{ToolDefinition, ToolPolicy};
    /// let def = ToolDefinition::new("t", "d", toolsmith::serde_json::json!({"type": "object"}))
    ///     .with_policy(ToolPolicy { sequential: true, ..ToolPolicy::default() });
    /// assert!(def.policy().sequential);
    /// ```
    #[must_use]
    pub fn with_policy(mut self, policy: ToolPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The execution settings declared with the tool.
    #[must_use]
    pub fn policy(&self) -> &ToolPolicy {
        &self.policy
    }

    /// The scopes a caller needs, from `#[tool(scopes(..))]`.
    #[must_use]
    pub fn scopes(&self) -> &[String] {
        &self.scopes
    }

    /// The class of data the tool handles, from `#[tool(data_classification = "...")]`.
    #[must_use]
    pub fn data_classification(&self) -> Option<&str> {
        self.data_classification.as_deref()
    }

    /// The tool's version, from `#[tool(version = "...")]`.
    #[must_use]
    pub fn version(&self) -> Option<&str> {
        self.version.as_deref()
    }

    /// The parameters marked `#[arg(sensitive)]`, redacted in audit records.
    #[must_use]
    pub fn sensitive_params(&self) -> &[&'static str] {
        &self.sensitive
    }

    /// The declared effect, if any.
    #[must_use]
    pub fn effect(&self) -> Option<Effect> {
        self.effect
    }

    /// Whether the tool runs in place (`#[tool(inline)]`): synchronously on the caller's
    /// thread, through [`Tool::call_inline`], without a future, a timer or the blocking pool.
    ///
    /// ```
    /// use toolsmith::{tool, Tool};
    ///
    /// /// Multiply a number by two. Pure; no side effects. Not for floats.
    /// #[tool(effect = "read", inline)]
    /// fn multiply_by_two(
    ///     /// The number.
    ///     #[arg(range(min = 0, max = 1000))]
    ///     n: u32,
    /// ) -> u32 {
    ///     n * 2
    /// }
    ///
    /// assert!(MultiplyByTwo.definition().is_inline());
    /// ```
    #[must_use]
    pub fn is_inline(&self) -> bool {
        self.inline
    }

    /// Whether each call needs a person's approval.
    #[must_use]
    pub fn requires_approval(&self) -> bool {
        self.requires_approval
    }

    /// The level of `lint` for this tool, or for its parameter `param`.
    #[must_use]
    pub fn lint_level(&self, lint: &str, param: Option<&str>) -> LintLevel {
        let from =
            |levels: &[(&str, LintLevel)]| levels.iter().find(|(l, _)| *l == lint).map(|(_, v)| *v);
        param
            .and_then(|p| self.param_lint_levels.iter().find(|(name, _)| *name == p))
            .and_then(|(_, levels)| from(levels))
            .or_else(|| from(self.lint_levels))
            .or_else(|| crate::lint::rules::find(lint).map(|l| l.default))
            .unwrap_or(LintLevel::Warn)
    }

    /// The human-readable title, if any.
    #[must_use]
    pub fn title(&self) -> Option<&str> {
        self.title.as_deref()
    }

    /// The behaviour hints.
    #[must_use]
    pub fn annotations(&self) -> &Annotations {
        &self.annotations
    }

    /// The JSON Schema of the result data, when the tool's return type implements
    /// `JsonSchema` (of `T` for `Result<T, E>`).
    #[must_use]
    pub fn output_schema(&self) -> Option<&Value> {
        self.output_schema.as_deref()
    }

    /// The tool as `dialect` takes it in a request, built on first use and cached.
    ///
    /// # Errors
    ///
    /// [`ExportError`] when the dialect cannot express the tool, naming where and why.
    ///
    /// ```
    /// use toolsmith::serde_json::json;
    /// use toolsmith::{Dialect, ToolDefinition};
    ///
    /// let def = ToolDefinition::new("get_time", "Get the time.", json!({
    ///     "type": "object",
    ///     "properties": {"zone": {"type": ["string", "null"], "minLength": 1}},
    ///     "additionalProperties": false
    /// }));
    /// let tool = def.export(Dialect::OpenAiChat { strict: true }).unwrap();
    /// assert_eq!(tool["function"]["parameters"]["required"], json!(["zone"]));
    /// assert_eq!(tool["function"]["parameters"]["properties"]["zone"]["description"], "(at least 1 characters)");
    /// ```
    pub fn export(&self, dialect: Dialect) -> Result<&Value, ExportError> {
        self.exports[dialect.index()]
            .get_or_init(|| crate::provider::export(self, dialect))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// [`export`](Self::export) as JSON text, serialized once and cached.
    ///
    /// ```
    /// use toolsmith::serde_json::json;
    /// use toolsmith::{Dialect, ToolDefinition};
    ///
    /// let def = ToolDefinition::new(
    ///     "get_time",
    ///     "Get the current time in a time zone. Read-only. Not for dates in the past.",
    ///     json!({"type": "object", "properties": {"zone": {"type": "string"}},
    ///            "required": ["zone"], "additionalProperties": false}),
    /// );
    /// let text = def.export_text(Dialect::Mcp).unwrap();
    /// assert_eq!(toolsmith::serde_json::from_str::<toolsmith::serde_json::Value>(text).unwrap(), *def.export(Dialect::Mcp).unwrap());
    /// ```
    ///
    /// # Errors
    ///
    /// [`ExportError`] when the dialect cannot express the tool.
    pub fn export_text(&self, dialect: Dialect) -> Result<&str, ExportError> {
        self.export_texts[dialect.index()]
            .get_or_init(|| {
                self.export(dialect)
                    .map(|value| serde_json::to_string(value).unwrap_or_default())
            })
            .as_deref()
            .map_err(Clone::clone)
    }

    /// Validates a model's arguments against the input schema with the full validator and
    /// returns them as a value, or an `invalid_arguments` error listing every violation.
    ///
    /// The text is read under the tool's [`InputLimits`](crate::InputLimits), a key repeated
    /// in one object is refused, and numbers are read exactly: an integer written `5.0` is the
    /// integer 5, and a number no integer parameter can take exactly is refused rather than
    /// rounded.
    ///
    /// # Errors
    ///
    /// `invalid_arguments`, or `internal_error` if the schema itself does not compile.
    pub fn validate(&self, arguments: Arguments<'_>) -> Result<Value, crate::ToolError> {
        crate::validate::validate_full(self, &arguments, crate::validate::limits_for(self, None))
    }

    /// The tool's name, e.g. `"search_web"`.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The tool's description for the model (from the function's doc comment).
    #[must_use]
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The canonical input schema: JSON Schema 2020-12, `type: object`.
    #[must_use]
    pub fn input_schema(&self) -> &Value {
        &self.input_schema
    }

    /// The same schema, shared.
    #[must_use]
    pub fn input_schema_arc(&self) -> Arc<Value> {
        Arc::clone(&self.input_schema)
    }

    /// Whether every call runs the full schema validator, because the schema has constraints
    /// serde does not enforce by itself (see `docs/validation.md`).
    #[doc(hidden)]
    #[must_use]
    pub fn validates_fully(&self) -> bool {
        self.full_validation
    }

    /// Problems found while building the definition (e.g. a `pattern` that does not compile).
    /// A [`Toolbox`](crate::Toolbox) refuses to register a tool that has one.
    #[must_use]
    pub fn problem(&self) -> Option<&str> {
        self.compiled
            .problem
            .as_deref()
            .or_else(|| self.validator().err())
    }

    /// The full JSON Schema validator of the input schema, compiled on first use.
    pub(crate) fn validator(&self) -> Result<&jsonschema::Validator, &str> {
        self.validator
            .get_or_init(|| schema::compile(&self.input_schema))
            .as_ref()
            .map_err(String::as_str)
    }

    /// The direct reporter of invalid arguments, if the input schema is flat enough for one;
    /// read from the schema on first use.
    pub(crate) fn report(&self) -> Option<&crate::report::Report> {
        self.report
            .get_or_init(|| crate::report::Report::build(&self.input_schema))
            .as_ref()
    }
}

impl fmt::Debug for ToolDefinition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolDefinition")
            .field("name", &self.name)
            .field("description", &self.description)
            .field("input_schema", &self.input_schema)
            .finish_non_exhaustive()
    }
}

/// Serializes as `{"name", "description", "input_schema"}`: the canonical, provider-neutral form.
impl Serialize for ToolDefinition {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("ToolDefinition", 3)?;
        s.serialize_field("name", &self.name)?;
        s.serialize_field("description", &self.description)?;
        s.serialize_field("input_schema", &*self.input_schema)?;
        s.end()
    }
}

//! A tool's definition: what the model is shown and what its arguments are checked against.

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, OnceLock};

use serde::Serialize;
use serde_json::Value;
use toolsmith_lint_rules::Level as LintLevel;

use crate::arguments::Arguments;
use crate::dialect::ExportError;
use crate::error::ToolError;
use crate::limits::InputLimits;
use crate::schema;
use crate::spec::{Annotations, Effect, ToolExample, ToolPolicy, ToolSpec};
use crate::validate::Validation;

/// A tool's definition: its name, description and canonical input schema (JSON Schema 2020-12).
///
/// Built once per tool and cached; exporting or calling never rebuilds it.
#[derive(Clone)]
pub struct ToolDefinition {
    description: String,
    title: Option<String>,
    annotations: Annotations,
    effect: Option<Effect>,
    requires_approval: bool,
    long_running: bool,
    /// Whether the tool's effects are the calls it makes through a toolbox's door, each of
    /// them keyed and gated on its own (the sandbox's `run_code`): the tool as a whole is
    /// not keyed, since a repeat of it is answered call by call.
    composite: bool,
    /// For an MCP server's tool (a proxy): the transport it is reached over (`pipe`, `tcp`),
    /// so its span is the MCP client's `tools/call` span.
    remote: Option<&'static str>,
    lint_levels: &'static [(&'static str, LintLevel)],
    param_lint_levels: Vec<(&'static str, &'static [(&'static str, LintLevel)])>,
    policy: ToolPolicy,
    scopes: Vec<String>,
    data_classification: Option<String>,
    version: Option<String>,
    examples: Vec<ToolExample>,
    sensitive: Vec<Cow<'static, str>>,
    output_schema: Option<Arc<Value>>,
    /// Whether the output schema was derived from the Rust type the tool returns, so the
    /// output matches it by construction (`#[tool]`), or written by hand (checked per call).
    typed_output: bool,
    /// Whether the input schema is the one `#[tool]` generated from the argument types:
    /// it compiles by construction (its patterns are checked when it is built), so its full
    /// validator is built on first use, not at registration.
    typed_input: bool,
    /// Whether the texts a model reads (descriptions, titles) were fixed when the tool
    /// compiled (`#[tool]`'s doc comments), rather than built at run time: the
    /// `volatile_description` lint is for the latter.
    fixed_text: bool,
    /// Each dialect's export (by `Dialect::index`), built on first use by the provider module.
    pub(crate) exports: [OnceLock<Result<Value, ExportError>>; 8],
    /// The same, serialized.
    pub(crate) export_texts: [OnceLock<Result<String, ExportError>>; 8],
    inline: bool,
    /// Whether a provider may stream the arguments unbuffered (Anthropic's
    /// `eager_input_streaming`).
    stream_args: bool,
    /// Whether a call that ends without a result shows the model its last partial result.
    show_partial: bool,
    validation: Validation,
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
            description: if spec.description_from_docs {
                schema::normalize_doc(spec.description)
            } else {
                spec.description.to_owned()
            },
            title: spec.title.map(str::to_owned),
            annotations: spec.annotations.with_effect(spec.effect),
            effect: spec.effect,
            requires_approval: spec.requires_approval,
            long_running: spec.long_running,
            composite: false,
            remote: None,
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
                idempotency_scope: None,
                output_safety: None,
                redact_paths: None,
                large_results: None,
                rate_limit: None,
                upstream: None,
                max_invalid: None,
            },
            scopes: spec.scopes.iter().map(|s| (*s).to_owned()).collect(),
            data_classification: spec.data_classification.map(str::to_owned),
            version: spec.version.map(str::to_owned),
            // Checked as JSON objects when the tool compiled.
            examples: spec
                .examples
                .iter()
                .filter_map(|text| serde_json::from_str(text).ok().map(ToolExample::valid))
                .chain(spec.invalid_examples.iter().filter_map(|(text, pointer)| {
                    serde_json::from_str(text)
                        .ok()
                        .map(|arguments| ToolExample::invalid(arguments, *pointer))
                }))
                .collect(),
            sensitive: spec
                .params
                .iter()
                .filter(|p| p.sensitive)
                .map(|p| Cow::Borrowed(p.name))
                .collect(),
            output_schema: (spec.output_schema)()
                .and_then(schema::output_schema)
                .map(Arc::new),
            typed_output: true,
            typed_input: true,
            fixed_text: true,
            exports: Default::default(),
            export_texts: Default::default(),
            inline: spec.inline,
            stream_args: spec.stream_args,
            show_partial: spec.show_partial,
            validation: Validation::new(
                Cow::Borrowed(spec.name),
                built.schema,
                built.compiled,
                built.full_validation,
                spec.input_limits,
            ),
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
            description: description.into(),
            title: None,
            annotations: Annotations::default(),
            effect: None,
            requires_approval: false,
            long_running: false,
            composite: false,
            remote: None,
            lint_levels: &[],
            param_lint_levels: Vec::new(),
            policy: ToolPolicy::default(),
            scopes: Vec::new(),
            data_classification: None,
            version: None,
            examples: Vec::new(),
            sensitive: Vec::new(),
            output_schema: None,
            typed_output: false,
            typed_input: false,
            fixed_text: false,
            exports: Default::default(),
            export_texts: Default::default(),
            inline: false,
            stream_args: false,
            show_partial: false,
            validation: Validation::new(
                name.into(),
                input_schema,
                schema::Compiled::default(),
                true,
                None,
            ),
        }
    }

    /// This definition as a model is shown it under another name and, if given, another
    /// description (a toolset's rename, prefix or re-description): the schema, annotations,
    /// effect, examples and output schema are the tool's own. Calls are still read, checked
    /// and recorded by the tool's own definition.
    pub(crate) fn view(&self, name: String, description: Option<&str>) -> Self {
        Self {
            description: description.map_or_else(|| self.description.clone(), str::to_owned),
            title: self.title.clone(),
            annotations: self.annotations,
            effect: self.effect,
            requires_approval: self.requires_approval,
            long_running: self.long_running,
            composite: self.composite,
            remote: self.remote,
            lint_levels: self.lint_levels,
            param_lint_levels: self.param_lint_levels.clone(),
            policy: self.policy.clone(),
            scopes: self.scopes.clone(),
            data_classification: self.data_classification.clone(),
            version: self.version.clone(),
            examples: self.examples.clone(),
            sensitive: self.sensitive.clone(),
            output_schema: self.output_schema.clone(),
            typed_output: self.typed_output,
            typed_input: self.typed_input,
            fixed_text: self.fixed_text && description.is_none(),
            exports: Default::default(),
            export_texts: Default::default(),
            inline: self.inline,
            stream_args: self.stream_args,
            show_partial: self.show_partial,
            validation: self.validation.renamed(name),
        }
    }

    /// A definition derived from this one with another input schema (a [`Transform`]): the
    /// effect, annotations, approval, scopes, policy and output schema are the original's;
    /// every call is checked against `schema` by the full validator; the original's examples,
    /// written for its own schema, are left out.
    ///
    /// [`Transform`]: crate::toolset::Transform
    pub(crate) fn derived(
        &self,
        name: String,
        description: Option<&str>,
        schema: Value,
        sensitive: Vec<Cow<'static, str>>,
    ) -> Self {
        let mut derived = self.view(name, description);
        derived.validation = Validation::new(
            Cow::Owned(derived.validation.name().to_owned()),
            schema,
            schema::Compiled::default(),
            true,
            self.validation.input_limits().copied(),
        );
        derived.examples = Vec::new();
        derived.sensitive = sensitive;
        derived.inline = false;
        derived.typed_input = false;
        derived
    }

    /// Asks providers to stream this tool's arguments unbuffered (`#[tool(stream_args)]`):
    /// Anthropic's `eager_input_streaming`, which sends them as the model writes them, without
    /// checking they are valid JSON first. toolsmith checks them as they arrive
    /// ([`ProviderToolbox::call_stream`](crate::ProviderToolbox::call_stream)).
    ///
    /// ```
    /// use toolsmith::serde_json::json;
    /// use toolsmith::{Dialect, ToolDefinition};
    /// let def = ToolDefinition::new("write_note", "Writes a note. Writes data.", json!({"type": "object"}))
    ///     .with_stream_args(true);
    /// assert_eq!(def.export(Dialect::Anthropic { strict: false }).unwrap()["eager_input_streaming"], true);
    /// ```
    #[must_use]
    pub fn with_stream_args(mut self, stream: bool) -> Self {
        self.stream_args = stream;
        self
    }

    /// Whether providers are asked to stream this tool's arguments unbuffered.
    #[must_use]
    pub fn streams_args(&self) -> bool {
        self.stream_args
    }

    /// Shows the model the last partial result of a call that ends without a result
    /// (`#[tool(show_partial)]`): what the tool handed over with
    /// [`ToolContext::partial`](crate::ToolContext::partial) before it failed, timed out or
    /// was cancelled, as the error's `partial_result`, after the output checks' redaction
    /// (secrets and paths redacted, steering text escaped). Off by default: partial results
    /// are the application's, never the model's. A successful call's result supersedes them.
    ///
    /// ```
    /// use toolsmith::serde_json::json;
    /// use toolsmith::ToolDefinition;
    /// let def = ToolDefinition::new("crawl", "Crawls a site. Read-only.", json!({"type": "object"}))
    ///     .with_show_partial(true);
    /// assert!(def.shows_partial());
    /// ```
    #[must_use]
    pub fn with_show_partial(mut self, show: bool) -> Self {
        self.show_partial = show;
        self
    }

    /// Whether a call that ends without a result shows the model its last partial result.
    #[must_use]
    pub fn shows_partial(&self) -> bool {
        self.show_partial
    }

    /// Sets the limits on this tool's arguments (size, depth, values, keys, items), for a tool
    /// that takes more (or less) than the defaults; see [`InputLimits`](crate::InputLimits).
    ///
    /// ```
    /// use toolsmith::ToolDefinition;
    /// use toolsmith::InputLimits;
    /// let def = ToolDefinition::new("t", "d", toolsmith::serde_json::json!({"type": "object"}))
    ///     .with_input_limits(InputLimits::default().with_max_bytes(16));
    /// let err = def.validate(r#"{"text": "longer than sixteen bytes"}"#.into()).unwrap_err();
    /// assert!(err.message().contains("max_bytes"));
    /// ```
    #[must_use]
    pub fn with_input_limits(mut self, limits: InputLimits) -> Self {
        self.validation.set_input_limits(limits);
        self
    }

    /// The limits set for this tool's arguments, if it sets its own.
    #[must_use]
    pub fn input_limits(&self) -> Option<&InputLimits> {
        self.validation.input_limits()
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

    /// Adds an example call: its arguments, and for a call the tool must refuse, where the
    /// error is ([`ToolExample::invalid`]). [`Toolbox::lint`](crate::Toolbox::lint) checks
    /// each against the schema; Anthropic and MCP exports carry the valid ones.
    ///
    /// ```
    /// use toolsmith::serde_json::json;
    /// use toolsmith::{ToolDefinition, ToolExample};
    /// let def = ToolDefinition::new("t", "d", json!({"type": "object",
    ///         "properties": {"zone": {"type": "string"}}, "additionalProperties": false}))
    ///     .with_example(ToolExample::valid(json!({"zone": "UTC"})));
    /// assert_eq!(def.examples().len(), 1);
    /// ```
    #[must_use]
    pub fn with_example(mut self, example: ToolExample) -> Self {
        self.examples.push(example);
        self
    }

    /// The tool's example calls, valid ones first.
    pub fn examples(&self) -> &[ToolExample] {
        &self.examples
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

    /// Sets the scopes a caller needs (read by an [`Authorizer`](crate::policy::Authorizer)).
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
    /// use toolsmith::ToolDefinition;
    /// use toolsmith::policy::ToolPolicy;
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
    pub fn sensitive_params(&self) -> &[Cow<'static, str>] {
        &self.sensitive
    }

    /// The declared effect, if any.
    #[must_use]
    pub fn effect(&self) -> Option<Effect> {
        self.effect
    }

    /// Whether the tool runs in place (`#[tool(inline)]`): synchronously on the caller's
    /// thread, through [`Tool::call_inline`](crate::Tool::call_inline), without a future, a timer or the blocking pool.
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

    /// Whether calls run as tasks (`#[tool(long_running)]`): in the agent loop the turn waits
    /// on the task, and the run goes on with its result when it is done; over MCP the tool is
    /// a task tool.
    #[must_use]
    pub fn long_running(&self) -> bool {
        self.long_running
    }

    /// Declares calls of this tool long-running ([`long_running`](Self::long_running)).
    ///
    /// ```
    /// let def = toolsmith::ToolDefinition::new("build_index", "Builds the search index. Writes data.", toolsmith::serde_json::json!({"type": "object"}))
    ///     .with_long_running(true);
    /// assert!(def.long_running());
    /// ```
    #[must_use]
    pub fn with_long_running(mut self, long_running: bool) -> Self {
        self.long_running = long_running;
        self
    }

    /// Marks the tool's effects as the calls it makes through a toolbox's door, each keyed
    /// on its own ([`composite`](Self::is_composite)).
    #[cfg_attr(not(feature = "sandbox"), allow(dead_code))]
    pub(crate) fn with_composite(mut self) -> Self {
        self.composite = true;
        self
    }

    /// Whether the tool's effects are the calls it makes through a toolbox's door.
    pub(crate) fn is_composite(&self) -> bool {
        self.composite
    }

    /// Marks the definition as an MCP server's tool, reached over `transport` (`pipe` or
    /// `tcp`): its calls are MCP client `tools/call` spans.
    #[cfg_attr(
        not(feature = "mcp-client"),
        expect(dead_code, reason = "made by MCP toolsets")
    )]
    pub(crate) fn with_remote(mut self, transport: &'static str) -> Self {
        self.remote = Some(transport);
        self
    }

    /// The transport an MCP server's tool is reached over, for a proxy.
    pub(crate) fn remote(&self) -> Option<&'static str> {
        self.remote
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
            .or_else(|| toolsmith_lint_rules::find(lint).map(|l| l.default))
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

    /// Whether the texts a model reads were fixed when the tool compiled.
    pub(crate) fn fixed_text(&self) -> bool {
        self.fixed_text
    }

    /// Whether the output schema comes from the Rust type the tool returns (`#[tool]`), so
    /// every output matches it by construction and is not checked per call. A schema set
    /// with [`with_output_schema`](Self::with_output_schema) is checked against every output.
    ///
    /// ```
    /// use toolsmith::ToolDefinition;
    /// use toolsmith::serde_json::json;
    /// let def = ToolDefinition::new("t", "d", json!({"type": "object"}))
    ///     .with_output_schema(json!({"type": "object"}));
    /// assert!(!def.output_is_typed());
    /// ```
    #[must_use]
    pub fn output_is_typed(&self) -> bool {
        self.typed_output
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
    pub fn validate(&self, arguments: Arguments<'_>) -> Result<Value, ToolError> {
        let limits = crate::validate::limits_for(&self.validation, None);
        crate::validate::validate_full(&self.validation, &arguments, limits)
    }

    /// `arguments` for a call in `ctx`, validated: taken as they are when the toolbox already
    /// read them against this definition (the attempt's context says so), read here
    /// otherwise. For a tool that forwards its arguments (a transform, a remote proxy).
    pub(crate) fn validate_in(
        &self,
        arguments: Arguments<'_>,
        ctx: &crate::context::ToolContext,
    ) -> Result<Value, ToolError> {
        match arguments {
            Arguments::Value(value) if ctx.read_against(crate::context::ReadMark::of(self)) => {
                Ok(value.into_owned())
            }
            arguments => self.validate(arguments),
        }
    }

    /// `arguments` as a strict export promised they are read: a `null` for an optional
    /// parameter left out; `None` when there is none to leave out. Only a hand-written
    /// definition needs it: a `#[tool]` parameter's schema already takes `null`.
    pub(crate) fn strict_arguments(
        &self,
        arguments: &Arguments<'_>,
        ctx: &crate::context::ToolContext,
    ) -> Option<Value> {
        if !self.validation.full_validation {
            return None;
        }
        let limits = crate::validate::limits_for(&self.validation, Some(ctx));
        crate::validate::nulls_left_out(&self.validation, arguments, limits)
    }

    /// The tool's name, e.g. `"search_web"`.
    #[must_use]
    pub fn name(&self) -> &str {
        self.validation.name()
    }

    /// The tool's description for the model (from the function's doc comment).
    #[must_use]
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The canonical input schema: JSON Schema 2020-12, `type: object`.
    #[must_use]
    pub fn input_schema(&self) -> &Value {
        self.validation.input_schema()
    }

    /// The same schema, shared.
    #[must_use]
    pub fn input_schema_arc(&self) -> Arc<Value> {
        Arc::clone(self.validation.input_schema_arc())
    }

    /// Whether every call runs the full schema validator, because the schema has constraints
    /// serde does not enforce by itself (see `docs/validation.md`).
    #[doc(hidden)]
    #[must_use]
    pub fn validates_fully(&self) -> bool {
        self.validation.full_validation
    }

    /// Problems found while building the definition (e.g. a `pattern` that does not compile,
    /// or a hand-written schema the JSON Schema validator cannot compile). A
    /// [`Toolbox`](crate::Toolbox) refuses to register a tool that has one.
    ///
    /// A `#[tool]` definition's schema is generated from its argument types and its patterns
    /// are checked as it is built, so its full validator is not compiled here: it is built on
    /// the first call that needs it (one that fails, or whose constraints serde does not
    /// check). That keeps registration from loading the validator's code and tables in a
    /// process that may never use them (about 4 MiB of an idle server's memory).
    #[must_use]
    pub fn problem(&self) -> Option<&str> {
        if self.typed_input {
            self.validation.compiled.problem.as_deref()
        } else {
            self.validation.problem()
        }
    }

    /// The canonical form of `arguments` for this tool: validated (every violation
    /// explained), `null` for an optional parameter read as the parameter left out, defaults
    /// applied, integral numbers written as integers. It is what a
    /// [`Toolbox`](crate::Toolbox) hands the tool, records in the audit, shows an approver,
    /// and hashes ([`arguments_hash`](crate::policy::arguments_hash)) for approvals and
    /// idempotency keys: two documents the tool reads as the same value have one canonical
    /// form.
    ///
    /// ```
    /// use toolsmith::serde_json::json;
    /// use toolsmith::{tool, Tool};
    ///
    /// /// Books a seat on a flight. Writes a booking. Not for changing one.
    /// #[tool(effect = "write")]
    /// fn book_flight(
    ///     /// The flight.
    ///     flight_id: String,
    ///     /// The cabin, if the passenger has a wish.
    ///     cabin: Option<String>,
    ///     /// How many seats.
    ///     #[arg(default = 1)]
    ///     seats: u32,
    /// ) -> String {
    ///     format!("{flight_id} x{seats} {cabin:?}")
    /// }
    ///
    /// let def = BookFlight.definition();
    /// let strict = def.canonical_arguments(&json!({"flight_id": "F1", "cabin": null, "seats": null})).unwrap();
    /// let plain = def.canonical_arguments(r#"{"seats": 1.0, "flight_id": "F1"}"#).unwrap();
    /// assert_eq!(strict, plain);
    /// assert_eq!(plain, json!({"flight_id": "F1", "seats": 1}));
    /// assert!(def.canonical_arguments(r#"{"seats": 2}"#).is_err());
    /// ```
    ///
    /// # Errors
    ///
    /// `invalid_arguments`, as a call with these arguments would get.
    pub fn canonical_arguments<'a>(
        &self,
        arguments: impl Into<Arguments<'a>>,
    ) -> Result<Value, ToolError> {
        let limits = crate::validate::limits_for(&self.validation, None);
        crate::validate::read_once(&self.validation, &arguments.into(), limits)
            .map(|checked| checked.value)
    }

    /// The arguments of a call in `ctx` read once: canonical, with their hash.
    pub(crate) fn read_arguments(
        &self,
        arguments: &Arguments<'_>,
        ctx: &crate::context::ToolContext,
    ) -> Result<crate::validate::canonical::Checked, ToolError> {
        let limits = crate::validate::limits_for(&self.validation, Some(ctx));
        crate::validate::read_once(&self.validation, arguments, limits)
    }

    /// What the arguments are checked with.
    #[doc(hidden)]
    #[must_use]
    pub fn validation(&self) -> &Validation {
        &self.validation
    }
}

impl fmt::Debug for ToolDefinition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolDefinition")
            .field("name", self.validation.name_cow())
            .field("description", &self.description)
            .field("input_schema", self.validation.input_schema())
            .finish_non_exhaustive()
    }
}

/// Serializes as `{"name", "description", "input_schema"}`: the canonical, provider-neutral form.
impl Serialize for ToolDefinition {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("ToolDefinition", 3)?;
        s.serialize_field("name", self.name())?;
        s.serialize_field("description", &self.description)?;
        s.serialize_field("input_schema", self.input_schema())?;
        s.end()
    }
}

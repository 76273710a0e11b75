//! A set of tools, looked up by name and called with a model's arguments.

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, OnceLock};

use crate::arguments::Arguments;
use crate::context::ToolContext;
use crate::definition::ToolDefinition;
use crate::error::ToolError;
use crate::outcome::{CallStatus, ToolOutcome};
use crate::policy::audit::AuditSink;
use crate::policy::{
    Approver, Authorizer, Call, Defaults, Done, Enablement, Flow, Plans, Ran, Settings, ToolPolicy,
};
use crate::provider::{Dialect, ExportError, ToolCall};

mod approval;
mod door;
mod index;
pub(crate) mod join;
mod provider;

use crate::tool::Tool;
use crate::toolset::{OfferedDef, Prepare, RegistrationError, Toolset};
use crate::validate::canonical::Checked;
use index::ToolIndex;
use serde_json::Value;

/// A [`Toolbox`] seen through one provider's [`Dialect`]: made by [`Toolbox::provider`].
///
/// ```
/// use toolsmith::serde_json::json;
/// use toolsmith::{tool, Dialect, ToolContext, Toolbox};
///
/// /// Search tickets by text. Read-only. Not for closed tickets.
/// #[tool(name = "tickets.search", effect = "read")]
/// fn search(
///     /// Words to look for.
///     #[arg(length(min = 1, max = 100))]
///     text: String,
/// ) -> Vec<String> {
///     vec![format!("T-1: {text}")]
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let toolbox = Toolbox::new().with(Search);
/// let openai = toolbox.provider(Dialect::OpenAiChat { strict: true });
/// let tools = openai.export().unwrap();
/// assert_eq!(tools[0]["function"]["name"], "tickets_search");
///
/// // The model's response in, the next messages out.
/// let completion = json!({"choices": [{"message": {"role": "assistant", "tool_calls": [
///     {"id": "call_1", "type": "function", "function": {"name": "tickets_search", "arguments": "{\"text\":\"vpn\"}"}},
///     {"id": "call_2", "type": "function", "function": {"name": "tickets_find", "arguments": "{}"}}
/// ]}}]});
/// let turn = openai.respond_to(&completion, &ToolContext::new()).await.unwrap();
/// assert_eq!(turn.messages.len(), 2);
/// assert_eq!(turn.messages[0]["tool_call_id"], "call_1");
/// // An unknown name is answered with the names this provider knows.
/// let err = turn.outcomes[1].error().unwrap();
/// assert!(err.message().contains("the available tools are `tickets_search`"), "{}", err.message());
/// # });
/// ```
#[derive(Clone, Copy)]
pub struct ProviderToolbox<'a> {
    toolbox: &'a Toolbox,
    dialect: Dialect,
    /// What the request the calls answer offered, when they answer one.
    offer: Option<&'a crate::provider::Offer>,
    /// The calls a program the provider ran made, answered into the program.
    programs: Option<&'a [crate::provider::ProgramCall]>,
}

/// How a caller spells a tool's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Spelling {
    /// The name the tool was registered under (`tickets.search`): what
    /// [`Toolbox::call`](crate::Toolbox::call) takes.
    Registered,
    /// The name a provider was sent (`tickets_search` for OpenAI; MCP's for
    /// [`Dialect::Mcp`]).
    Provider(Dialect),
}

/// A call the door let in: the tool, the definition it was offered under, and the way to run
/// it. Got from [`Toolbox::admit`]. In a toolbox with a bound on calls at once
/// ([`Defaults::max_in_flight`]) it holds one of the places until it is dropped.
pub struct Admitted<'a> {
    toolbox: &'a Toolbox,
    /// The tool's place in the registry.
    index: usize,
    /// Its place among the calls admitted at once, when the toolbox bounds them.
    slot: Option<tokio::sync::OwnedSemaphorePermit>,
}

/// The toolbox as the person who decides approvals sees it ([`Toolbox::approvals`]): the
/// calls waiting, and decisions on calls by the name each tool was registered under. For a
/// call parsed from a provider's response, decide on the provider view instead
/// ([`ProviderToolbox::approve`]), which binds the exact call the model will repeat.
#[derive(Clone, Copy)]
pub struct ApprovalDesk<'a> {
    toolbox: &'a Toolbox,
}

/// One turn of the agent loop: the calls a provider's response asked for, their outcomes, and
/// the messages to send back, in the provider's shape (see [`ProviderToolbox::respond_to`]).
#[derive(Debug)]
pub struct Turn {
    /// The calls, in the response's order.
    pub calls: Vec<ToolCall>,
    /// Each call's outcome, in the same order.
    pub outcomes: Vec<ToolOutcome>,
    /// What to append to the conversation: one `tool` message per call (OpenAI Chat),
    /// one `function_call_output` item per call (OpenAI Responses), one `user` message holding
    /// every `tool_result` (Anthropic), one `user` content holding every `functionResponse`
    /// part (Gemini), one `CallToolResult` per call (MCP). Empty when there were no calls.
    pub messages: Vec<Value>,
}

impl Turn {
    /// Whether the response asked for no tool: the model has answered, and the loop ends.
    #[must_use]
    pub fn is_final(&self) -> bool {
        self.calls.is_empty()
    }

    /// The tool block's request for the next turn: this turn's calls counted against a
    /// forced choice, which goes back to the model's own as its [`Reset`] says, so that a
    /// forced choice cannot make the model call tools forever; and the tools the toolbox's
    /// tool search found added to its `revealed` tools, sent in full from then on.
    ///
    /// [`Reset`]: crate::provider::Reset
    ///
    /// ```
    /// use toolsmith::provider::{ToolChoice, ToolRequest};
    /// use toolsmith::{ToolCall, Turn};
    /// let forced = ToolRequest { choice: ToolChoice::Required, ..ToolRequest::default() };
    /// let call = ToolCall { id: None, name: "add".into(), arguments: toolsmith::serde_json::json!({}) };
    /// let turn = Turn { calls: vec![call], outcomes: Vec::new(), messages: Vec::new() };
    /// assert_eq!(turn.next_request(&forced).choice, ToolChoice::Auto);
    /// ```
    #[must_use]
    pub fn next_request(
        &self,
        request: &crate::provider::ToolRequest,
    ) -> crate::provider::ToolRequest {
        // What the toolbox's tool search found joins the request, after what came before.
        let found = self
            .calls
            .iter()
            .zip(&self.outcomes)
            .filter(|(call, outcome)| {
                call.name == crate::provider::LOCAL_SEARCH_TOOL && outcome.is_success()
            })
            .filter_map(|(_, outcome)| outcome.data())
            .filter_map(|data| serde_json::from_str::<Value>(data.get()).ok())
            .flat_map(|data| crate::provider::found_names(&data))
            .collect::<Vec<_>>();
        request.after_calls(self.calls.len()).with_revealed(found)
    }
}

/// The tools an agent offers a model.
///
/// Lookup is a hash map access, so its cost does not grow with the number of tools. `call`
/// never panics and never returns a Rust error for a model's mistake: every failure is an
/// error envelope.
///
/// ```
/// use toolsmith::{tool, Toolbox, ToolContext};
///
/// /// Adds two integers. Pure, no side effects. Not for floating-point numbers.
/// #[tool(effect = "read")]
/// fn add(
///     /// The first addend.
///     a: i64,
///     /// The second addend.
///     b: i64,
/// ) -> i64 {
///     a + b
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let toolbox = Toolbox::new().with(Add);
/// let out = toolbox.call("add", r#"{"a": 2, "b": 3}"#, &ToolContext::default()).await;
/// assert_eq!(out.to_json(), r#"{"status":"success","data":5}"#);
/// let out = toolbox.call("sub", "{}", &ToolContext::default()).await;
/// assert_eq!(out.error().unwrap().code().as_str(), "unknown_tool");
/// # });
/// ```
#[derive(Clone, Default)]
pub struct Toolbox {
    registry: ToolIndex,
    settings: Settings,
    /// Each tool's plan, composed from the settings on the first call after the toolbox was
    /// last configured; shared by clones, which share the circuits and run budgets it holds.
    plans: Arc<OnceLock<Plans>>,
}

impl Toolbox {
    /// An empty toolbox.
    ///
    /// ```
    /// assert!(toolsmith::Toolbox::new().is_empty());
    /// ```
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool, builder style.
    ///
    /// # Panics
    ///
    /// When [`register`](Self::register) fails. For a tool `#[tool]` accepted, that is only
    /// a mistake in assembling the toolbox: two tools with one name, or two names that are
    /// the same in a provider's spelling (`a.b` and `a_b`). What the macro can check on one
    /// definition (the name, the patterns, the parameter types) is a compile error instead.
    /// A hand-written [`ToolDefinition`](crate::ToolDefinition) can also be refused for its
    /// name or schema. Use `register` to handle these as a [`RegistrationError`].
    #[must_use]
    pub fn with(mut self, tool: impl Tool) -> Self {
        if let Err(err) = self.register(tool) {
            panic!("{err}");
        }
        self
    }

    /// Adds a tool.
    ///
    /// # Errors
    ///
    /// [`RegistrationError`] for a duplicate or invalid name or a broken definition.
    ///
    /// ```
    /// use toolsmith::{tool, Toolbox, RegistrationError};
    ///
    /// /// Says hello. Read-only. Not for real conversations.
    /// #[tool(effect = "read")]
    /// fn say_hello() -> &'static str { "hello" }
    ///
    /// let mut toolbox = Toolbox::new();
    /// toolbox.register(SayHello).unwrap();
    /// let err = toolbox.register(SayHello).unwrap_err();
    /// assert!(matches!(err, RegistrationError::Duplicate { .. }));
    /// ```
    pub fn register(&mut self, tool: impl Tool) -> Result<&mut Self, RegistrationError> {
        self.register_arc(Arc::new(tool))
    }

    /// Adds a tool that is already shared.
    ///
    /// # Errors
    ///
    /// As [`register`](Self::register).
    pub fn register_arc(&mut self, tool: Arc<dyn Tool>) -> Result<&mut Self, RegistrationError> {
        self.registry.insert(tool)?;
        self.plans = Arc::default();
        Ok(self)
    }

    /// Adds every tool of a toolset, builder style, each shown to models as the set's views
    /// say (see [`toolset`](crate::toolset)).
    ///
    /// # Panics
    ///
    /// When [`register_toolset`](Self::register_toolset) fails: a name clash (the message
    /// names both sets), an invalid name or a broken definition.
    ///
    /// ```
    /// use toolsmith::toolset::Toolset;
    /// use toolsmith::{tool, Toolbox};
    ///
    /// /// Says hello. Read-only. Not for real conversations.
    /// #[tool(effect = "read")]
    /// fn say_hello() -> &'static str { "hello" }
    ///
    /// let toolbox = Toolbox::new().with_toolset(Toolset::new("greetings").with(SayHello).prefixed("greetings"));
    /// assert_eq!(toolbox.names().collect::<Vec<_>>(), ["greetings_say_hello"]);
    /// assert!(toolbox.get("say_hello").is_some());
    /// ```
    #[must_use]
    pub fn with_toolset(mut self, toolset: Toolset) -> Self {
        if let Err(err) = self.register_toolset(toolset) {
            panic!("{err}");
        }
        self
    }

    /// Adds every tool of a toolset; on an error, none of them.
    ///
    /// # Errors
    ///
    /// [`RegistrationError::Clash`] naming both sets when a name is taken (by a tool of
    /// another set, or by one added on its own), and what [`register`](Self::register)
    /// refuses.
    pub fn register_toolset(&mut self, toolset: Toolset) -> Result<&mut Self, RegistrationError> {
        let mut registry = self.registry.clone();
        for entry in toolset.into_entries() {
            let view = entry.view();
            registry.insert_as(entry.tool, view, entry.origin)?;
        }
        self.registry = registry;
        self.plans = Arc::default();
        Ok(self)
    }

    /// Sets the step that hides or re-describes tools for each request and call (see
    /// [`Prepare`]); it replaces the one set before.
    #[must_use]
    pub fn with_prepare(mut self, prepare: impl Prepare) -> Self {
        self.registry.prepare = Some(Arc::new(prepare));
        self.configured()
    }

    /// The tool named `name`.
    ///
    /// ```
    /// use toolsmith::{tool, Toolbox};
    ///
    /// /// Says hello. Read-only. Not for real conversations.
    /// #[tool(effect = "read")]
    /// fn say_hello() -> &'static str { "hello" }
    ///
    /// let toolbox = Toolbox::new().with(SayHello);
    /// assert_eq!(toolbox.get("say_hello").unwrap().definition().description(), "Says hello. Read-only. Not for real conversations.");
    /// assert!(toolbox.get("bye").is_none());
    /// ```
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.registry.get(name)
    }

    /// The definitions of all tools as models are shown them (a toolset's rename or
    /// re-description applied), in registration order.
    ///
    /// ```
    /// use toolsmith::{tool, Toolbox};
    ///
    /// /// Says hello. Read-only. Not for real conversations.
    /// #[tool(effect = "read")]
    /// fn say_hello() -> &'static str { "hello" }
    ///
    /// let toolbox = Toolbox::new().with(SayHello);
    /// let json = toolsmith::serde_json::to_value(toolbox.definitions().collect::<Vec<_>>()).unwrap();
    /// assert_eq!(json[0]["input_schema"]["type"], "object");
    /// ```
    pub fn definitions(&self) -> impl ExactSizeIterator<Item = &ToolDefinition> + '_ {
        (0..self.registry.in_order.len()).map(|i| self.registry.shown(i))
    }

    /// The end of every call's route: a failed call's error in the words the model reads
    /// (the toolbox's error text; a stop to a tool whose model keeps sending arguments it
    /// refuses), then its final touch ([`finish_error`]).
    fn finished(&self, mut ran: Ran, name: &str, ctx: &ToolContext) -> Ran {
        if let Ran::Outcome(ToolOutcome::Error(err)) = &mut ran {
            self.model_text(err, name, ctx);
            finish_error(err, name, ctx);
        }
        ran
    }

    /// The text a model reads for a failed call of `name`.
    fn model_text(&self, err: &mut ToolError, name: &str, ctx: &ToolContext) {
        if err.code() == crate::error::ErrorCode::InvalidArguments
            && let Some(run) = ctx.run_id()
            && let Some(tool) = self.get(name)
            && let Some(max) = self
                .policy_of(tool.definition())
                .max_invalid
                .or(self.settings.defaults.max_invalid)
        {
            let refused = self.plans().invalid.count(run, name);
            if refused >= max {
                // Failed, not to be tried again: the run goes on without it.
                err.set_message(format!(
                    "`{name}` has refused its arguments {refused} times in this run. Stop calling it: go on without it, and tell the user what you could not do."
                ));
                *err = std::mem::replace(err, ToolError::internal("")).human_review(true);
                return;
            }
        }
        if let Some(text) = &self.settings.defaults.error_text
            && let Some(message) = text.write(&crate::policy::ErrorView {
                tool: name,
                error: err,
                ctx,
            })
        {
            err.set_message(crate::output::redact(&message));
        }
    }

    /// The key of the toolbox's state: it signs cursors and seals runs
    /// ([`State::with_key`](crate::state::State::with_key), or one made up per toolbox).
    pub(crate) fn state_key(&self) -> &[u8; 32] {
        &self.settings.key
    }

    /// Whether the toolbox's state key was given ([`State::with_key`](crate::state::State::with_key)),
    /// not made up for this toolbox.
    #[cfg_attr(not(feature = "restate"), allow(dead_code))]
    pub(crate) fn has_state_key(&self) -> bool {
        self.settings.state.key.is_some()
    }

    /// Whether calls that need approval can wait for a person's decision.
    pub(crate) fn has_approver(&self) -> bool {
        self.settings.approver.is_some()
    }

    /// The tools' own definitions, whatever a toolset shows (the registry keeps these).
    pub(crate) fn own_definitions(&self) -> impl Iterator<Item = &ToolDefinition> + '_ {
        self.registry.in_order.iter().map(|tool| tool.definition())
    }

    /// The names of all tools as models are shown them, in registration order.
    ///
    /// ```
    /// use toolsmith::{tool, Toolbox};
    ///
    /// /// Says hello. Read-only. Not for real conversations.
    /// #[tool(effect = "read")]
    /// fn say_hello() -> &'static str { "hello" }
    ///
    /// assert_eq!(Toolbox::new().with(SayHello).names().collect::<Vec<_>>(), ["say_hello"]);
    /// ```
    pub fn names(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.definitions().map(ToolDefinition::name)
    }

    /// Each tool as models are shown it, with the name it was registered under (the one
    /// [`Spelling::Registered`] takes), in registration order.
    #[cfg_attr(not(feature = "sandbox"), allow(dead_code))]
    pub(crate) fn shown_and_registered(
        &self,
    ) -> impl Iterator<Item = (&ToolDefinition, &str)> + '_ {
        (0..self.registry.in_order.len()).map(|i| {
            (
                self.registry.shown(i),
                self.registry.in_order[i].definition().name(),
            )
        })
    }

    /// How many tools there are.
    ///
    /// ```
    /// use toolsmith::{tool, Toolbox};
    ///
    /// /// Says hello. Read-only. Not for real conversations.
    /// #[tool(effect = "read")]
    /// fn say_hello() -> &'static str { "hello" }
    ///
    /// assert_eq!(Toolbox::new().with(SayHello).len(), 1);
    /// ```
    #[must_use]
    pub fn len(&self) -> usize {
        self.registry.in_order.len()
    }

    /// Whether there are none.
    ///
    /// ```
    /// assert!(toolsmith::Toolbox::default().is_empty());
    /// ```
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.registry.in_order.is_empty()
    }

    /// Calls the tool registered as `name` with a model's `arguments` (JSON text, a JSON
    /// string holding it, or a parsed value). For calls parsed from a provider's response,
    /// whose names are that provider's spelling, see [`provider`](Self::provider).
    ///
    /// An unknown name is an `unknown_tool` error listing the available tools; invalid
    /// arguments an `invalid_arguments` error with every violation; a panic in the tool an
    /// `internal_error` with the trace id. Errors get `ctx`'s trace id, and operator-only
    /// details are logged with `tracing` and removed.
    ///
    /// ```
    /// use toolsmith::{tool, ToolContext, Toolbox};
    ///
    /// /// Multiplies a number by two. Pure, no side effects. Not for floats.
    /// #[tool(effect = "read")]
    /// async fn multiply_by_two(
    ///     /// The number.
    ///     #[arg(range(min = 0, max = 1000))]
    ///     n: u32,
    /// ) -> u32 {
    ///     n * 2
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let toolbox = Toolbox::new().with(MultiplyByTwo);
    /// let ctx = ToolContext::new().with_trace_id("tr_1");
    /// // OpenAI sends the arguments as a JSON string; objects and parsed values work too.
    /// let out = toolbox.call("multiply_by_two", r#""{\"n\": 21}""#, &ctx).await;
    /// assert_eq!(out.into_result::<u32>().unwrap(), 42);
    /// let out = toolbox.call("multiply_by_two", toolsmith::serde_json::json!({"n": 5000}), &ctx).await;
    /// let err = out.error().unwrap();
    /// assert_eq!(err.fields()[0].to_string(), "/n: 5000 is greater than the maximum of 1000");
    /// assert_eq!(err.trace_id(), Some("tr_1"));
    /// # });
    /// ```
    pub async fn call<'a>(
        &'a self,
        name: &str,
        arguments: impl Into<Arguments<'a>>,
        ctx: &'a ToolContext,
    ) -> ToolOutcome {
        let slots = CallSlots::default();
        let done = match self.enter_registered(name, arguments.into(), ctx, None, &slots) {
            Flow::Now(done) => done,
            Flow::Later(future) => future.await,
        };
        outcome_of(self.finished(done.ran, name, ctx))
    }

    /// Runs a call like [`call`](Self::call) and appends its envelope to `out`: the fastest
    /// path. An inline tool (`#[tool(inline)]`) serializes its data straight into `out`
    /// after the envelope's start; other outcomes are written as [`ToolOutcome::to_json`]
    /// writes them. Reuse one buffer across calls to save its allocation.
    ///
    /// ```
    /// use toolsmith::{tool, ToolContext, Toolbox};
    ///
    /// /// Adds two integers. Pure, no side effects. Not for floating-point numbers.
    /// #[tool(effect = "read", inline)]
    /// fn add(
    ///     /// The first addend.
    ///     a: i64,
    ///     /// The second addend.
    ///     b: i64,
    /// ) -> i64 {
    ///     a.saturating_add(b)
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let toolbox = Toolbox::new().with(Add);
    /// let ctx = ToolContext::new();
    /// let mut out = Vec::new();
    /// let status = toolbox.call_into("add", r#"{"a": 2, "b": 3}"#, &ctx, &mut out).await;
    /// assert!(status.is_success());
    /// assert_eq!(out, br#"{"status":"success","data":5}"#);
    ///
    /// out.clear();
    /// let status = toolbox.call_into("add", r#"{"a": 2}"#, &ctx, &mut out).await;
    /// assert_eq!(status.error_code().unwrap().as_str(), "invalid_arguments");
    /// assert!(out.starts_with(br#"{"status":"error""#));
    /// # });
    /// ```
    pub async fn call_into<'a>(
        &'a self,
        name: &str,
        arguments: impl Into<Arguments<'a>>,
        ctx: &'a ToolContext,
        out: &mut Vec<u8>,
    ) -> CallStatus {
        let start = out.len();
        crate::outcome::open_success(out);
        let slots = CallSlots::default();
        let done = match self.enter_registered(name, arguments.into(), ctx, Some(&mut *out), &slots)
        {
            Flow::Now(done) => done,
            Flow::Later(future) => future.await,
        };
        written(self.finished(done.ran, name, ctx), out, start)
    }

    /// Runs independent calls by their *registered* names (as [`call`](Self::call) does)
    /// concurrently and returns their outcomes in input order. The toolbox's concurrency
    /// limit, each tool's own limit and sequential tools are honoured; each call's context
    /// gets the call's id. Calls parsed from a provider's response carry that provider's
    /// names: run them with [`provider`](Self::provider)`(dialect).run_all(..)`.
    ///
    /// ```
    /// use toolsmith::serde_json::json;
    /// use toolsmith::{tool, ToolCall, ToolContext, Toolbox};
    ///
    /// /// Adds two integers. Pure, no side effects. Not for floating-point numbers.
    /// #[tool(effect = "read")]
    /// async fn add(
    ///     /// The first addend.
    ///     a: i64,
    ///     /// The second addend.
    ///     b: i64,
    /// ) -> i64 {
    ///     a + b
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let toolbox = Toolbox::new().with(Add);
    /// let calls = [
    ///     ToolCall { id: Some("1".into()), name: "add".into(), arguments: json!({"a": 1, "b": 2}) },
    ///     ToolCall { id: Some("2".into()), name: "add".into(), arguments: json!({"a": 3, "b": 4}) },
    /// ];
    /// let outcomes = toolbox.call_all(&calls, &ToolContext::new()).await;
    /// assert_eq!(outcomes[1].to_json(), r#"{"status":"success","data":7}"#);
    /// # });
    /// ```
    pub async fn call_all(&self, calls: &[ToolCall], ctx: &ToolContext) -> Vec<ToolOutcome> {
        let contexts: Vec<ToolContext> = calls
            .iter()
            .map(|call| match &call.id {
                Some(id) => ctx.clone().with_call_id(id.as_str()),
                None => ctx.clone(),
            })
            .collect();
        let futures = calls
            .iter()
            .zip(&contexts)
            .map(|(call, ctx)| self.call(&call.name, call.arguments(), ctx))
            .collect();
        join::JoinAll::new(futures).await
    }

    /// The definitions offered in `ctx`, as models are shown them: tools disabled there (see
    /// [`with_enabled_when`](Self::with_enabled_when)), hidden by the prepare step
    /// ([`with_prepare`](Self::with_prepare)) or needing a scope the context's grant lacks
    /// ([`ToolContext::with_grant`]) are left out. A prepare step's
    /// re-descriptions are in what [`export_for`](Self::export_for) and
    /// [`ProviderToolbox::request_for`] send.
    pub async fn definitions_for(&self, ctx: &ToolContext) -> Vec<&ToolDefinition> {
        let mut out = Vec::with_capacity(self.registry.in_order.len());
        let prepared = self
            .registry
            .prepare
            .as_ref()
            .map(|_| self.registry.prepared(ctx));
        for (i, tool) in self.registry.in_order.iter().enumerate() {
            let own = tool.definition().name();
            let enabled = match self.registry.enablement.get(own) {
                Some(enabled) => enabled.enabled(ctx).await,
                None => true,
            };
            let granted = ctx
                .grant()
                .is_none_or(|grant| grant.allows(tool.definition().scopes()));
            if enabled && granted && !prepared.as_ref().is_some_and(|p| p.hides(i)) {
                out.push(self.registry.shown(i));
            }
        }
        out
    }

    /// What is offered in `ctx`, re-described where the prepare step says so.
    pub(crate) async fn offered_for(&self, ctx: &ToolContext) -> Vec<OfferedDef<'_>> {
        let enabled = self.definitions_for(ctx).await;
        match &self.registry.prepare {
            None => enabled.into_iter().map(OfferedDef::Shown).collect(),
            Some(_) => {
                let prepared = self.registry.prepared(ctx);
                let offered = prepared.into_offered();
                // Tools disabled by their own condition stay out.
                offered
                    .into_iter()
                    .filter(|def| enabled.iter().any(|e| e.name() == def.name()))
                    .collect()
            }
        }
    }

    /// [`export`](Self::export) of the tools offered in `ctx`.
    ///
    /// # Errors
    ///
    /// As `export`.
    pub async fn export_for(
        &self,
        dialect: Dialect,
        ctx: &ToolContext,
    ) -> Result<Value, ExportError> {
        let offered = self.offered_for(ctx).await;
        let defs: Vec<&ToolDefinition> = offered.iter().map(|d| &**d).collect();
        crate::provider::export_all(dialect, &defs)
    }

    /// Every call's one route, for [`call`](Self::call), [`call_into`](Self::call_into) and a
    /// provider's calls, up to its plan: the limits on the arguments, the door
    /// ([`admit`](Self::admit)), then the tool's plan (or the plan that records a refusal).
    /// `found` is the tool the caller looked up in its spelling, with its registered name.
    /// Synchronous where it can be: a known tool under no condition, answering no request,
    /// passes the door by its name alone, and a plan that ends at once answers here, so that
    /// the caller's future holds no result. The route ends in [`finished`](Self::finished).
    #[inline]
    fn enter<'c>(
        &'c self,
        knock: Knock<'c>,
        found: Option<(usize, &'c str)>,
        mut arguments: Arguments<'c>,
        ctx: &'c ToolContext,
        out: Option<&'c mut Vec<u8>>,
        slots: &'c CallSlots,
    ) -> Flow<'c> {
        // The limits first: most calls have nothing to do there, and the tool is looked up
        // only if they do.
        let ctx = match self.prepare(knock, &mut arguments, ctx) {
            Ok(None) => ctx,
            Ok(Some(limited)) => slots.limited.get_or_init(|| Box::new(limited)),
            Err(err) => return Flow::refused(err),
        };
        let call = Call {
            name: found.map_or(knock.name, |(_, own)| own),
            arguments,
            ctx,
            out,
            read: &slots.read,
            refusal: None,
            repairs: Vec::new(),
        };
        let index = found.map(|(i, _)| i);
        let plans = self.plans();
        match index.and_then(|i| plans.tools.get(i)) {
            Some(plan) if knock.offer.is_none() && self.opens_by_name(call.name, ctx) => {
                plan.run(call)
            }
            // Rare, and its future is large.
            _ => Flow::later(self.through_door(knock, plans, call)),
        }
    }

    /// [`enter`](Self::enter) for a call by the registered name from the application's own
    /// code (`call`, `call_into`), which answers no request: the same route, its common case
    /// with nothing to dispatch on.
    #[inline]
    fn enter_registered<'c>(
        &'c self,
        name: &'c str,
        mut arguments: Arguments<'c>,
        ctx: &'c ToolContext,
        out: Option<&'c mut Vec<u8>>,
        slots: &'c CallSlots,
    ) -> Flow<'c> {
        let knock = Knock::registered(name);
        let ctx = match self.prepare(knock, &mut arguments, ctx) {
            Ok(None) => ctx,
            Ok(Some(limited)) => slots.limited.get_or_init(|| Box::new(limited)),
            Err(err) => return Flow::refused(err),
        };
        let index = self.registry.by_name.get(name).copied();
        let call = Call {
            name,
            arguments,
            ctx,
            out,
            read: &slots.read,
            refusal: None,
            repairs: Vec::new(),
        };
        let plans = self.plans();
        match index.and_then(|i| plans.tools.get(i)) {
            Some(plan) if self.opens_by_name(name, ctx) => plan.run(call),
            _ => Flow::later(self.through_door(knock, plans, call)),
        }
    }

    /// Whether the door admits a call of the tool registered as `name` by its name alone,
    /// asking nothing of the call: no condition of the tool's, no prepare step, no bound on
    /// calls at once, no grant to hold against the tool's scopes.
    #[inline]
    fn opens_by_name(&self, name: &str, ctx: &ToolContext) -> bool {
        self.settings.in_flight.is_none()
            && ctx.grant().is_none()
            && !self.registry.has_predicate(name)
    }

    /// A call the door must ask about: a tool under a condition, a call answering a request,
    /// a toolbox with a bound on calls at once, or no tool. Admitted, it runs its tool's plan; turned away, the plan that records it.
    async fn through_door<'c>(
        &'c self,
        knock: Knock<'c>,
        plans: &'c Plans,
        mut call: Call<'c>,
    ) -> Done {
        match self
            .admit(knock.name, knock.spelling, call.ctx, knock.offer)
            .await
        {
            // Held until the plan ends: its place among the calls at once.
            Ok(admitted) => match plans.tools.get(admitted.index()) {
                Some(plan) => {
                    let done = plan.run(call).await;
                    drop(admitted);
                    done
                }
                None => Done::refused(ToolError::internal("a tool without a plan")),
            },
            Err(err) => {
                call.refusal = Some(err);
                plans.refused.run(call).await
            }
        }
    }

    /// Runs the tool at `index`, admitted at the door already ([`door::Admitted::call`]).
    pub(crate) async fn call_admitted<'c>(
        &'c self,
        index: usize,
        mut arguments: Arguments<'c>,
        ctx: &'c ToolContext,
    ) -> ToolOutcome {
        let def = self.registry.in_order[index].definition();
        let slots = CallSlots::default();
        let done = match self.prepare(index, &mut arguments, ctx) {
            Err(err) => Done::refused(err),
            Ok(limited) => {
                let ctx = match limited {
                    None => ctx,
                    Some(limited) => slots.limited.get_or_init(|| Box::new(limited)),
                };
                let call = Call {
                    name: def.name(),
                    arguments,
                    ctx,
                    out: None,
                    read: &slots.read,
                    refusal: None,
                    repairs: Vec::new(),
                };
                match self.plans().tools.get(index).map(|plan| plan.run(call)) {
                    // A plan that ends at once (an inline tool's) needs no future.
                    Some(Flow::Now(done)) => done,
                    Some(Flow::Later(future)) => future.await,
                    None => Done::refused(ToolError::internal("a tool without a plan")),
                }
            }
        };
        outcome_of(self.finished(done.ran, def.name(), ctx))
    }

    /// The plans, composed on first use after the toolbox was last configured.
    #[inline]
    fn plans(&self) -> &Plans {
        self.plans.get_or_init(|| {
            self.settings
                .plans(&self.registry.in_order, &|name| self.get(name).cloned())
        })
    }

    /// Where a program's finished calls are kept while its run lasts (the idempotency store),
    /// and for how long (the idempotency keys' time to live).
    #[cfg_attr(not(feature = "sandbox"), allow(dead_code))]
    pub(crate) fn program_journal(
        &self,
    ) -> (
        &Arc<dyn crate::state::IdempotencyStore>,
        std::time::Duration,
    ) {
        (
            &self.settings.state.idempotency,
            self.settings.defaults.idempotency.ttl,
        )
    }

    /// Where an MCP server serving this toolbox, and the agent loop's long-running calls,
    /// keep their tasks.
    pub(crate) fn task_store(&self) -> &Arc<dyn crate::state::TaskStore> {
        &self.settings.state.tasks
    }

    /// The limits on arguments for tools that set none of their own, if set.
    #[cfg(feature = "mcp")]
    pub(crate) fn input_limits(&self) -> Option<&crate::limits::InputLimits> {
        self.settings.defaults.input_limits.as_ref()
    }

    /// Whether calls admitted at once are bounded ([`Defaults::max_in_flight`]).
    #[cfg(feature = "mcp")]
    pub(crate) fn bounds_in_flight(&self) -> bool {
        self.settings.in_flight.is_some()
    }

    /// This toolbox with at most `calls` calls admitted at once, in a bound of its own.
    #[cfg(feature = "mcp")]
    #[must_use]
    pub(crate) fn bounded_in_flight(mut self, calls: usize) -> Self {
        self.settings.bound_in_flight(calls);
        self
    }

    /// Drops the plans, to be composed again from the new settings.
    #[must_use]
    fn configured(mut self) -> Self {
        self.plans = Arc::default();
        self
    }

    /// Sets the execution settings every tool gets unless it says otherwise: timeouts,
    /// retries, the run budget, circuits, calls at once, idempotency, input limits, large
    /// results, cursor expiry and upstream rate limits, as one [`Defaults`] value. A tool's
    /// own `#[tool(...)]` keys and [`with_tool_policy`](Self::with_tool_policy) come on top.
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolsmith::policy::{Defaults, RetryPolicy};
    ///
    /// let toolbox = toolsmith::Toolbox::new().with_defaults(Defaults {
    ///     timeout: Duration::from_secs(5),
    ///     retry: RetryPolicy { max_attempts: 2, ..RetryPolicy::default() },
    ///     ..Defaults::default()
    /// });
    /// # let _ = toolbox;
    /// ```
    #[must_use]
    pub fn with_defaults(mut self, defaults: Defaults) -> Self {
        self.settings.set_defaults(defaults);
        self.configured()
    }

    /// Keeps the toolbox's state in `state`: its idempotency keys, large results, rate
    /// limits, and for a fleet run budgets and circuits, and the key that signs cursors and
    /// stored results' ids. By default everything is in this process's memory with a random
    /// key ([`State::memory`](crate::state::State::memory)); the replicas of a fleet share one
    /// store and one key ([`State::shared`](crate::state::State::shared)).
    ///
    /// ```
    /// use toolsmith::state::{MemoryIdempotencyStore, State};
    /// let state = State::memory()
    ///     .with_idempotency(MemoryIdempotencyStore::new(10_000))
    ///     .with_key("a secret of at least 32 random bytes, shared by the fleet");
    /// let toolbox = toolsmith::Toolbox::new().with_state(state);
    /// # let _ = toolbox;
    /// ```
    #[must_use]
    pub fn with_state(mut self, state: crate::state::State) -> Self {
        self.settings.set_state(state);
        self.configured()
    }

    /// Sets who may call what (see [`Authorizer`]).
    #[must_use]
    pub fn with_authorizer(mut self, authorizer: impl Authorizer) -> Self {
        self.settings.authorizer = Some(Arc::new(authorizer));
        self.configured()
    }

    /// Sets who approves the calls that need approval (see [`Approver`]).
    #[must_use]
    pub fn with_approver(mut self, approver: impl Approver) -> Self {
        self.settings.set_approver(Arc::new(approver));
        self.configured()
    }

    /// The data of a stored result (a [`ToolOutcome::Stored`]'s `uri`), while it is kept.
    ///
    /// # Errors
    ///
    /// When the result store cannot be read.
    ///
    /// ```
    /// use toolsmith::{tool, ToolContext, ToolOutcome, Toolbox};
    ///
    /// /// Lists every order. Read-only. Not for one order.
    /// #[tool(effect = "read")]
    /// fn list_orders() -> Vec<u32> {
    ///     (0..5_000).collect()
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let toolbox = Toolbox::new().with(ListOrders);
    /// let out = toolbox.call("list_orders", "{}", &ToolContext::new()).await;
    /// let ToolOutcome::Stored(_, stored) = &out else { panic!("{out}") };
    /// assert!(stored.summary.starts_with("a JSON array of 5000 items"));
    /// let data = toolbox.stored_result(&stored.uri).await.unwrap().unwrap();
    /// assert!(data.starts_with("[0,1,2,"));
    /// // The caller still has all of it; the model's envelope has the reference.
    /// assert_eq!(out.into_result::<Vec<u32>>().unwrap().len(), 5_000);
    /// # });
    /// ```
    pub async fn stored_result(
        &self,
        uri: &str,
    ) -> Result<Option<String>, crate::state::StoreError> {
        self.stored_result_as(uri, None).await
    }

    /// The data of a stored result, read for the principal of `ctx`: a result of a call made
    /// with a principal is kept for that principal only, and for anyone else it is `None`, as
    /// a result that is not kept (nothing says it exists). [`stored_result`] reads as no
    /// principal: only results of calls made without one.
    ///
    /// [`stored_result`]: Self::stored_result
    ///
    /// # Errors
    ///
    /// When the result store cannot be read.
    ///
    /// ```
    /// use toolsmith::{tool, ToolContext, ToolOutcome, Toolbox};
    ///
    /// /// Lists every order. Read-only. Not for one order.
    /// #[tool(effect = "read")]
    /// fn list_orders() -> Vec<u32> {
    ///     (0..5_000).collect()
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let toolbox = Toolbox::new().with(ListOrders);
    /// let alice = ToolContext::new().with_principal("alice");
    /// let out = toolbox.call("list_orders", "{}", &alice).await;
    /// let ToolOutcome::Stored(_, stored) = &out else { panic!("{out}") };
    /// assert!(toolbox.stored_result_for(&stored.uri, &alice).await.unwrap().is_some());
    /// let bob = ToolContext::new().with_principal("bob");
    /// assert!(toolbox.stored_result_for(&stored.uri, &bob).await.unwrap().is_none());
    /// assert!(toolbox.stored_result(&stored.uri).await.unwrap().is_none());
    /// # });
    /// ```
    pub async fn stored_result_for(
        &self,
        uri: &str,
        ctx: &ToolContext,
    ) -> Result<Option<String>, crate::state::StoreError> {
        self.stored_result_as(uri, ctx.principal()).await
    }

    async fn stored_result_as(
        &self,
        uri: &str,
        principal: Option<&str>,
    ) -> Result<Option<String>, crate::state::StoreError> {
        match uri.strip_prefix(crate::output::RESULT_URI_PREFIX) {
            Some(id)
                if !id.is_empty() && crate::output::may_read(&self.settings.key, id, principal) =>
            {
                self.settings.state.results.get(id).await
            }
            _ => Ok(None),
        }
    }

    /// One audit record for a call or result the provider ran itself (status `hosted`, no
    /// attempt of the toolbox's), with its input rewritten as model data is.
    pub(crate) fn record_hosted(&self, item: &crate::provider::HostedItem, ctx: &ToolContext) {
        if self.settings.sinks.is_empty() {
            return;
        }
        let mut arguments = item.input.clone().unwrap_or(Value::Null);
        crate::output::sanitize(&mut arguments);
        let record = crate::policy::audit::AuditRecord {
            time_unix_ms: crate::policy::audit::unix_ms(std::time::SystemTime::now()),
            run_id: ctx.run_id().map(str::to_owned),
            call_id: item.id.clone(),
            parent_call_id: None,
            trace_id: ctx.trace_id().to_owned(),
            principal: ctx.principal().map(str::to_owned),
            tool: item
                .name
                .clone()
                .unwrap_or_else(|| item.provider_type.clone()),
            arguments,
            arguments_hash: None,
            repairs: Vec::new(),
            status: match item.kind {
                crate::provider::HostedKind::Call => "hosted",
                crate::provider::HostedKind::Result => "hosted_result",
                crate::provider::HostedKind::ForApplication => "hosted_for_application",
            },
            error_code: None,
            attempts: 0,
            duration_ms: 0,
            output: None,
            artifacts: Vec::new(),
            approval: None,
        };
        for sink in self.settings.sinks.iter() {
            sink.record(&record);
        }
    }

    /// Adds a sink that receives one audit record per call.
    #[must_use]
    pub fn with_audit(mut self, sink: impl AuditSink) -> Self {
        self.settings.sinks.push(Arc::new(sink));
        self.configured()
    }

    /// Offers the tool `name` only where `enabled` says so; elsewhere it is left out of
    /// [`definitions_for`](Self::definitions_for) and refused like an unknown tool.
    #[must_use]
    pub fn with_enabled_when(mut self, name: &str, enabled: impl Enablement) -> Self {
        enabled.watch(self.registry.changes.clone());
        self.registry
            .enablement
            .insert(name.to_owned(), Arc::new(enabled));
        self.registry.changes.notify();
        self
    }

    /// Tells subscribers (see [`subscribe_changes`](Self::subscribe_changes)) that the set of
    /// enabled tools may have changed: call it when an [`Enablement`] predicate's inputs
    /// change. A [`Switch`](crate::policy::Switch) does this itself.
    pub fn tools_changed(&self) {
        self.registry.changes.notify();
    }

    /// A receiver that wakes when the set of enabled tools may have changed (an
    /// [`Enablement`] given to [`with_enabled_when`](Self::with_enabled_when) changed, or
    /// [`tools_changed`](Self::tools_changed) was called). The MCP server uses it to send
    /// `notifications/tools/list_changed`.
    ///
    /// ```
    /// let toolbox = toolsmith::Toolbox::new();
    /// let mut changes = toolbox.subscribe_changes();
    /// assert!(!changes.has_changed().unwrap());
    /// toolbox.tools_changed();
    /// assert!(changes.has_changed().unwrap());
    /// ```
    #[must_use]
    pub fn subscribe_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.registry.changes.subscribe()
    }

    /// The policy the tool `def` runs with: its own, then this toolbox's overrides.
    pub(crate) fn policy_of<'d>(
        &self,
        def: &'d ToolDefinition,
    ) -> std::borrow::Cow<'d, ToolPolicy> {
        self.settings.policy(def)
    }

    /// Overrides the execution settings of the tool `name` (timeout, attempts, concurrency,
    /// sequential, fallback); unset fields keep the tool's own.
    #[must_use]
    pub fn with_tool_policy(mut self, name: &str, policy: ToolPolicy) -> Self {
        self.settings.overrides.insert(name.to_owned(), policy);
        self.configured()
    }

    /// Every tool as `dialect` takes them in a request: an array of tools for OpenAI and
    /// Anthropic, `{"functionDeclarations": [...]}` for Gemini, `{"tools": [...]}` (a
    /// `tools/list` result) for MCP. Per-request limits (Anthropic strict) are checked here.
    ///
    /// # Errors
    ///
    /// [`ExportError`] for the first tool the dialect cannot express, or a broken limit.
    ///
    /// ```
    /// use toolsmith::{tool, Dialect, Toolbox};
    ///
    /// /// Create an event. Writes data. Not for recurring events.
    /// #[tool(name = "calendar.create_event", effect = "write")]
    /// fn create_event(
    ///     /// The title.
    ///     #[arg(length(min = 1, max = 120))]
    ///     title: String,
    /// ) -> String {
    ///     title
    /// }
    ///
    /// let toolbox = Toolbox::new().with(CreateEvent);
    /// let tools = toolbox.export(Dialect::OpenAiChat { strict: true }).unwrap();
    /// assert_eq!(tools[0]["function"]["name"], "calendar_create_event");
    /// assert_eq!(tools[0]["function"]["parameters"]["properties"]["title"]["description"], "The title. (1 to 120 characters)");
    /// let gemini = toolbox.export(Dialect::Gemini).unwrap();
    /// assert_eq!(gemini["functionDeclarations"][0]["name"], "calendar.create_event");
    /// ```
    pub fn export(&self, dialect: Dialect) -> Result<Value, ExportError> {
        let defs: Vec<&ToolDefinition> = self.definitions().collect();
        crate::provider::export_all(dialect, &defs)
    }

    /// [`export`](Self::export) as JSON text, ready for a request body: joined from each
    /// tool's cached text, so that it costs a copy rather than a clone of every schema.
    ///
    /// ```
    /// use toolsmith::{tool, Dialect, Toolbox};
    ///
    /// /// Says hello. Read-only. Not for real conversations.
    /// #[tool(effect = "read")]
    /// fn say_hello() -> &'static str { "hello" }
    ///
    /// let toolbox = Toolbox::new().with(SayHello);
    /// let dialect = Dialect::Gemini;
    /// let text = toolbox.export_text(dialect).unwrap();
    /// assert_eq!(text, toolsmith::serde_json::to_string(&toolbox.export(dialect).unwrap()).unwrap());
    /// ```
    ///
    /// # Errors
    ///
    /// As [`export`](Self::export).
    pub fn export_text(&self, dialect: Dialect) -> Result<String, ExportError> {
        let defs: Vec<&ToolDefinition> = self.definitions().collect();
        crate::provider::export_all_text(dialect, &defs)
    }

    /// The tool a provider's name refers to (`calendar_create_event` for OpenAI is the tool
    /// registered as `calendar.create_event`).
    ///
    /// ```
    /// use toolsmith::{tool, Dialect, Toolbox};
    ///
    /// /// Create an event. Writes data. Not for recurring events.
    /// #[tool(name = "calendar.create_event", effect = "write")]
    /// fn create_event() {}
    ///
    /// let toolbox = Toolbox::new().with(CreateEvent);
    /// let tool = toolbox.resolve(Dialect::Anthropic { strict: false }, "calendar_create_event").unwrap();
    /// assert_eq!(tool.definition().name(), "calendar.create_event");
    /// ```
    #[must_use]
    pub fn resolve(&self, dialect: Dialect, exported: &str) -> Option<&Arc<dyn Tool>> {
        self.registry.names.exported[dialect.index()]
            .get(exported)
            .and_then(|name| self.get(name))
    }

    /// Lints every tool's resolved definition: what `#[tool]` cannot see in tokens (the shape
    /// of parameter types, `include_str!` docs, what providers cannot express), with the same
    /// lint names, messages and levels (`allow` findings are left out).
    ///
    /// ```
    /// use toolsmith::{tool, Toolbox};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Filter {
    ///     /// Free text: nothing bounds it.
    ///     text: String,
    /// }
    ///
    /// /// Searches notes. Read-only. Not for shared drives.
    /// #[tool(effect = "read")]
    /// fn search_notes(
    ///     /// The filter.
    ///     filter: Filter,
    /// ) -> usize {
    ///     filter.text.len()
    /// }
    ///
    /// let findings = Toolbox::new().with(SearchNotes).lint();
    /// assert_eq!(findings[0].lint, "unbounded_string");
    /// assert_eq!(findings[0].path, "/$defs/Filter/properties/text");
    /// ```
    #[must_use]
    pub fn lint(&self) -> Vec<crate::lint::LintFinding> {
        self.definitions().flat_map(crate::lint::tool).collect()
    }

    /// Panics with every finding of [`lint`](Self::lint) at `warn` or `deny`: one line in a
    /// test keeps a toolbox lint-clean.
    ///
    /// # Panics
    ///
    /// When there is a finding; the message lists them all.
    ///
    /// ```
    /// use toolsmith::{tool, Toolbox};
    ///
    /// /// Adds two integers. Pure, no side effects. Not for floating-point numbers.
    /// #[tool(effect = "read")]
    /// fn add(
    ///     /// The first addend.
    ///     a: i64,
    ///     /// The second addend.
    ///     b: i64,
    /// ) -> i64 {
    ///     a + b
    /// }
    ///
    /// Toolbox::new().with(Add).assert_lint_clean();
    /// ```
    pub fn assert_lint_clean(&self) {
        let findings = self.lint();
        if !findings.is_empty() {
            let listed: Vec<String> = findings.iter().map(ToString::to_string).collect();
            panic!("{} lint findings:\n{}", findings.len(), listed.join("\n"));
        }
    }

    /// What a call needs before it runs: a context that carries the toolbox's limits on
    /// arguments (when the tool at `index` sets none of its own and the toolbox has some; the
    /// tool's read finds them there), and the check of [`refuse_over_limits`](Self::refuse_over_limits).
    #[inline]
    fn prepare<'k>(
        &self,
        tool: impl Into<Found<'k>>,
        arguments: &mut Arguments<'_>,
        ctx: &ToolContext,
    ) -> Result<Option<ToolContext>, ToolError> {
        // Most toolboxes set no limits, and most arguments are text: nothing to do then.
        if self.settings.defaults.input_limits.is_none()
            && !matches!(arguments, Arguments::Value(Cow::Owned(_)))
        {
            return Ok(None);
        }
        let index = match tool.into() {
            Found::Index(index) => Some(index),
            Found::Knock(knock) => self.find(knock.name, knock.spelling),
        };
        let def = index.map(|i| self.registry.in_order[i].definition());
        let limited = self.settings.defaults.input_limits.and_then(|limits| {
            let own = def?.input_limits().is_some();
            (!own && ctx.input_limits() != Some(&limits))
                .then(|| ctx.clone().with_input_limits(limits))
        });
        match self.refuse_over_limits(def, arguments, limited.as_ref().unwrap_or(ctx)) {
            Some(err) => Err(err),
            None => Ok(limited),
        }
    }

    /// Refuses, before anything copies or drops them, owned parsed arguments over the limits
    /// (a host may hand in a value nested deeper than any stack: a copy or a drop would
    /// recurse through it), and takes such a value apart without recursion. Borrowed values
    /// are only ever read, by readers that check the limits first.
    fn refuse_over_limits(
        &self,
        def: Option<&ToolDefinition>,
        arguments: &mut Arguments<'_>,
        ctx: &ToolContext,
    ) -> Option<ToolError> {
        let Arguments::Value(std::borrow::Cow::Owned(value)) = &*arguments else {
            return None;
        };
        let limits = match def {
            Some(def) => crate::validate::limits_for(def.validation(), Some(ctx)),
            None => ctx
                .input_limits()
                .unwrap_or(&crate::limits::InputLimits::DEFAULT),
        };
        let (limit, pointer) = crate::limits::check_value(value, limits).broken?;
        let refused = std::mem::replace(arguments, Arguments::Text(Cow::Borrowed("")));
        if let Arguments::Value(Cow::Owned(value)) = refused {
            crate::limits::dismantle(value);
        }
        Some(match def {
            Some(def) => {
                crate::validate::refused(def.validation(), vec![limit.field(limits, pointer)])
            }
            None => ToolError::invalid_arguments(format!(
                "The arguments are invalid: {}. Fix this and call again.",
                limit.field(limits, pointer)
            )),
        })
    }
}

/// Who knocks at the door: a name in its caller's spelling, and the offer of the request the
/// call answers, if any.
#[derive(Clone, Copy)]
pub(crate) struct Knock<'c> {
    pub(crate) name: &'c str,
    pub(crate) spelling: Spelling,
    pub(crate) offer: Option<&'c crate::provider::Offer>,
}

/// The tool whose limits [`Toolbox::prepare`] reads: already found, or still to find.
enum Found<'c> {
    Index(usize),
    Knock(Knock<'c>),
}

impl From<usize> for Found<'_> {
    fn from(index: usize) -> Self {
        Self::Index(index)
    }
}

impl<'c> From<Knock<'c>> for Found<'c> {
    fn from(knock: Knock<'c>) -> Self {
        Self::Knock(knock)
    }
}

impl<'c> Knock<'c> {
    /// A call by the registered name, from the application's own code.
    fn registered(name: &'c str) -> Self {
        Self {
            name,
            spelling: Spelling::Registered,
            offer: None,
        }
    }
}

/// What a call's route keeps for as long as the call runs: its arguments read once, and its
/// context with the toolbox's limits on arguments, when the toolbox adds them.
#[derive(Default)]
/// Both are boxed: most calls fill neither, and every call's future carries the slots.
struct CallSlots {
    read: OnceLock<Box<Checked>>,
    limited: OnceLock<Box<ToolContext>>,
}

/// The final touch on the error a call of `name` ends with, here and nowhere else: the
/// context's trace id, and operator-only details logged and removed. Every call's route ends
/// here, and so does a provider's call of no tool, which never reaches one.
pub(crate) fn finish_error(err: &mut ToolError, name: &str, ctx: &ToolContext) {
    err.finish(name, ctx.trace_id());
}

/// A call's outcome; only a call given a buffer writes into one.
fn outcome_of(ran: Ran) -> ToolOutcome {
    match ran {
        Ran::Outcome(outcome) => outcome,
        Ran::Written | Ran::Marked(..) => ToolOutcome::Error(ToolError::internal(
            "a call without a buffer reported written data",
        )),
    }
}

/// Ends the envelope in `out` (whose start is at `start`): closes what the tool wrote after
/// the success prefix, or writes the outcome in its place.
#[inline]
fn written(ran: Ran, out: &mut Vec<u8>, start: usize) -> CallStatus {
    match ran {
        Ran::Written => {
            crate::outcome::close_success(out, "");
            CallStatus::Success
        }
        Ran::Marked(_, fields) => {
            crate::outcome::close_success(out, &fields);
            CallStatus::Success
        }
        Ran::Outcome(outcome) => {
            out.truncate(start);
            outcome.write_json(out);
            CallStatus::of(&outcome)
        }
    }
}

impl fmt::Debug for Toolbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

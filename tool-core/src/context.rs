//! What the runtime hands to a tool besides its arguments.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::caller::{
    Caller, CallerError, CallerErrorKind, Elicited, LogLevel, Root, Sampled, Sampling,
};

/// What a verified access token grants its bearer: who it is (the subject, which becomes the
/// call's principal), the scopes it holds, the client it was issued to and its issuer. Made
/// by a token verifier (an MCP server's authorization), given to a call with
/// [`ToolContext::with_grant`].
///
/// ```
/// use toolsmith::Grant;
/// let grant = Grant::new("ada").with_scopes(["tickets:read", "tickets:write"]).with_client_id("desk");
/// assert!(grant.allows(&["tickets:write".to_owned()]));
/// assert_eq!(grant.missing(&["admin".to_owned()]), ["admin"]);
/// assert_eq!(grant.client_id(), Some("desk"));
/// ```
///
/// A grant is shared, not copied: cloning one (into each request and call it reaches) counts
/// a reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant(Arc<Granted>);

/// What a grant holds.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Granted {
    subject: Arc<str>,
    scopes: Vec<String>,
    client_id: Option<String>,
    issuer: Option<String>,
}

impl Grant {
    /// A grant to `subject`, with no scopes.
    #[must_use]
    pub fn new(subject: impl Into<Arc<str>>) -> Self {
        Self(Arc::new(Granted {
            subject: subject.into(),
            scopes: Vec::new(),
            client_id: None,
            issuer: None,
        }))
    }

    /// The scopes it holds (repeats are kept once).
    #[must_use]
    pub fn with_scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        let held = &mut Arc::make_mut(&mut self.0).scopes;
        for scope in scopes {
            let scope = scope.into();
            if !held.contains(&scope) {
                held.push(scope);
            }
        }
        self
    }

    /// The client the token was issued to.
    #[must_use]
    pub fn with_client_id(mut self, client_id: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.0).client_id = Some(client_id.into());
        self
    }

    /// Who issued the token.
    #[must_use]
    pub fn with_issuer(mut self, issuer: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.0).issuer = Some(issuer.into());
        self
    }

    /// Who the token was issued for: the call's principal.
    #[must_use]
    pub fn subject(&self) -> &str {
        &self.0.subject
    }

    /// The scopes it holds.
    #[must_use]
    pub fn scopes(&self) -> &[String] {
        &self.0.scopes
    }

    /// The client the token was issued to, when the token says.
    #[must_use]
    pub fn client_id(&self) -> Option<&str> {
        self.0.client_id.as_deref()
    }

    /// Who issued the token, when known.
    #[must_use]
    pub fn issuer(&self) -> Option<&str> {
        self.0.issuer.as_deref()
    }

    /// Whether it holds `scope`.
    #[must_use]
    pub fn has_scope(&self, scope: &str) -> bool {
        self.0.scopes.iter().any(|held| held == scope)
    }

    /// Whether it holds every one of `needed`.
    #[must_use]
    pub fn allows(&self, needed: &[String]) -> bool {
        needed.iter().all(|scope| self.has_scope(scope))
    }

    /// Those of `needed` it does not hold, in order.
    #[must_use]
    pub fn missing<'a>(&self, needed: &'a [String]) -> Vec<&'a str> {
        needed
            .iter()
            .filter(|scope| !self.has_scope(scope))
            .map(String::as_str)
            .collect()
    }
}

/// The context of one tool call: ids for tracing, who is asking, application state, a
/// cancellation signal and a deadline.
///
/// A tool receives it as `ctx: &ToolContext`, its first parameter; it never appears in the schema.
/// Cloning is cheap (the state is shared).
///
/// ```
/// use std::time::Duration;
/// use toolsmith::ToolContext;
///
/// struct Db { url: &'static str }
///
/// let ctx = ToolContext::new()
///     .with_run_id("run_1")
///     .with_principal("user_42")
///     .with_extension(Db { url: "postgres://localhost/app" })
///     .with_timeout(Duration::from_secs(5));
/// assert_eq!(ctx.principal(), Some("user_42"));
/// assert_eq!(ctx.get::<Db>().unwrap().url, "postgres://localhost/app");
/// assert!(ctx.remaining().unwrap() <= Duration::from_secs(5));
/// assert!(!ctx.is_cancelled());
/// ```
#[derive(Clone)]
pub struct ToolContext {
    inner: Arc<Inner>,
    /// For the context a tool gets in one attempt: that attempt's own cancellation.
    attempt: Option<Arc<Attempt>>,
    /// For the context a paging tool gets: its name and the toolbox's cursor key, which
    /// seal and open its cursors (`toolsmith::output::Cursor`).
    scope: Option<Arc<CursorScope>>,
}

/// What binds a cursor to the tool that gave it out: the tool's name and the key that signs.
pub(crate) struct CursorScope {
    pub(crate) tool: Arc<str>,
    pub(crate) key: Arc<[u8; 32]>,
    /// How long a cursor is good for, when the toolbox limits it.
    pub(crate) ttl: Option<std::time::Duration>,
}

/// The cancellation of one attempt: a child of the context's signal that a timeout fires. It
/// is made when a tool first asks for it, so an attempt whose tool never looks costs no token
/// (making a child token and dropping it takes a lock on the parent each time).
#[derive(Default)]
pub(crate) struct Attempt {
    /// The attempt around this one, when a tool calls tools with its own context.
    outer: Option<Arc<Attempt>>,
    token: OnceLock<CancellationToken>,
    fired: AtomicBool,
    /// The definition the toolbox read this attempt's arguments against, when the tool gets
    /// them exactly as read: a tool that validates its arguments against that definition
    /// itself need not again.
    read: Option<ReadMark>,
    /// For a tool that shows the model its last partial result: the last one handed over.
    kept: Option<std::sync::Mutex<Option<serde_json::Value>>>,
}

impl Attempt {
    /// The last partial result the tool handed over in this attempt, when it is kept.
    pub(crate) fn take_partial(&self) -> Option<serde_json::Value> {
        self.kept.as_ref()?.lock().ok()?.take()
    }
}

/// What a definition is known by in a context: its address, compared and never followed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ReadMark(usize);

impl ReadMark {
    /// The mark of `definition`.
    pub(crate) fn of<T>(definition: &T) -> Self {
        Self(std::ptr::from_ref(definition) as usize)
    }
}

impl Attempt {
    fn token<'s>(&'s self, root: &'s CancellationToken) -> &'s CancellationToken {
        let token = self.token.get_or_init(|| {
            let parent = match &self.outer {
                Some(outer) => outer.token(root),
                None => root,
            };
            parent.child_token()
        });
        // A token made after the attempt was fired is fired too; checked after it exists, so
        // that `fire` (which sets the flag, then looks for the token) cannot miss it.
        if self.fired.load(Ordering::SeqCst) && !token.is_cancelled() {
            token.cancel();
        }
        token
    }

    /// Cancels the attempt: its token if a tool has asked for it, else the one it will get.
    pub(crate) fn fire(&self) {
        self.fired.store(true, Ordering::SeqCst);
        if let Some(token) = self.token.get() {
            token.cancel();
        }
    }
}

#[derive(Clone)]
struct Inner {
    run_id: Option<Arc<str>>,
    call_id: Option<Arc<str>>,
    parent_call_id: Option<Arc<str>>,
    trace_id: Arc<str>,
    principal: Option<Arc<str>>,
    extensions: HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
    cancellation: CancellationToken,
    deadline: Option<Instant>,
    idempotency_key: Option<Arc<str>>,
    input_limits: Option<crate::limits::InputLimits>,
    caller: Option<Arc<dyn Caller>>,
    grant: Option<Grant>,
}

impl Default for ToolContext {
    fn default() -> Self {
        Self::new()
    }
}

impl ToolContext {
    /// A context with a fresh trace id, no deadline and a cancellation signal of its own.
    ///
    /// ```
    /// let ctx = toolsmith::ToolContext::new();
    /// assert!(ctx.trace_id().starts_with("tr_"));
    /// ```
    #[must_use]
    pub fn new() -> Self {
        Self {
            inner: Arc::new(Inner {
                run_id: None,
                call_id: None,
                parent_call_id: None,
                trace_id: new_trace_id().into(),
                principal: None,
                extensions: HashMap::new(),
                cancellation: CancellationToken::new(),
                deadline: None,
                idempotency_key: None,
                input_limits: None,
                caller: None,
                grant: None,
            }),
            attempt: None,
            scope: None,
        }
    }

    /// The context a tool gets for one attempt, and the handle that cancels that attempt
    /// alone (its timeout); the caller's cancellation reaches it too.
    ///
    /// With `keep`, the attempt keeps the last partial result the tool hands over (a tool
    /// that shows it to the model).
    pub(crate) fn for_attempt(&self, read: Option<ReadMark>, keep: bool) -> (Self, Arc<Attempt>) {
        let attempt = Arc::new(Attempt {
            outer: self.attempt.clone(),
            read,
            kept: keep.then(std::sync::Mutex::default),
            ..Attempt::default()
        });
        let ctx = Self {
            inner: Arc::clone(&self.inner),
            attempt: Some(Arc::clone(&attempt)),
            scope: self.scope.clone(),
        };
        (ctx, attempt)
    }

    /// Whether the toolbox read this attempt's arguments against `def`, and the tool gets
    /// them exactly as read (validated, canonical).
    pub(crate) fn read_against(&self, definition: ReadMark) -> bool {
        self.attempt
            .as_ref()
            .is_some_and(|attempt| attempt.read == Some(definition))
    }

    /// This context, for a call of the paging tool `scope` names.
    pub(crate) fn scoped(&self, scope: &Arc<CursorScope>) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            attempt: self.attempt.clone(),
            scope: Some(Arc::clone(scope)),
        }
    }

    /// The tool and key cursors of this call are bound to, when the call is a paging tool's.
    pub(crate) fn cursor_scope(&self) -> Option<&CursorScope> {
        self.scope.as_deref()
    }

    fn edit(mut self, f: impl FnOnce(&mut Inner)) -> Self {
        f(Arc::make_mut(&mut self.inner));
        self
    }

    /// Sets the id of the agent run this call belongs to.
    ///
    /// ```
    /// let ctx = toolsmith::ToolContext::new().with_run_id("run_7");
    /// assert_eq!(ctx.run_id(), Some("run_7"));
    /// ```
    #[must_use]
    pub fn with_run_id(self, id: impl Into<Arc<str>>) -> Self {
        let id = id.into();
        self.edit(|inner| inner.run_id = Some(id))
    }

    /// Sets the id of this call (the provider's tool-call id).
    ///
    /// ```
    /// let ctx = toolsmith::ToolContext::new().with_call_id("call_abc");
    /// assert_eq!(ctx.call_id(), Some("call_abc"));
    /// ```
    #[must_use]
    pub fn with_call_id(self, id: impl Into<Arc<str>>) -> Self {
        let id = id.into();
        self.edit(|inner| inner.call_id = Some(id))
    }

    /// Marks this call as made by another call: a program's call of a tool names the
    /// `run_code` call that ran the program. The audit record keeps it
    /// ([`AuditRecord::parent_call_id`](crate::audit::AuditRecord::parent_call_id)).
    ///
    /// ```
    /// let ctx = toolsmith::ToolContext::new().with_parent_call_id("call_code_1");
    /// assert_eq!(ctx.parent_call_id(), Some("call_code_1"));
    /// ```
    #[must_use]
    pub fn with_parent_call_id(self, id: impl Into<Arc<str>>) -> Self {
        let id = id.into();
        self.edit(|inner| inner.parent_call_id = Some(id))
    }

    /// Sets the trace id (by default a fresh one is made).
    ///
    /// ```
    /// let ctx = toolsmith::ToolContext::new().with_trace_id("tr_123");
    /// assert_eq!(ctx.trace_id(), "tr_123");
    /// ```
    #[must_use]
    pub fn with_trace_id(self, id: impl Into<Arc<str>>) -> Self {
        let id = id.into();
        self.edit(|inner| inner.trace_id = id)
    }

    /// Sets the principal: the user on whose behalf the model acts.
    ///
    /// ```
    /// let ctx = toolsmith::ToolContext::new().with_principal("alice");
    /// assert_eq!(ctx.principal(), Some("alice"));
    /// ```
    #[must_use]
    pub fn with_principal(self, user: impl Into<Arc<str>>) -> Self {
        let user = user.into();
        self.edit(|inner| inner.principal = Some(user))
    }

    /// Sets what a verified access token grants the caller: the principal becomes the
    /// grant's subject, and the toolbox's door refuses a tool whose scopes
    /// ([`ToolDefinition::scopes`](crate::ToolDefinition::scopes)) the grant lacks (and leaves
    /// it out of what the caller is offered). An MCP server with authorization sets it from
    /// each request's token; set it yourself for a token your own code verified.
    ///
    /// ```
    /// use toolsmith::{Grant, ToolContext};
    /// let ctx = ToolContext::new().with_grant(Grant::new("ada").with_scopes(["tickets:read"]));
    /// assert_eq!(ctx.principal(), Some("ada"));
    /// assert!(ctx.grant().unwrap().has_scope("tickets:read"));
    /// ```
    #[must_use]
    pub fn with_grant(self, grant: Grant) -> Self {
        let subject = Arc::clone(&grant.0.subject);
        self.edit(|inner| {
            inner.principal = Some(subject);
            inner.grant = Some(grant);
        })
    }

    /// What a verified access token grants the caller, when the call has one
    /// ([`with_grant`](Self::with_grant)).
    #[must_use]
    pub fn grant(&self) -> Option<&Grant> {
        self.inner.grant.as_ref()
    }

    /// Adds application state, found again by type with [`get`](Self::get). A second value of
    /// the same type replaces the first.
    ///
    /// ```
    /// let ctx = toolsmith::ToolContext::new().with_extension(7_u32);
    /// assert_eq!(ctx.get::<u32>(), Some(&7));
    /// ```
    #[must_use]
    pub fn with_extension<T: Send + Sync + 'static>(self, value: T) -> Self {
        self.with_shared_extension(Arc::new(value))
    }

    /// Sets what the caller offers the tool while it runs: progress, logging, sampling and
    /// elicitation (`toolsmith::caller`). The MCP server sets it from the client.
    #[must_use]
    pub fn with_caller(self, caller: Arc<dyn Caller>) -> Self {
        self.edit(|inner| inner.caller = Some(caller))
    }

    /// Reports progress to the caller: `progress` of `total` (when known). A no-op when the
    /// caller takes no progress (an MCP request without a `progressToken`, or no MCP).
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let ctx = toolsmith::ToolContext::new();
    /// ctx.progress(1.0, Some(3.0), Some("read the first file")).await; // no caller: nothing
    /// # });
    /// ```
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(caller) = &self.inner.caller {
            caller.progress(progress, total, message).await;
        }
    }

    /// Hands the caller a preliminary result (`value` as JSON): what the tool has so far,
    /// for the application to show while the call runs (an agent loop's
    /// [`ToolPartial`](crate::agent::AgentEvent::ToolPartial) event). The model never reads
    /// it: it reads the call's result. A no-op when the caller takes none, or when `value`
    /// is not JSON.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let ctx = toolsmith::ToolContext::new();
    /// ctx.partial(&vec!["first row"]).await; // no caller: nothing
    /// # });
    /// ```
    pub async fn partial<T: serde::Serialize + ?Sized>(&self, value: &T) {
        let kept = self.attempt.as_ref().and_then(|a| a.kept.as_ref());
        if self.inner.caller.is_none() && kept.is_none() {
            return;
        }
        let Ok(value) = serde_json::to_value(value) else {
            return;
        };
        // Kept first: the call may end while the caller is being told.
        if let Some(kept) = kept
            && let Ok(mut last) = kept.lock()
        {
            *last = Some(value.clone());
        }
        if let Some(caller) = &self.inner.caller {
            caller.partial(&value).await;
        }
    }

    /// The caller the context carries, if any ([`with_caller`](Self::with_caller)).
    #[must_use]
    pub fn caller(&self) -> Option<&Arc<dyn Caller>> {
        self.inner.caller.as_ref()
    }

    /// Logs to `tracing` and to the caller, when the caller asked for messages of this level
    /// or above (MCP `logging/setLevel`).
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// use toolsmith::caller::LogLevel;
    /// toolsmith::ToolContext::new().log(LogLevel::Info, "fetched 3 pages").await;
    /// # });
    /// ```
    pub async fn log(&self, level: LogLevel, message: &str) {
        let trace_id = &*self.inner.trace_id;
        match level {
            LogLevel::Debug => tracing::debug!(trace_id, "{message}"),
            LogLevel::Info | LogLevel::Notice => tracing::info!(trace_id, "{message}"),
            LogLevel::Warning => tracing::warn!(trace_id, "{message}"),
            _ => tracing::error!(trace_id, "{message}"),
        }
        if let Some(caller) = &self.inner.caller {
            caller.log(level, message, None).await;
        }
    }

    /// Asks the caller's model for a completion (MCP sampling).
    ///
    /// # Errors
    ///
    /// `NotSupported` when the caller offers no sampling (not an MCP client, or a client
    /// without the capability), at once; `Failed` when the client fails. Both convert into a
    /// `ToolError` with `?`.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// use toolsmith::caller::{CallerErrorKind, Sampling};
    /// let err = toolsmith::ToolContext::new().sample(Sampling::new("Hi")).await.unwrap_err();
    /// assert_eq!(err.kind(), CallerErrorKind::NotSupported);
    /// # });
    /// ```
    pub async fn sample(&self, request: Sampling) -> Result<Sampled, CallerError> {
        self.sample_keyed(None, request).await
    }

    /// As [`sample`](Self::sample), naming the request `key`: where a caller asks for answers
    /// with the call's result and calls the tool again with them (MCP 2026-07-28), the answer
    /// comes back under this key. Keys must be unique within one call.
    ///
    /// # Errors
    ///
    /// As [`sample`](Self::sample), and `InputRequired` when the answer comes with the next
    /// call: pass it on with `?`.
    pub async fn sample_as(&self, key: &str, request: Sampling) -> Result<Sampled, CallerError> {
        self.sample_keyed(Some(key), request).await
    }

    /// The roots the caller exposes (MCP `roots/list`): the directories and files the tool
    /// may work in.
    ///
    /// # Errors
    ///
    /// `NotSupported` when the caller has no roots to give, at once; `Failed` when the client
    /// fails; `InputRequired` when the answer comes with the next call (MCP 2026-07-28, under
    /// the key `key`): pass it on with `?`.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let roots = toolsmith::ToolContext::new().roots("client_roots").await;
    /// assert!(roots.is_err(), "no caller, no roots");
    /// # });
    /// ```
    pub async fn roots(&self, key: &str) -> Result<Vec<Root>, CallerError> {
        match &self.inner.caller {
            Some(caller) => caller.roots(Some(key)).await,
            None => Err(CallerError::not_supported("roots")),
        }
    }

    async fn sample_keyed(
        &self,
        key: Option<&str>,
        request: Sampling,
    ) -> Result<Sampled, CallerError> {
        match &self.inner.caller {
            Some(caller) => caller.sample(key, request).await,
            None => Err(CallerError::not_supported("sampling")),
        }
    }

    /// Asks the caller's user for input in the form of `T` (MCP elicitation): the form's
    /// schema is `T`'s JSON Schema, and an accepted answer is checked against it and read as
    /// a `T` before the tool sees it.
    ///
    /// # Errors
    ///
    /// `NotSupported` when the caller cannot ask its user, at once; `Failed` when the client
    /// fails; `InvalidAnswer` when the answer does not read as a `T`.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Confirm { confirmed: bool }
    /// let answer = toolsmith::ToolContext::new().elicit::<Confirm>("Delete it?").await;
    /// let Err(err) = answer else { panic!("no caller, no answer") };
    /// assert_eq!(err.to_string(), "elicitation is not supported by this caller");
    /// # });
    /// ```
    pub async fn elicit<T>(&self, message: &str) -> Result<Elicited<T>, CallerError>
    where
        T: serde::de::DeserializeOwned + schemars::JsonSchema,
    {
        self.elicit_keyed(None, message).await
    }

    /// As [`elicit`](Self::elicit), naming the request `key` (see
    /// [`sample_as`](Self::sample_as)).
    ///
    /// # Errors
    ///
    /// As [`elicit`](Self::elicit), and `InputRequired` when the answer comes with the next
    /// call: pass it on with `?`.
    pub async fn elicit_as<T>(&self, key: &str, message: &str) -> Result<Elicited<T>, CallerError>
    where
        T: serde::de::DeserializeOwned + schemars::JsonSchema,
    {
        self.elicit_keyed(Some(key), message).await
    }

    async fn elicit_keyed<T>(
        &self,
        key: Option<&str>,
        message: &str,
    ) -> Result<Elicited<T>, CallerError>
    where
        T: serde::de::DeserializeOwned + schemars::JsonSchema,
    {
        let Some(caller) = &self.inner.caller else {
            return Err(CallerError::not_supported("elicitation"));
        };
        let settings = schemars::generate::SchemaSettings::draft2020_12().with(|s| {
            s.inline_subschemas = true;
        });
        let mut schema = settings
            .into_generator()
            .into_root_schema_for::<T>()
            .to_value();
        if let Some(map) = schema.as_object_mut() {
            map.remove("$schema");
            map.remove("title");
        }
        match caller.elicit(key, message, &schema).await? {
            Elicited::Accepted(answer) => serde_json::from_value(answer)
                .map(Elicited::Accepted)
                .map_err(|err| {
                    CallerError::new(
                        CallerErrorKind::InvalidAnswer,
                        format!("the user's answer does not fit the form: {err}"),
                    )
                }),
            Elicited::Declined => Ok(Elicited::Declined),
            Elicited::Cancelled => Ok(Elicited::Cancelled),
        }
    }

    /// Lets the call go on in the background from here, where its caller runs calls that way:
    /// over MCP, a tool the server runs as a task with `TaskSupport::OnDetach` (see
    /// `toolsmith::mcp`) answers the request with a task at this point, and the client fetches
    /// the result later. Whatever the tool asked the caller before goes the usual way; what it
    /// asks after goes through the task. `true` when the call is now in the background;
    /// elsewhere a no-op.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let ctx = toolsmith::ToolContext::new();
    /// assert!(!ctx.detach().await, "no caller: the call goes on in the foreground");
    /// # });
    /// ```
    pub async fn detach(&self) -> bool {
        match &self.inner.caller {
            Some(caller) => caller.detach().await,
            None => false,
        }
    }

    /// Adds application state that is already behind an `Arc` (a pool, a client).
    ///
    /// ```
    /// use std::sync::Arc;
    /// let pool = Arc::new(String::from("pool"));
    /// let ctx = toolsmith::ToolContext::new().with_shared_extension(pool.clone());
    /// assert_eq!(ctx.get::<String>().map(String::as_str), Some("pool"));
    /// ```
    #[must_use]
    pub fn with_shared_extension<T: Send + Sync + 'static>(self, value: Arc<T>) -> Self {
        self.edit(|inner| {
            inner.extensions.insert(TypeId::of::<T>(), value);
        })
    }

    /// Uses `token` as the cancellation signal (e.g. a child of the run's token).
    ///
    /// ```
    /// use tokio_util::sync::CancellationToken;
    /// let token = CancellationToken::new();
    /// let ctx = toolsmith::ToolContext::new().with_cancellation(token.clone());
    /// token.cancel();
    /// assert!(ctx.is_cancelled());
    /// ```
    #[must_use]
    pub fn with_cancellation(mut self, token: CancellationToken) -> Self {
        self.attempt = None;
        self.edit(|inner| inner.cancellation = token)
    }

    /// Sets the instant by which the call should be done.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let at = Instant::now() + Duration::from_secs(1);
    /// assert_eq!(toolsmith::ToolContext::new().with_deadline(at).deadline(), Some(at));
    /// ```
    #[must_use]
    pub fn with_deadline(self, deadline: Instant) -> Self {
        self.edit(|inner| inner.deadline = Some(deadline))
    }

    /// Sets the deadline to `timeout` from now.
    ///
    /// ```
    /// use std::time::Duration;
    /// let ctx = toolsmith::ToolContext::new().with_timeout(Duration::from_secs(2));
    /// assert!(ctx.deadline().is_some());
    /// ```
    #[must_use]
    pub fn with_timeout(self, timeout: Duration) -> Self {
        let deadline = Instant::now().checked_add(timeout);
        self.edit(|inner| inner.deadline = deadline)
    }

    /// The idempotency key of this call, set by the toolbox for `write` and `destructive`
    /// tools: pass it to the systems the tool changes, so that they can deduplicate too.
    ///
    /// ```
    /// assert_eq!(toolsmith::ToolContext::new().idempotency_key(), None);
    /// ```
    #[must_use]
    pub fn idempotency_key(&self) -> Option<&str> {
        self.inner.idempotency_key.as_deref()
    }

    pub(crate) fn with_idempotency_key(self, key: &str) -> Self {
        let key: Arc<str> = Arc::from(key);
        self.edit(|inner| inner.idempotency_key = Some(key))
    }

    /// The limits this call's arguments are read under, when the toolbox set them (its own
    /// [`Defaults::input_limits`](crate::policy::Defaults::input_limits), for a tool that sets none).
    #[must_use]
    pub fn input_limits(&self) -> Option<&crate::limits::InputLimits> {
        self.inner.input_limits.as_ref()
    }

    pub(crate) fn with_input_limits(self, limits: crate::limits::InputLimits) -> Self {
        self.edit(|inner| inner.input_limits = Some(limits))
    }

    /// The run id, if set.
    #[must_use]
    pub fn run_id(&self) -> Option<&str> {
        self.inner.run_id.as_deref()
    }

    /// The call id, if set.
    #[must_use]
    pub fn call_id(&self) -> Option<&str> {
        self.inner.call_id.as_deref()
    }

    /// The call that made this one, for a call a program made
    /// ([`with_parent_call_id`](Self::with_parent_call_id)).
    #[must_use]
    pub fn parent_call_id(&self) -> Option<&str> {
        self.inner.parent_call_id.as_deref()
    }

    /// The trace id; error envelopes carry it so operators can find the call in the logs.
    #[must_use]
    pub fn trace_id(&self) -> &str {
        &self.inner.trace_id
    }

    /// The principal (user id), if set.
    #[must_use]
    pub fn principal(&self) -> Option<&str> {
        self.inner.principal.as_deref()
    }

    /// The application state of type `T`, if it was added.
    #[must_use]
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.inner
            .extensions
            .get(&TypeId::of::<T>())
            .and_then(|value| value.downcast_ref::<T>())
    }

    /// The cancellation signal.
    #[must_use]
    pub fn cancellation(&self) -> &CancellationToken {
        match &self.attempt {
            None => &self.inner.cancellation,
            Some(attempt) => attempt.token(&self.inner.cancellation),
        }
    }

    /// Whether the call has been cancelled.
    #[must_use]
    pub fn is_cancelled(&self) -> bool {
        self.cancellation().is_cancelled()
    }

    /// Resolves when the call is cancelled; use it in `tokio::select!`.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let ctx = toolsmith::ToolContext::new();
    /// ctx.cancellation().cancel();
    /// ctx.cancelled().await;
    /// # });
    /// ```
    pub async fn cancelled(&self) {
        self.cancellation().cancelled().await;
    }

    /// The deadline, if set.
    #[must_use]
    pub fn deadline(&self) -> Option<Instant> {
        self.inner.deadline
    }

    /// Time left before the deadline (zero once it has passed), if a deadline is set.
    #[must_use]
    pub fn remaining(&self) -> Option<Duration> {
        self.inner
            .deadline
            .map(|at| at.saturating_duration_since(Instant::now()))
    }
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("run_id", &self.inner.run_id)
            .field("call_id", &self.inner.call_id)
            .field("trace_id", &self.inner.trace_id)
            .field("principal", &self.inner.principal)
            .field("extensions", &self.inner.extensions.len())
            .field("cancelled", &self.is_cancelled())
            .field("deadline", &self.inner.deadline)
            .finish()
    }
}

/// A trace id unique within the process and unlikely to repeat across processes:
/// `tr_` + 16 hex digits mixing a per-process random seed with a counter.
fn new_trace_id() -> String {
    use std::hash::{BuildHasher, RandomState};
    use std::sync::OnceLock;
    static SEED: OnceLock<RandomState> = OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let hash = SEED.get_or_init(RandomState::new).hash_one(n);
    format!("tr_{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_attempt_is_cancelled_alone_and_whenever_its_tool_looks() {
        let base = ToolContext::new();
        // Fired before the tool asked: the token it then gets is cancelled.
        let (ctx, attempt) = base.for_attempt(None, false);
        attempt.fire();
        assert!(ctx.is_cancelled());
        assert!(!base.is_cancelled());
        // Fired after: the token the tool holds is cancelled, and so are its clones.
        let (ctx, attempt) = base.for_attempt(None, false);
        let held = ctx.cancellation().clone();
        let copy = ctx.clone();
        attempt.fire();
        assert!(held.is_cancelled() && copy.is_cancelled());
        // An attempt inside an attempt (a tool calling tools with its context) is cancelled
        // with the outer one; the caller's cancellation reaches both.
        let (outer, outer_attempt) = base.for_attempt(None, false);
        let (inner, _) = outer.for_attempt(None, false);
        assert!(!inner.is_cancelled());
        outer_attempt.fire();
        assert!(inner.is_cancelled());
        let (other, _) = base.for_attempt(None, false);
        base.cancellation().cancel();
        assert!(other.is_cancelled());
    }

    #[test]
    fn trace_ids_differ() {
        assert_ne!(ToolContext::new().trace_id(), ToolContext::new().trace_id());
    }

    #[test]
    fn clones_share_cancellation_and_edits_do_not_leak() {
        let base = ToolContext::new().with_principal("a");
        let other = base.clone().with_principal("b");
        assert_eq!(base.principal(), Some("a"));
        assert_eq!(other.principal(), Some("b"));
        base.cancellation().cancel();
        assert!(other.is_cancelled());
    }
}

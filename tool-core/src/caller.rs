//! What the caller of a tool can do for it while it runs: take progress reports and log
//! messages, ask its model for a completion (sampling), ask its user for input (elicitation).
//!
//! A tool reaches these through its [`ToolContext`](crate::ToolContext): `ctx.progress(..)`,
//! `ctx.log(..)`, `ctx.sample(..)`, `ctx.elicit::<T>(..)`. The MCP server supplies them from
//! the client (docs/mcp.md); a caller that supplies none makes progress and logging no-ops
//! (logging still goes to `tracing`) and sampling and elicitation a [`CallerError`] saying the
//! caller does not support them, at once, never a wait.

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The `_meta` key under which an MCP progress notification carries a partial result
/// ([`ToolContext::partial`](crate::ToolContext::partial)): MCP has no notification of its
/// own for one, so the server sends it as progress (just above the last progress sent, as
/// the spec requires each notification to be), with the value here. An MCP toolset hands
/// such a notification to its caller's [`Caller::partial`], not as progress.
///
/// ```
/// assert_eq!(toolsmith::caller::PARTIAL_META, "toolsmith/partial");
/// ```
pub const PARTIAL_META: &str = "toolsmith/partial";

/// A boxed future: what [`Tool::call`](crate::Tool::call) and a [`Caller`]'s methods return
/// (also at [`toolsmith::tool::BoxFuture`](crate::tool::BoxFuture)).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// How severe a log message is: the eight levels of syslog (RFC 5424), as MCP names them.
///
/// ```
/// use toolsmith::caller::LogLevel;
/// assert!(LogLevel::Error > LogLevel::Info);
/// assert_eq!(LogLevel::Warning.as_str(), "warning");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Detailed debugging.
    Debug,
    /// Normal operation.
    Info,
    /// Normal but significant.
    Notice,
    /// Something to look at.
    Warning,
    /// An error.
    Error,
    /// A critical condition.
    Critical,
    /// Action must be taken at once.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LogLevel {
    /// The level's name.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Notice => "notice",
            Self::Warning => "warning",
            Self::Error => "error",
            Self::Critical => "critical",
            Self::Alert => "alert",
            Self::Emergency => "emergency",
        }
    }
}

/// A request for a completion from the caller's model.
///
/// ```
/// let request = toolsmith::caller::Sampling::new("Summarize: the build is green.").with_max_tokens(50);
/// assert_eq!(request.max_tokens, 50);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Sampling {
    /// The conversation so far: `(role, text)`, the role `user` or `assistant`.
    pub messages: Vec<(String, String)>,
    /// A system prompt the caller may use.
    pub system_prompt: Option<String>,
    /// The most tokens to generate.
    pub max_tokens: u32,
}

impl Sampling {
    /// One user message, at most 1,000 tokens back.
    #[must_use]
    pub fn new(prompt: impl Into<String>) -> Self {
        Self {
            messages: vec![("user".to_owned(), prompt.into())],
            system_prompt: None,
            max_tokens: 1_000,
        }
    }

    /// Sets the most tokens to generate.
    #[must_use]
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// Sets the system prompt.
    #[must_use]
    pub fn with_system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }
}

/// The caller's model's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Sampled {
    /// The text it wrote.
    pub text: String,
    /// The model that wrote it.
    pub model: String,
    /// Why it stopped, when the caller says.
    pub stop_reason: Option<String>,
}

impl Sampled {
    /// An answer (for [`Caller`] implementations).
    #[must_use]
    pub fn new(text: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            model: model.into(),
            stop_reason: None,
        }
    }
}

/// A root the client exposes: a directory or file the tool may work in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Root {
    /// Its URI, such as `file:///home/ada/project`.
    pub uri: String,
    /// Its name, when the client gives one.
    pub name: Option<String>,
}

/// What the user did with a request for input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Elicited<T> {
    /// The user answered; the answer matched the requested form.
    Accepted(T),
    /// The user said no.
    Declined,
    /// The user dismissed the request without choosing.
    Cancelled,
}

/// Why the caller could not do what a tool asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallerError {
    kind: CallerErrorKind,
    message: String,
}

/// The kinds of [`CallerError`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallerErrorKind {
    /// This caller does not offer it (not an MCP client, or a client without the capability).
    NotSupported,
    /// The caller tried and failed (the client did not answer, or answered with an error).
    Failed,
    /// The user's answer did not match the requested form.
    InvalidAnswer,
    /// The answer comes in a later round: the client is asked for it with the call's result
    /// (MCP 2026-07-28 input-required results), and the tool is called again with it. A tool
    /// passes this error on with `?`.
    InputRequired,
}

impl CallerError {
    /// An error of `kind`.
    #[must_use]
    pub fn new(kind: CallerErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// The caller does not offer `what`.
    #[must_use]
    pub fn not_supported(what: &str) -> Self {
        Self::new(
            CallerErrorKind::NotSupported,
            format!("{what} is not supported by this caller"),
        )
    }

    /// What kind of error it is.
    #[must_use]
    pub fn kind(&self) -> CallerErrorKind {
        self.kind
    }

    /// What went wrong, in words for the model.
    #[must_use]
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for CallerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

// Not `std::error::Error`: every such error converts into an opaque `internal_error`, and a
// caller's error has a better conversion of its own (below).

/// What a tool's caller offers while the tool runs. The MCP server implements it from the
/// client; an application can implement it to show progress or answer elicitations itself.
/// Each method has the default of a caller that offers nothing: progress and logs go
/// nowhere, and sampling, roots and elicitation are [`CallerError::not_supported`], at once.
///
/// ```
/// use toolsmith::caller::{BoxFuture, Caller, CallerError, Elicited};
/// use toolsmith::serde_json::{json, Value};
///
/// /// A user who answers every form with the same name, and offers nothing else.
/// struct Ada;
///
/// impl Caller for Ada {
///     fn elicit<'a>(&'a self, _: Option<&'a str>, _: &'a str, _: &'a Value)
///         -> BoxFuture<'a, Result<Elicited<Value>, CallerError>> {
///         Box::pin(async { Ok(Elicited::Accepted(json!({"name": "Ada"}))) })
///     }
/// }
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// assert!(Ada.roots(None).await.is_err());
/// # });
/// ```
pub trait Caller: Send + Sync + 'static {
    /// Reports progress: `progress` of `total` (when known), with a message.
    fn progress<'a>(
        &'a self,
        progress: f64,
        total: Option<f64>,
        message: Option<&'a str>,
    ) -> BoxFuture<'a, ()> {
        let _ = (progress, total, message);
        Box::pin(std::future::ready(()))
    }

    /// Hands over a preliminary result: what the tool has so far, as JSON, for the
    /// application to show while the call runs. Never the model's to read: the model reads
    /// the call's result only.
    fn partial<'a>(&'a self, value: &'a Value) -> BoxFuture<'a, ()> {
        let _ = value;
        Box::pin(std::future::ready(()))
    }

    /// Sends a log message, when `level` is at least the one the caller asked for.
    fn log<'a>(
        &'a self,
        level: LogLevel,
        message: &'a str,
        data: Option<&'a Value>,
    ) -> BoxFuture<'a, ()> {
        let _ = (level, message, data);
        Box::pin(std::future::ready(()))
    }

    /// Asks the caller's model for a completion. `key` names the request where the caller
    /// collects answers across rounds (`None`: one the caller picks).
    fn sample<'a>(
        &'a self,
        key: Option<&'a str>,
        request: Sampling,
    ) -> BoxFuture<'a, Result<Sampled, CallerError>> {
        let _ = (key, request);
        Box::pin(std::future::ready(Err(CallerError::not_supported(
            "sampling",
        ))))
    }

    /// Asks the caller for its roots (the directories and files the tool may work in).
    fn roots<'a>(&'a self, key: Option<&'a str>) -> BoxFuture<'a, Result<Vec<Root>, CallerError>> {
        let _ = key;
        Box::pin(std::future::ready(Err(CallerError::not_supported("roots"))))
    }

    /// Asks the caller's user for input in the form `schema` (a flat JSON Schema object);
    /// an accepted answer is returned only when it matches the schema. `key` as for
    /// [`sample`](Self::sample).
    fn elicit<'a>(
        &'a self,
        key: Option<&'a str>,
        message: &'a str,
        schema: &'a Value,
    ) -> BoxFuture<'a, Result<Elicited<Value>, CallerError>> {
        let _ = (key, message, schema);
        Box::pin(std::future::ready(Err(CallerError::not_supported(
            "elicitation",
        ))))
    }

    /// Lets the call go on in the background from here, where the caller runs calls that
    /// way (an MCP task); `true` when it does. Elsewhere, as by default, nothing happens and
    /// the call goes on as before.
    fn detach(&self) -> BoxFuture<'_, bool> {
        Box::pin(std::future::ready(false))
    }
}

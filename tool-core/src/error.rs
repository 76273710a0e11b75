//! The error a tool call ends with, shaped for the model that has to act on it.

pub use crate::echo::ECHO_CAP;
use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What went wrong, as a stable machine-readable code (snake_case on the wire).
///
/// Each code carries a default for [`ToolError::is_retryable`] and [`ToolError::needs_human`]
/// that the constructors of [`ToolError`] apply; the builder methods can override them.
///
/// ```
/// use toolsmith::ErrorCode;
/// assert_eq!(toolsmith::serde_json::to_string(&ErrorCode::RateLimited).unwrap(), r#""rate_limited""#);
/// assert!(ErrorCode::Timeout.default_retryable());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorCode {
    /// The arguments do not match the tool's parameters; fix them and call again.
    InvalidArguments,
    /// No tool of that name is registered.
    UnknownTool,
    /// The caller may not use this tool or this resource.
    PermissionDenied,
    /// A person has to approve the call before it can run.
    ApprovalRequired,
    /// The call took longer than it was allowed to.
    Timeout,
    /// A rate limit was hit; retry after the given delay.
    RateLimited,
    /// A system the tool depends on failed.
    UpstreamError,
    /// The tool produced output that was withheld as unsafe.
    UnsafeOutput,
    /// The same idempotency key was used with different arguments.
    IdempotencyConflict,
    /// The call was cancelled before it finished.
    Cancelled,
    /// The thing the call refers to does not exist.
    NotFound,
    /// Only part of the work succeeded; the message says which part.
    PartialSuccess,
    /// The tool failed for a reason the model cannot fix.
    InternalError,
    /// The run used up its budget of calls, retries or time.
    BudgetExhausted,
    /// The tool failed repeatedly and is paused; retry after the given delay.
    CircuitOpen,
    /// The approval for this call has expired; a person must approve it again.
    ApprovalExpired,
    /// A person declined this call.
    ApprovalDenied,
    /// The same call is still running; retry after the given delay to get its result.
    InProgress,
    /// The call's arguments were cut off before they ended (a streamed call): it was not
    /// run; send the complete arguments.
    TruncatedArguments,
}

impl ErrorCode {
    /// The wire name of the code, e.g. `"invalid_arguments"`.
    ///
    /// ```
    /// assert_eq!(toolsmith::ErrorCode::UnknownTool.as_str(), "unknown_tool");
    /// ```
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::InvalidArguments => "invalid_arguments",
            Self::UnknownTool => "unknown_tool",
            Self::PermissionDenied => "permission_denied",
            Self::ApprovalRequired => "approval_required",
            Self::Timeout => "timeout",
            Self::RateLimited => "rate_limited",
            Self::UpstreamError => "upstream_error",
            Self::UnsafeOutput => "unsafe_output",
            Self::IdempotencyConflict => "idempotency_conflict",
            Self::Cancelled => "cancelled",
            Self::NotFound => "not_found",
            Self::PartialSuccess => "partial_success",
            Self::InternalError => "internal_error",
            Self::BudgetExhausted => "budget_exhausted",
            Self::CircuitOpen => "circuit_open",
            Self::ApprovalExpired => "approval_expired",
            Self::ApprovalDenied => "approval_denied",
            Self::InProgress => "in_progress",
            Self::TruncatedArguments => "truncated_arguments",
        }
    }

    /// Whether repeating the same call unchanged may succeed (transient failures).
    ///
    /// ```
    /// use toolsmith::ErrorCode;
    /// assert!(!ErrorCode::InvalidArguments.default_retryable());
    /// ```
    #[must_use]
    pub const fn default_retryable(self) -> bool {
        matches!(
            self,
            Self::Timeout | Self::RateLimited | Self::UpstreamError
        )
    }

    /// Whether a person has to step in before the work can go on.
    ///
    /// ```
    /// use toolsmith::ErrorCode;
    /// assert!(ErrorCode::ApprovalRequired.default_human_review());
    /// ```
    #[must_use]
    pub const fn default_human_review(self) -> bool {
        matches!(self, Self::ApprovalRequired | Self::ApprovalExpired)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One problem with one argument: where it is (a JSON pointer into the arguments) and what to do.
///
/// ```
/// let field = toolsmith::FieldError::new("/num_results", "11 is greater than the maximum of 10");
/// assert_eq!(field.to_string(), "/num_results: 11 is greater than the maximum of 10");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldError {
    /// JSON pointer (RFC 6901) of the offending value; empty for the arguments as a whole.
    pub pointer: String,
    /// What is wrong and how to fix it, written for the model.
    pub message: String,
}

impl FieldError {
    /// A problem at `pointer`.
    pub fn new(pointer: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            pointer: pointer.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.pointer.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.pointer, self.message)
        }
    }
}

/// The structured error a tool call ends with.
///
/// The model reads [`message`](Self::message) and decides from `retryable` and `human_review`
/// what to do next. Build one with the constructor named after its [`ErrorCode`]:
///
/// ```
/// use std::time::Duration;
/// use toolsmith::{ErrorCode, ToolError};
///
/// let err = ToolError::rate_limited("The CRM API is rate limited; retry in 30 seconds.")
///     .retry_after(Duration::from_secs(30))
///     .with_user_message("CRM lookups are paused for a moment.");
/// assert_eq!(err.code(), ErrorCode::RateLimited);
/// assert!(err.is_retryable());
/// assert_eq!(err.retry_after_ms(), Some(30_000));
/// ```
///
/// Any error type converts into an `internal_error` with `?`. Its text never reaches the model:
/// the model sees a generic message with the trace id, and the text is logged with `tracing`
/// when the call finishes. This is why `ToolError` does not implement `std::error::Error` itself
/// (the same choice `anyhow::Error` makes): a blanket `From<E: Error>` would otherwise overlap
/// with `From<ToolError> for ToolError`.
///
/// ```
/// use toolsmith::{ErrorCode, ToolError};
///
/// fn parse(s: &str) -> Result<i64, ToolError> {
///     Ok(s.parse::<i64>()?)
/// }
/// let err = parse("x").unwrap_err();
/// assert_eq!(err.code(), ErrorCode::InternalError);
/// assert!(!err.message().contains("invalid digit"));
/// ```
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ToolError {
    // Boxed: `Result<T, ToolError>` stays one pointer wide on the error side.
    inner: Box<Inner>,
}

#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Inner {
    code: ErrorCode,
    message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    user_message: Option<String>,
    retryable: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    retry_after_ms: Option<u64>,
    human_review: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    fields: Vec<FieldError>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    trace_id: Option<String>,
    /// The last partial result of a tool that shows it (`#[tool(show_partial)]`), redacted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    partial_result: Option<Box<serde_json::Value>>,
    /// Text for operators only (logged, never serialized).
    #[serde(skip)]
    detail: Option<String>,
    /// The kinds of secret the output checks removed from the message (for the audit record,
    /// never serialized).
    #[serde(skip)]
    redacted: Vec<&'static str>,
    /// The tool panicked: a fault of the server, not an answer of the tool (never serialized).
    #[serde(skip)]
    panicked: bool,
    /// The call was held back by the toolbox's own rate limit: the tool never ran, and the
    /// tool's circuit does not count it (never serialized).
    #[serde(skip)]
    throttled: bool,
    /// The toolbox's own refusal of a call's arguments: its words, and the model's own input
    /// echoed cut and quoted, with nothing from a tool or an upstream (never serialized).
    #[serde(skip)]
    refusal: bool,
    /// For a refusal: the part of the message that lists the problems (each field's pointer
    /// and message); the rest is the toolbox's own words. Forgotten when the message changes
    /// (never serialized).
    #[serde(skip)]
    problems: Option<std::ops::Range<usize>>,
    /// For `approval_required`: the exact call that waits, as the approval gate read it
    /// (never serialized).
    #[serde(skip)]
    awaited: Option<Box<Awaited>>,
    /// Why the toolbox's door turned the call away before any tool was chosen (never
    /// serialized: the model sees the same `unknown_tool` error for each reason).
    #[serde(skip)]
    turned_away: Option<Refusal>,
}

/// Why a toolbox turned a call away at its door ([`Toolbox::admit`](crate::Toolbox::admit)),
/// before any tool ran: [`ToolError::refusal`] says it. The model is told the same for each
/// tool it may not call (an `unknown_tool` error listing the tools it may call), so that what
/// it was not offered stays unseen; the application can tell them apart. A busy toolbox is
/// the one refusal of a tool the model may call: it is told to retry.
///
/// ```
/// use toolsmith::error::Refusal;
/// use toolsmith::{tool, ToolContext, Toolbox};
///
/// /// Says hello. Read-only. Not for real conversations.
/// #[tool(effect = "read")]
/// fn say_hello() -> &'static str { "hello" }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let toolbox = Toolbox::new().with(SayHello);
/// let out = toolbox.call("say_goodbye", "{}", &ToolContext::new()).await;
/// assert_eq!(out.error().unwrap().refusal(), Some(Refusal::Unknown));
/// // A tool's own errors are not refusals.
/// let out = toolbox.call("say_hello", "{}", &ToolContext::new()).await;
/// assert!(out.error().is_none());
/// # });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Refusal {
    /// No tool has the name, in the caller's spelling.
    Unknown,
    /// The request the call answers did not offer the tool (left out of its tool block, not
    /// in its subset, or deferred and not found yet).
    NotOffered,
    /// The tool's condition ([`Toolbox::with_enabled_when`](crate::Toolbox::with_enabled_when))
    /// does not hold for the call's context.
    Disabled,
    /// The toolbox's prepare step ([`Toolbox::with_prepare`](crate::Toolbox::with_prepare))
    /// hides the tool for the call's context.
    Hidden,
    /// The toolbox has as many calls admitted as it takes at once
    /// ([`Defaults::max_in_flight`](crate::policy::Defaults::max_in_flight)): a retryable
    /// `rate_limited` error, with a time to wait.
    Busy,
    /// The call's grant ([`ToolContext::grant`](crate::ToolContext::grant), a verified
    /// access token) lacks a scope the tool needs
    /// ([`ToolDefinition::scopes`](crate::ToolDefinition::scopes)): a `permission_denied`
    /// error naming the scopes to ask for.
    Unauthorized,
}

impl Refusal {
    /// The reason as a word for logs and audit records: `unknown`, `not_offered`,
    /// `disabled`, `hidden`, `busy`, `unauthorized`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unknown => "unknown",
            Self::NotOffered => "not_offered",
            Self::Disabled => "disabled",
            Self::Hidden => "hidden",
            Self::Busy => "busy",
            Self::Unauthorized => "unauthorized",
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The call an `approval_required` error waits on, as it will run: the tool's registered
/// name, the hash of its canonical arguments (what a decision binds), the arguments a person
/// sees (sensitive ones redacted) and what was changed in the model's arguments before.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Awaited {
    pub(crate) tool: String,
    pub(crate) hash: String,
    pub(crate) arguments: serde_json::Value,
    pub(crate) repairs: Vec<String>,
    /// For a call a program made, its id in the program (`<program's call id>.<n>`): the
    /// last step of the waiting call's path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) within: Option<String>,
}

/// The message the model sees for an internal error; the trace id is appended.
pub(crate) const INTERNAL_MESSAGE: &str = "The tool failed because of an internal problem that \
     changing the arguments will not fix. Tell the user the action could not be completed";

macro_rules! constructors {
    ($($(#[$doc:meta])* $fn:ident => $code:ident,)*) => {
        $(
            $(#[$doc])*
            pub fn $fn(message: impl Into<String>) -> Self {
                Self::new(ErrorCode::$code, message)
            }
        )*
    };
}

impl ToolError {
    /// Appends the error as JSON, the bytes `serde_json` writes for it, in one pass: the
    /// envelope of a refused call is written on every invalid call, and its strings are
    /// escaped eight bytes at a time.
    pub(crate) fn write_json(&self, out: &mut Vec<u8>) {
        use crate::json::escape::write_str;
        let inner = &*self.inner;
        out.extend_from_slice(b"{\"code\":\"");
        out.extend_from_slice(inner.code.as_str().as_bytes());
        out.extend_from_slice(b"\",\"message\":");
        let listed = match self.listed_problems() {
            Some((before, after)) => Some(self.write_listed(out, before, after)),
            None => {
                write_str(out, &inner.message);
                None
            }
        };
        if let Some(user) = &inner.user_message {
            out.extend_from_slice(b",\"user_message\":");
            write_str(out, user);
        }
        out.extend_from_slice(if inner.retryable {
            b",\"retryable\":true"
        } else {
            b",\"retryable\":false"
        });
        if let Some(ms) = inner.retry_after_ms {
            out.extend_from_slice(b",\"retry_after_ms\":");
            out.extend_from_slice(ms.to_string().as_bytes());
        }
        out.extend_from_slice(if inner.human_review {
            b",\"human_review\":true"
        } else {
            b",\"human_review\":false"
        });
        if !inner.fields.is_empty() {
            out.extend_from_slice(b",\"fields\":[");
            for (i, field) in inner.fields.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                match listed.as_ref().map(|listed| listed[i]) {
                    // Already escaped in the message: copied from there.
                    Some([pointer, pointer_end, message, message_end]) => {
                        out.extend_from_slice(b"{\"pointer\":\"");
                        out.extend_from_within(pointer..pointer_end);
                        out.extend_from_slice(b"\",\"message\":\"");
                        out.extend_from_within(message..message_end);
                        out.extend_from_slice(b"\"}");
                    }
                    None => {
                        out.extend_from_slice(b"{\"pointer\":");
                        write_str(out, &field.pointer);
                        out.extend_from_slice(b",\"message\":");
                        write_str(out, &field.message);
                        out.push(b'}');
                    }
                }
            }
            out.push(b']');
        }
        if let Some(trace) = &inner.trace_id {
            out.extend_from_slice(b",\"trace_id\":");
            write_str(out, trace);
        }
        if let Some(partial) = &inner.partial_result {
            out.extend_from_slice(b",\"partial_result\":");
            // A `Value` always encodes.
            let _ = serde_json::to_writer(&mut *out, partial);
        }
        out.push(b'}');
    }

    /// For a refusal of two fields or more whose message still lists them as the toolbox
    /// wrote it: the message before and after that list. The envelope gives every field in
    /// the message and again under `fields`; such a message is written in pieces
    /// ([`write_listed`](Self::write_listed)) and the fields copied from it, so each is
    /// escaped once. A refusal of one field is written as any error is: one field's text
    /// saved does not pay for the bookkeeping.
    fn listed_problems(&self) -> Option<(&str, &str)> {
        let inner = &*self.inner;
        let problems = inner.problems.clone()?;
        if !(2..=LISTED).contains(&inner.fields.len()) {
            return None;
        }
        let message = inner.message.as_str();
        let (before, after) = (message.get(..problems.start)?, message.get(problems.end..)?);
        lists_fields(message.get(problems)?, &inner.fields).then_some((before, after))
    }

    /// Writes the message as a JSON string from the words `before` and `after` its fields
    /// ([`listed_problems`](Self::listed_problems)) and the fields themselves, and returns
    /// where each field's pointer and message landed in `out` (start and end of each).
    fn write_listed(&self, out: &mut Vec<u8>, before: &str, after: &str) -> [[usize; 4]; LISTED] {
        use crate::json::escape::write_escaped;
        let inner = &*self.inner;
        out.reserve(inner.message.len() + 2);
        out.push(b'"');
        write_escaped(out, before);
        let mut listed = [[0; 4]; LISTED];
        for (i, (field, at)) in inner.fields.iter().zip(&mut listed).enumerate() {
            if i > 0 {
                out.extend_from_slice(b"; ");
            }
            let pointer = out.len();
            write_escaped(out, &field.pointer);
            let pointer_end = out.len();
            if !field.pointer.is_empty() {
                out.extend_from_slice(b": ");
            }
            let start = out.len();
            write_escaped(out, &field.message);
            *at = [pointer, pointer_end, start, out.len()];
        }
        write_escaped(out, after);
        out.push(b'"');
        listed
    }

    /// The error for a tool that panicked: generic for the model, the panic text for the logs.
    pub(crate) fn from_panic(payload: &(dyn std::any::Any + Send)) -> Self {
        let text = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a non-string panic payload".to_owned());
        let mut err = Self::internal(format_args!("the tool panicked: {text}"));
        err.inner.panicked = true;
        err
    }

    /// A call held back by the rate limit `key` (`tool:<name>` or `upstream:<name>`): retry
    /// after `wait`.
    pub(crate) fn throttled(tool: &str, key: &str, wait: std::time::Duration) -> Self {
        let what = match key.split_once(':') {
            Some(("upstream", upstream)) => format!("the upstream `{upstream}` it calls"),
            _ => "it".to_owned(),
        };
        let mut err = Self::new(
            ErrorCode::RateLimited,
            format!("`{tool}` is called more often than the rate limit of {what} allows; retry after the given delay."),
        )
        .retry_after(wait.max(std::time::Duration::from_millis(1)));
        err.inner.throttled = true;
        err
    }

    /// A call that could not be let through because the shared state (a rate limit's
    /// counts) cannot be reached: refused, retryable, never let through unlimited.
    pub(crate) fn state_unreachable(err: &dyn fmt::Display) -> Self {
        let mut out = Self::new(
            ErrorCode::UpstreamError,
            "The call could not be admitted: the service that keeps its limits is unreachable. Retry in a moment.",
        )
        .retry_after(std::time::Duration::from_secs(1));
        out.inner.detail = Some(err.to_string());
        out.inner.throttled = true;
        out
    }

    /// Marks the error as the toolbox's own refusal of a call's arguments, whose message
    /// lists the problems at `problems`.
    pub(crate) fn marked_refusal(mut self, problems: std::ops::Range<usize>) -> Self {
        self.inner.refusal = true;
        self.inner.problems = Some(problems);
        self
    }

    /// For a refusal whose message is as the toolbox wrote it: the part that lists the
    /// problems, the only text in it that is not the toolbox's own words.
    pub(crate) fn refusal_problems(&self) -> Option<&str> {
        let range = self.inner.problems.clone()?;
        self.inner.message.get(range)
    }

    /// Whether the error is the toolbox's own refusal of the arguments: its message holds
    /// every field's message, and `Block` neutralizes it instead of withholding it.
    pub(crate) fn is_refusal(&self) -> bool {
        self.inner.refusal
    }

    /// Whether the toolbox held the call back before the tool ran (a rate limit, or its
    /// state unreachable).
    pub(crate) fn is_throttled(&self) -> bool {
        self.inner.throttled
    }

    /// Whether the tool panicked (the error says only that something internal failed).
    #[cfg(feature = "mcp")]
    pub(crate) fn is_panic(&self) -> bool {
        self.inner.panicked
    }

    /// An error with `code` and a message for the model; `retryable` and `human_review`
    /// take the code's defaults.
    ///
    /// ```
    /// use toolsmith::{ErrorCode, ToolError};
    /// let err = ToolError::new(ErrorCode::NotFound, "No order 42 exists; list orders first.");
    /// assert!(!err.is_retryable());
    /// ```
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            inner: Box::new(Inner {
                code,
                message: message.into(),
                user_message: None,
                retryable: code.default_retryable(),
                retry_after_ms: None,
                human_review: code.default_human_review(),
                fields: Vec::new(),
                trace_id: None,
                partial_result: None,
                detail: None,
                redacted: Vec::new(),
                panicked: false,
                throttled: false,
                refusal: false,
                problems: None,
                awaited: None,
                turned_away: None,
            }),
        }
    }

    constructors! {
        /// `invalid_arguments`: the model should fix the arguments and call again.
        ///
        /// ```
        /// let err = toolsmith::ToolError::invalid_arguments("priority must be low, medium or high");
        /// assert!(!err.is_retryable());
        /// ```
        invalid_arguments => InvalidArguments,
        /// `unknown_tool`: no tool of that name exists.
        ///
        /// ```
        /// let err = toolsmith::ToolError::unknown_tool("no tool `x`");
        /// assert_eq!(err.code().as_str(), "unknown_tool");
        /// ```
        unknown_tool => UnknownTool,
        /// `permission_denied`: not allowed; retrying will not help.
        ///
        /// ```
        /// let err = toolsmith::ToolError::permission_denied("You may only read your own tickets.");
        /// assert!(!err.is_retryable());
        /// ```
        permission_denied => PermissionDenied,
        /// `approval_required`: a person must approve first (`human_review` is set).
        ///
        /// ```
        /// let err = toolsmith::ToolError::approval_required("Deleting 2847 rows needs approval.");
        /// assert!(err.needs_human());
        /// ```
        approval_required => ApprovalRequired,
        /// `timeout`: took too long; retryable.
        ///
        /// ```
        /// assert!(toolsmith::ToolError::timeout("The database did not answer in 5 s.").is_retryable());
        /// ```
        timeout => Timeout,
        /// `rate_limited`: retryable; add [`retry_after`](Self::retry_after).
        ///
        /// ```
        /// assert!(toolsmith::ToolError::rate_limited("Slow down.").is_retryable());
        /// ```
        rate_limited => RateLimited,
        /// `upstream_error`: a dependency failed; retryable.
        ///
        /// ```
        /// assert!(toolsmith::ToolError::upstream_error("The weather service returned 503.").is_retryable());
        /// ```
        upstream_error => UpstreamError,
        /// `unsafe_output`: the output was withheld.
        ///
        /// ```
        /// assert!(!toolsmith::ToolError::unsafe_output("The page contained instructions.").is_retryable());
        /// ```
        unsafe_output => UnsafeOutput,
        /// `idempotency_conflict`: the key was already used with other arguments.
        ///
        /// ```
        /// let err = toolsmith::ToolError::idempotency_conflict("Use a new key for a new ticket.");
        /// assert!(!err.is_retryable());
        /// ```
        idempotency_conflict => IdempotencyConflict,
        /// `cancelled`: the run was cancelled.
        ///
        /// ```
        /// assert!(!toolsmith::ToolError::cancelled("The user stopped the run.").is_retryable());
        /// ```
        cancelled => Cancelled,
        /// `not_found`: the referenced thing does not exist.
        ///
        /// ```
        /// assert!(!toolsmith::ToolError::not_found("No ticket T-9; search tickets first.").is_retryable());
        /// ```
        not_found => NotFound,
        /// `partial_success`: say in the message what succeeded and what did not.
        ///
        /// ```
        /// let err = toolsmith::ToolError::partial_success("3 of 5 emails sent; 2 bounced.");
        /// assert_eq!(err.code().as_str(), "partial_success");
        /// ```
        partial_success => PartialSuccess,
    }

    /// `internal_error` with text for operators: the model sees a generic message with the
    /// trace id, and `detail` is logged with `tracing`, never sent to the model.
    ///
    /// ```
    /// let err = toolsmith::ToolError::internal("connection refused: 10.0.0.7:5432");
    /// assert!(!err.message().contains("10.0.0.7"));
    /// ```
    pub fn internal(detail: impl fmt::Display) -> Self {
        let mut err = Self::new(ErrorCode::InternalError, INTERNAL_MESSAGE);
        err.inner.detail = Some(detail.to_string());
        err
    }

    /// Sets whether the same call may be repeated unchanged.
    ///
    /// ```
    /// let err = toolsmith::ToolError::internal("flaky").retryable(true);
    /// assert!(err.is_retryable());
    /// ```
    #[must_use]
    pub fn retryable(mut self, retryable: bool) -> Self {
        self.inner.retryable = retryable;
        self
    }

    /// Asks the caller to wait `delay` before retrying; also marks the error retryable.
    ///
    /// ```
    /// use std::time::Duration;
    /// let err = toolsmith::ToolError::rate_limited("busy").retry_after(Duration::from_millis(1500));
    /// assert_eq!(err.retry_after_ms(), Some(1500));
    /// ```
    #[must_use]
    pub fn retry_after(mut self, delay: Duration) -> Self {
        self.inner.retry_after_ms = Some(u64::try_from(delay.as_millis()).unwrap_or(u64::MAX));
        self.inner.retryable = true;
        self
    }

    /// Sets whether a person has to step in.
    ///
    /// ```
    /// let err = toolsmith::ToolError::permission_denied("ask an admin").human_review(true);
    /// assert!(err.needs_human());
    /// ```
    #[must_use]
    pub fn human_review(mut self, needed: bool) -> Self {
        self.inner.human_review = needed;
        self
    }

    /// Adds a message meant for people (shown in a UI), beside the one for the model.
    ///
    /// ```
    /// let err = toolsmith::ToolError::timeout("retry later").with_user_message("Still working…");
    /// assert_eq!(err.user_message(), Some("Still working…"));
    /// ```
    #[must_use]
    pub fn with_user_message(mut self, message: impl Into<String>) -> Self {
        self.inner.user_message = Some(message.into());
        self
    }

    /// Adds a problem with one argument.
    ///
    /// ```
    /// use toolsmith::{FieldError, ToolError};
    /// let err = ToolError::invalid_arguments("bad priority")
    ///     .with_field(FieldError::new("/priority", "use one of: low, medium, high"));
    /// assert_eq!(err.fields().len(), 1);
    /// ```
    #[must_use]
    pub fn with_field(mut self, field: FieldError) -> Self {
        self.inner.fields.push(field);
        self
    }

    /// Adds `fields` after any the error has, taking their list as it is when it has none.
    pub(crate) fn with_fields(mut self, fields: Vec<FieldError>) -> Self {
        if self.inner.fields.is_empty() {
            self.inner.fields = fields;
        } else {
            self.inner.fields.extend(fields);
        }
        self
    }

    /// Sets the trace id under which the call can be found in the logs.
    ///
    /// ```
    /// let err = toolsmith::ToolError::timeout("slow").with_trace_id("tr_1");
    /// assert_eq!(err.trace_id(), Some("tr_1"));
    /// ```
    #[must_use]
    pub fn with_trace_id(mut self, trace_id: impl Into<String>) -> Self {
        self.inner.trace_id = Some(trace_id.into());
        self
    }

    /// The code.
    #[must_use]
    pub fn code(&self) -> ErrorCode {
        self.inner.code
    }

    /// The message for the model.
    #[must_use]
    pub fn message(&self) -> &str {
        &self.inner.message
    }

    /// The message for people, if any.
    #[must_use]
    pub fn user_message(&self) -> Option<&str> {
        self.inner.user_message.as_deref()
    }

    /// Whether repeating the call unchanged may succeed.
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        self.inner.retryable
    }

    /// How long to wait before retrying, in milliseconds.
    #[must_use]
    pub fn retry_after_ms(&self) -> Option<u64> {
        self.inner.retry_after_ms
    }

    /// Whether a person has to step in.
    #[must_use]
    pub fn needs_human(&self) -> bool {
        self.inner.human_review
    }

    /// The problems with individual arguments.
    #[must_use]
    pub fn fields(&self) -> &[FieldError] {
        &self.inner.fields
    }

    /// What the tool had so far when its call ended without a result: the last partial
    /// result it handed over, for a tool that shows it to the model
    /// ([`ToolDefinition::with_show_partial`](crate::ToolDefinition::with_show_partial)),
    /// as the envelope's `partial_result`.
    ///
    /// ```
    /// use toolsmith::serde_json::json;
    /// use toolsmith::ToolError;
    /// let err = ToolError::timeout("The crawl took too long.").with_partial_result(json!({"pages": 40}));
    /// assert_eq!(err.partial_result(), Some(&json!({"pages": 40})));
    /// assert!(toolsmith::serde_json::to_string(&err).unwrap().contains(r#""partial_result":{"pages":40}"#));
    /// ```
    #[must_use]
    pub fn partial_result(&self) -> Option<&serde_json::Value> {
        self.inner.partial_result.as_deref()
    }

    /// This error with `value` as what the tool had so far (see
    /// [`partial_result`](Self::partial_result)). The toolbox sets it itself for a tool that
    /// shows its partial results; set here, it is the caller's to check for secrets.
    #[must_use]
    pub fn with_partial_result(mut self, value: serde_json::Value) -> Self {
        self.inner.partial_result = Some(Box::new(value));
        self
    }

    /// The trace id, once the call has been finished by a [`Toolbox`](crate::Toolbox).
    #[must_use]
    pub fn trace_id(&self) -> Option<&str> {
        self.inner.trace_id.as_deref()
    }

    /// Operator-only text that will be logged, if any (never serialized).
    #[must_use]
    pub fn detail(&self) -> Option<&str> {
        self.inner.detail.as_deref()
    }

    /// Replaces the message and the user message with what `f` makes of them, where it makes
    /// something (the output checks redact secrets this way).
    pub(crate) fn rewrite_texts(&mut self, f: impl Fn(&str) -> Option<String>) {
        if let Some(message) = f(&self.inner.message) {
            self.inner.message = message;
            self.inner.problems = None;
        }
        if let Some(user) = self.inner.user_message.as_deref().and_then(&f) {
            self.inner.user_message = Some(user);
        }
        for field in &mut self.inner.fields {
            if let Some(message) = f(&field.message) {
                field.message = message;
            }
        }
    }

    /// Notes the kinds of secret the output checks removed from the texts.
    pub(crate) fn note_redacted(&mut self, kinds: impl IntoIterator<Item = &'static str>) {
        self.inner.redacted.extend(kinds);
    }

    /// The kinds of secret the output checks removed from this error's texts.
    pub(crate) fn redacted(&self) -> &[&'static str] {
        &self.inner.redacted
    }

    /// Sets the operator-only text, logged when the call ends and never serialized.
    /// The call this error waits on, as the approval gate read it.
    pub(crate) fn with_awaited(mut self, awaited: Awaited) -> Self {
        self.inner.awaited = Some(Box::new(awaited));
        self
    }

    pub(crate) fn awaited(&self) -> Option<&Awaited> {
        self.inner.awaited.as_deref()
    }

    /// Marks the error as the toolbox's door turning a call away, for `reason`.
    pub(crate) fn turned_away(mut self, reason: Refusal) -> Self {
        self.inner.turned_away = Some(reason);
        self
    }

    /// Why the toolbox turned the call away before any tool ran (see [`Refusal`]); `None`
    /// for every other error, a tool's own `unknown_tool` error included.
    #[must_use]
    pub fn refusal(&self) -> Option<Refusal> {
        self.inner.turned_away
    }

    pub(crate) fn set_message(&mut self, message: String) {
        self.inner.message = message;
        self.inner.problems = None;
    }

    pub(crate) fn set_detail(&mut self, detail: String) {
        self.inner.detail = Some(detail);
    }

    /// Stamps the trace id, logs and removes the operator-only detail, and puts the trace id
    /// into an internal error's message.
    pub(crate) fn finish(&mut self, tool: &str, trace_id: &str) {
        if self.inner.trace_id.is_none() {
            self.inner.trace_id = Some(trace_id.to_owned());
        }
        if let Some(detail) = self.inner.detail.take() {
            // Both may carry the model's input: logged cut and escaped.
            let tool = crate::echo::echo(tool);
            let detail = crate::echo::echo_to(&detail, 2_000);
            tracing::error!(tool = &*tool, trace_id = self.inner.trace_id.as_deref(), code = %self.inner.code, %detail, "tool call failed");
        }
        if self.inner.code == ErrorCode::InternalError && self.inner.message == INTERNAL_MESSAGE {
            let id = self.inner.trace_id.as_deref().unwrap_or(trace_id);
            self.inner.message = format!("{INTERNAL_MESSAGE} (trace id {id}).");
        }
    }
}

impl From<crate::caller::CallerError> for ToolError {
    /// A tool that could not get what it needed from its caller cannot go on: said to the
    /// model as an `upstream_error` for a failure (retrying may help), `internal_error`
    /// otherwise.
    fn from(err: crate::caller::CallerError) -> Self {
        match err.kind() {
            crate::caller::CallerErrorKind::InputRequired => ToolError::new(
                ErrorCode::Cancelled,
                "The call waits for input from the client and will be made again with it.",
            ),
            crate::caller::CallerErrorKind::Failed => ToolError::new(
                ErrorCode::UpstreamError,
                format!("The tool could not finish: {}. Try again.", err.message()),
            ),
            _ => ToolError::new(
                ErrorCode::InternalError,
                format!(
                    "The tool could not finish: {}. Tell the user the action could not be completed here.",
                    err.message()
                ),
            ),
        }
    }
}

/// What a `#[tool]` function may return as its error: anything that is `Into<ToolError>` (a
/// `ToolError`, whose code the model sees, or any `std::error::Error`, which becomes an
/// `internal_error` with its text logged). The macro also takes `Box<dyn Error + Send + Sync>`
/// and, with the `anyhow` feature, `anyhow::Error`, as internal errors.
///
/// ```
/// use toolsmith::error::IntoToolError;
/// let err = std::io::Error::other("disk full").into_tool_error();
/// assert_eq!(err.code().as_str(), "internal_error");
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool's error: it does not convert into `ToolError`",
    label = "the tool's error type",
    note = "implement `std::error::Error` for it (its message is logged and the model is told the call failed), implement `From<{Self}> for ToolError` to choose the code the model sees, or return `ToolError`; `Box<dyn Error + Send + Sync>` and, with the `anyhow` feature, `anyhow::Error` work as they are"
)]
pub trait IntoToolError {
    /// The error.
    fn into_tool_error(self) -> ToolError;
}

impl<E: Into<ToolError>> IntoToolError for E {
    fn into_tool_error(self) -> ToolError {
        self.into()
    }
}

/// The tag of an error that converts with `Into<ToolError>` (for `#[tool]`'s generated code).
#[doc(hidden)]
pub struct IntoTag;
impl IntoTag {
    /// `err.into()`.
    pub fn convert<E: IntoToolError>(self, err: E) -> ToolError {
        err.into_tool_error()
    }
}

/// The tag of a boxed error (for `#[tool]`'s generated code).
#[doc(hidden)]
pub struct BoxTag;
impl BoxTag {
    /// An internal error whose detail (logged, not shown to the model) is the error and its
    /// sources.
    pub fn convert<E: AsDynError>(self, err: E) -> ToolError {
        ToolError::internal(chain(err.as_dyn_error()))
    }
}

/// A boxed error, seen as `dyn Error` (for `#[tool]`'s generated code).
#[doc(hidden)]
pub trait AsDynError {
    /// The error.
    fn as_dyn_error(&self) -> &(dyn std::error::Error + 'static);
}
impl AsDynError for Box<dyn std::error::Error + Send + Sync> {
    fn as_dyn_error(&self) -> &(dyn std::error::Error + 'static) {
        &**self
    }
}
impl AsDynError for Box<dyn std::error::Error + Send> {
    fn as_dyn_error(&self) -> &(dyn std::error::Error + 'static) {
        &**self
    }
}
impl AsDynError for Box<dyn std::error::Error> {
    fn as_dyn_error(&self) -> &(dyn std::error::Error + 'static) {
        &**self
    }
}

/// The tag of an `anyhow::Error` (for `#[tool]`'s generated code).
#[doc(hidden)]
pub struct AnyhowTag;
impl AnyhowTag {
    /// An internal error whose detail (logged, not shown to the model) is the error and its
    /// context chain.
    #[cfg(feature = "anyhow")]
    pub fn convert(self, err: anyhow::Error) -> ToolError {
        ToolError::internal(chain(err.as_ref()))
    }
}

/// An error and its sources, `: `-separated.
fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut detail = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        detail.push_str(": ");
        detail.push_str(&cause.to_string());
        source = cause.source();
    }
    detail
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for ToolError {
    fn from(err: E) -> Self {
        Self::internal(chain(&err))
    }
}

impl fmt::Debug for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolError")
            .field("code", &self.inner.code)
            .field("message", &self.inner.message)
            .field("retryable", &self.inner.retryable)
            .field("human_review", &self.inner.human_review)
            .field("fields", &self.inner.fields)
            .field("trace_id", &self.inner.trace_id)
            .field("partial_result", &self.inner.partial_result)
            .finish_non_exhaustive()
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.inner.code, self.inner.message)
    }
}

/// At most this many problems are listed in a refusal of arguments; a document with thousands
/// of unknown keys should not produce an error larger than itself.
pub(crate) const MAX_FIELDS: usize = 20;

/// How many fields a refusal's message can list for the envelope's `fields` to copy: as many
/// problems as a refusal lists, and a last field that says there are more.
const LISTED: usize = MAX_FIELDS + 1;

/// Whether `problems` lists `fields` as a refusal's message lists them: each field's pointer,
/// `: ` and message (the message alone for an empty pointer), separated by `; `.
fn lists_fields(problems: &str, fields: &[FieldError]) -> bool {
    fields
        .iter()
        .enumerate()
        .try_fold(problems.as_bytes(), |rest, (i, field)| {
            let mut rest = if i > 0 {
                rest.strip_prefix(b"; ")?
            } else {
                rest
            };
            if !field.pointer.is_empty() {
                rest = rest
                    .strip_prefix(field.pointer.as_bytes())?
                    .strip_prefix(b": ")?;
            }
            rest.strip_prefix(field.message.as_bytes())
        })
        .is_some_and(<[u8]>::is_empty)
}

#[cfg(test)]
mod tests {
    use super::{ErrorCode, FieldError, ToolError};
    use std::time::Duration;

    proptest::proptest! {
        /// The envelope written by hand is the one serde writes, whatever the texts hold.
        #[test]
        fn an_error_is_written_as_serde_writes_it(
            message in "\\PC{0,80}|[\\x00-\\x7f]{0,40}",
            user in proptest::option::of("\\PC{0,20}"),
            fields in proptest::collection::vec(("[\\x00-\\x7f]{0,12}", "\\PC{0,30}"), 0..4),
            trace in proptest::option::of("[a-z0-9_\"]{0,20}"),
            retry in proptest::option::of(0u64..100_000),
            review: bool,
            partial: bool,
        ) {
            let mut err = ToolError::new(ErrorCode::InvalidArguments, message).human_review(review);
            if let Some(user) = user {
                err = err.with_user_message(user);
            }
            for (pointer, text) in fields {
                err = err.with_field(FieldError::new(pointer, text));
            }
            if let Some(trace) = trace {
                err = err.with_trace_id(trace);
            }
            if let Some(ms) = retry {
                err = err.retry_after(Duration::from_millis(ms));
            }
            if partial {
                err = err.with_partial_result(serde_json::json!({"page": 3, "text": "a\nb\"c"}));
            }
            let mut ours = Vec::new();
            err.write_json(&mut ours);
            let theirs = serde_json::to_vec(&err).unwrap();
            proptest::prop_assert_eq!(String::from_utf8(ours).unwrap(), String::from_utf8(theirs).unwrap());
        }

        /// A refusal's envelope, whose fields are copied from where the message lists them,
        /// is the one serde writes; so is one whose message no longer lists its fields where
        /// it says.
        #[test]
        fn a_refusal_is_written_as_serde_writes_it(
            name in "\\PC{0,10}",
            fields in proptest::collection::vec(("[\\x00-\\x7f]{0,12}", "\\PC{0,30}"), 1..6),
            edit in proptest::option::of((0usize..400, "\\PC{0,3}")),
        ) {
            let (mut message, problems) = refusal(&name, &fields);
            if let Some((at, text)) = &edit {
                let at = (0..=(*at).min(message.len())).rev().find(|&i| message.is_char_boundary(i)).unwrap_or(0);
                message.insert_str(at, text);
            }
            let fields = fields.into_iter().map(|(p, m)| FieldError::new(p, m)).collect::<Vec<_>>();
            let err = ToolError::invalid_arguments(message).with_fields(fields).marked_refusal(problems);
            let mut ours = Vec::new();
            err.write_json(&mut ours);
            let theirs = serde_json::to_vec(&err).unwrap();
            proptest::prop_assert_eq!(String::from_utf8(ours).unwrap(), String::from_utf8(theirs).unwrap());
            if edit.is_none() {
                proptest::prop_assert_eq!(err.listed_problems().is_some(), err.fields().len() > 1);
            }
        }
    }

    /// A refusal's message as the toolbox writes it, and where its problems are.
    fn refusal(name: &str, fields: &[(String, String)]) -> (String, std::ops::Range<usize>) {
        let mut message = format!("The arguments for `{name}` are invalid: ");
        let start = message.len();
        for (i, (pointer, text)) in fields.iter().enumerate() {
            if i > 0 {
                message.push_str("; ");
            }
            if !pointer.is_empty() {
                message.push_str(pointer);
                message.push_str(": ");
            }
            message.push_str(text);
        }
        let problems = start..message.len();
        message.push_str(". Fix these and call the tool again.");
        (message, problems)
    }

    #[test]
    fn a_refusal_of_more_fields_than_are_copied_is_written_whole() {
        let fields = (0..40)
            .map(|i| (format!("/a{i}"), format!("\"x{i}\" is wrong")))
            .collect::<Vec<_>>();
        let (message, problems) = refusal("t", &fields);
        let fields = fields
            .into_iter()
            .map(|(p, m)| FieldError::new(p, m))
            .collect::<Vec<_>>();
        let err = ToolError::invalid_arguments(message)
            .with_fields(fields)
            .marked_refusal(problems);
        assert!(err.listed_problems().is_none());
        let mut ours = Vec::new();
        err.write_json(&mut ours);
        assert_eq!(ours, serde_json::to_vec(&err).unwrap());
    }
}

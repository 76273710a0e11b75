//! What the model reads when a call fails: the application's own words, and a stop to a tool
//! whose model keeps sending arguments it refuses.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use crate::context::ToolContext;
use crate::error::ToolError;

/// A failed call, as an [`ErrorText`] sees it.
#[derive(Debug)]
#[non_exhaustive]
pub struct ErrorView<'a> {
    /// The tool's registered name.
    pub tool: &'a str,
    /// The error, with the message toolsmith wrote (naming the tool, the field and what was
    /// expected).
    pub error: &'a ToolError,
    /// The call's context.
    pub ctx: &'a ToolContext,
}

/// Writes the text a model reads for a failed call ([`ErrorText`]); `None` keeps another's.
/// A closure `Fn(&ErrorView<'_>) -> Option<String>` is one.
pub trait ErrorWriter: Send + Sync + 'static {
    /// The text for the failed call `view`, or `None`.
    fn write(&self, view: &ErrorView<'_>) -> Option<String>;
}

impl<F> ErrorWriter for F
where
    F: Fn(&ErrorView<'_>) -> Option<String> + Send + Sync + 'static,
{
    fn write(&self, view: &ErrorView<'_>) -> Option<String> {
        self(view)
    }
}

type Write = dyn ErrorWriter;

/// Writes the text a model reads for a failed call, in the application's words (a persona,
/// a language, a house style; for every tool, or per tool with
/// [`for_tool`](Self::for_tool) and [`with_tool`](Self::with_tool)); `None` keeps toolsmith's. Set with
/// [`Defaults::error_text`](super::Defaults::error_text). Only the message changes: the code,
/// the fields at fault and whether to retry stay, and secrets in the text are redacted as in
/// any result.
///
/// ```
/// use toolsmith::policy::{Defaults, ErrorText, ErrorView};
/// use toolsmith::serde_json::json;
/// use toolsmith::{tool, ToolContext, Toolbox};
///
/// /// Looks a ticket up. Read-only. Not for changing tickets.
/// #[tool(effect = "read")]
/// fn look_up(
///     /// The ticket.
///     #[arg(range(min = 1, max = 1000))]
///     id: u32,
/// ) -> u32 {
///     id
/// }
///
/// let text = ErrorText::new(|view: &ErrorView<'_>| {
///     let fields: Vec<String> = view.error.fields().iter().map(|f| f.to_string()).collect();
///     (view.tool == "look_up").then(|| format!("Ticket ids run from 1 to 1000 ({}).", fields.join("; ")))
/// });
/// let toolbox = Toolbox::new().with(LookUp).with_defaults(Defaults { error_text: Some(text), ..Defaults::default() });
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let out = toolbox.call("look_up", json!({"id": 5000}), &ToolContext::new()).await;
/// let err = out.error().unwrap();
/// assert!(err.message().starts_with("Ticket ids run from 1 to 1000"));
/// assert_eq!(err.fields()[0].pointer, "/id");
/// # });
/// ```
#[derive(Clone)]
pub struct ErrorText {
    /// For every tool, after a tool's own.
    all: Option<Arc<Write>>,
    /// Each tool's own, by registered name.
    tools: HashMap<String, Arc<Write>>,
}

impl ErrorText {
    /// Text written by `write`, for every tool.
    #[must_use]
    pub fn new(write: impl ErrorWriter) -> Self {
        Self {
            all: Some(Arc::new(write)),
            tools: HashMap::new(),
        }
    }

    /// Text written by `write` for the tool registered as `tool` alone; other tools keep
    /// toolsmith's words (or those of [`new`](Self::new), with [`with_tool`](Self::with_tool)).
    ///
    /// ```
    /// use toolsmith::policy::{ErrorText, ErrorView};
    /// let text = ErrorText::for_tool("look_up", |_: &ErrorView<'_>| Some("Ticket ids run from 1 to 1000.".into()))
    ///     .with_tool("close", |_: &ErrorView<'_>| Some("Only open tickets can be closed.".into()));
    /// # let _ = text;
    /// ```
    #[must_use]
    pub fn for_tool(tool: impl Into<String>, write: impl ErrorWriter) -> Self {
        Self {
            all: None,
            tools: HashMap::new(),
        }
        .with_tool(tool, write)
    }

    /// Adds the words for one tool, tried before the words for every tool; `None` from it
    /// falls back to those.
    #[must_use]
    pub fn with_tool(mut self, tool: impl Into<String>, write: impl ErrorWriter) -> Self {
        self.tools.insert(tool.into(), Arc::new(write));
        self
    }

    pub(crate) fn write(&self, view: &ErrorView<'_>) -> Option<String> {
        self.tools
            .get(view.tool)
            .and_then(|write| write.write(view))
            .or_else(|| self.all.as_ref().and_then(|write| write.write(view)))
    }
}

impl fmt::Debug for ErrorText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ErrorText")
    }
}

/// Runs whose counts are kept at most: past it, the counts start again (a model gets more
/// tries, never fewer).
const MAX_RUNS: usize = 10_000;

/// How many calls of each tool were refused for their arguments, per run.
#[derive(Debug, Default)]
pub(crate) struct InvalidCounts(Mutex<HashMap<(String, String), u32>>);

impl InvalidCounts {
    /// Counts one more refusal of `tool`'s arguments in `run`; the count so far.
    pub(crate) fn count(&self, run: &str, tool: &str) -> u32 {
        let mut counts = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if counts.len() >= MAX_RUNS && !counts.contains_key(&(run.to_owned(), tool.to_owned())) {
            counts.clear();
        }
        let n = counts.entry((run.to_owned(), tool.to_owned())).or_insert(0);
        *n = n.saturating_add(1);
        *n
    }
}

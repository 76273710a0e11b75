//! The `Tool` trait: a definition and a way to run it.

use crate::arguments::Arguments;
use crate::context::ToolContext;
use crate::definition::ToolDefinition;
use crate::error::ToolError;
use crate::outcome::ToolOutcome;

pub use crate::caller::BoxFuture;

/// A tool a model can call. `#[tool]` implements it for the unit struct it generates; a
/// [`Toolbox`](crate::Toolbox) holds tools as `dyn Tool`.
///
/// Implement it by hand for tools whose schema is only known at run time:
///
/// ```
/// use toolsmith::serde_json::json;
/// use toolsmith::{Arguments, Tool, ToolContext, ToolDefinition, ToolOutcome, Toolbox};
/// use toolsmith::tool::BoxFuture;
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
    /// A whole outcome instead of data: a result with a view of its own
    /// ([`Viewed`](crate::output::Viewed)), which no buffer holds. Nothing was written.
    Outcome(Box<ToolOutcome>),
}

impl Emit<'_> {
    /// Serializes `data` where this says; a value serde cannot write is an `internal_error`
    /// (and leaves the buffer as it was).
    ///
    /// ```
    /// use toolsmith::tool::{Emit, Emitted};
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

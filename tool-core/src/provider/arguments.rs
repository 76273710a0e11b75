//! One call's arguments checked while they stream.

use serde_json::{Value, json};

use crate::definition::ToolDefinition;
use crate::dialect::Dialect;
use crate::error::{ErrorCode, ToolError};
use crate::limits::InputLimits;
use crate::validate::stream::{ArgumentChange, Parser};

use super::ToolCall;

/// One call's arguments, checked against the tool's schema while they stream: each piece is
/// read once, in time proportional to its length, and the call is refused as soon as no
/// completion of what arrived could be valid (an unknown key, a wrong type, an enum value no
/// allowed value starts with, a string, number or list already past its limit, broken JSON),
/// with the field errors a whole call with that value would get. [`finish`](Self::finish)
/// decides whether the arguments ended, whatever the provider's `finish_reason` says: a
/// truncated call is a `truncated_arguments` error and never runs.
///
/// ```
/// use toolsmith::provider::ArgumentStream;
/// use toolsmith::{tool, Tool};
///
/// /// Books a table. Writes a booking. Not for changing one.
/// #[tool(effect = "write")]
/// fn book_table(
///     /// The restaurant.
///     #[arg(length(min = 1, max = 40))]
///     restaurant: String,
///     /// How many people.
///     #[arg(range(min = 1, max = 12))]
///     people: u32,
/// ) -> String {
///     format!("{restaurant} for {people}")
/// }
///
/// let mut args = ArgumentStream::new(BookTable.definition());
/// args.push(r#"{"restaurant": "Chez Pa"#).unwrap();
/// assert_eq!(args.partial()["restaurant"], "Chez Pa"); // for a UI, as it arrives
/// // Refused at the first piece that cannot be valid, before the call ends.
/// let err = args.push(r#"nisse", "people": 40, "#).unwrap_err();
/// assert_eq!(err.fields()[0].pointer, "/people");
///
/// // A call cut off is never run, whatever the provider said about how it ended.
/// let mut cut = ArgumentStream::new(BookTable.definition());
/// cut.push(r#"{"restaurant": "Chez Panisse", "peo"#).unwrap();
/// assert_eq!(cut.finish().unwrap_err().code().as_str(), "truncated_arguments");
/// ```
#[derive(Debug)]
pub struct ArgumentStream<'d> {
    definition: &'d ToolDefinition,
    parser: Parser,
    limits: InputLimits,
}

impl<'d> ArgumentStream<'d> {
    /// A stream of arguments for the tool `definition`, under its input limits (or the
    /// defaults).
    #[must_use]
    pub fn new(definition: &'d ToolDefinition) -> Self {
        Self {
            parser: Parser::new(definition.validation()),
            limits: definition.input_limits().copied().unwrap_or_default(),
            definition,
        }
    }

    /// The limits on the arguments (size, depth, values, keys, items).
    #[must_use]
    pub fn with_limits(mut self, limits: InputLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Reads the next piece of the arguments' text.
    ///
    /// # Errors
    ///
    /// `invalid_arguments` as soon as no completion of the text could be valid; the same
    /// error on every later piece.
    pub fn push(&mut self, piece: &str) -> Result<(), ToolError> {
        self.parser
            .push(self.definition.validation(), piece, &self.limits)
    }

    /// What has arrived, as a value: open objects and lists closed, a string in progress as
    /// far as it came, a key without its value left out.
    ///
    /// It reads the text so far again, so each call costs in proportion to the whole text:
    /// called after every piece, a long call costs the square of its length. A UI that
    /// follows the arguments as they arrive reads [`changes`](Self::changes) instead, which
    /// cost in proportion to the piece.
    #[must_use]
    pub fn partial(&self) -> Value {
        self.parser.partial()
    }

    /// Records what each piece changes ([`changes`](Self::changes)).
    #[must_use]
    pub fn with_changes(mut self) -> Self {
        self.parser.record_changes();
        self
    }

    /// What the last piece changed, in order, when [`with_changes`](Self::with_changes) is
    /// set (empty otherwise): a value set at a pointer (a number or literal once whole, a
    /// string as it starts, an object or list as it opens) or text appended to the string
    /// at a pointer. Applied in order to an empty object, the changes of every piece make
    /// [`partial`](Self::partial). Each costs in proportion to what arrived and the depth of
    /// its pointer.
    ///
    /// ```
    /// use toolsmith::provider::{ArgumentChange, ArgumentStream};
    /// use toolsmith::serde_json::json;
    /// use toolsmith::{tool, Tool};
    ///
    /// /// Writes a note. Writes a file. Not for reading one.
    /// #[tool(effect = "write")]
    /// fn write_note(
    ///     /// The note.
    ///     text: String,
    /// ) {}
    ///
    /// let mut args = ArgumentStream::new(WriteNote.definition()).with_changes();
    /// args.push(r#"{"text": "Dear"#).unwrap();
    /// args.push(r#" Ada"#).unwrap();
    /// assert_eq!(
    ///     args.changes(),
    ///     [ArgumentChange::Append { pointer: "/text".into(), text: " Ada".into() }]
    /// );
    /// assert_eq!(args.partial(), json!({"text": "Dear Ada"}));
    /// ```
    #[must_use]
    pub fn changes(&self) -> &[ArgumentChange] {
        self.parser.changes()
    }

    /// Whether the arguments' object has closed.
    #[must_use]
    pub fn is_complete(&self) -> bool {
        self.parser.is_complete()
    }

    /// The arguments' text so far.
    #[must_use]
    pub fn text(&self) -> &str {
        self.parser.text()
    }

    /// The arguments, once the stream ended: their canonical form, as a whole call reads them.
    ///
    /// # Errors
    ///
    /// `truncated_arguments` when the arguments did not end; `invalid_arguments` when they
    /// are not valid, as for a whole call.
    pub fn finish(&self) -> Result<Value, ToolError> {
        match self
            .parser
            .finish(self.definition.validation(), &self.limits)
        {
            Some(read) => read.map(|checked| checked.value),
            None => Err(truncated(self.definition.name(), self.parser.text().len())),
        }
    }
}

/// The error for a call whose arguments were cut off: it is not run.
pub(crate) fn truncated(name: &str, bytes: usize) -> ToolError {
    let shown = crate::echo::echo(name);
    ToolError::new(
        ErrorCode::TruncatedArguments,
        format!(
            "The arguments of this `{shown}` call were cut off after {bytes} bytes, before they ended, so it was not run. Call the tool again with the complete arguments; if they are long, send less in one call."
        ),
    )
}

/// A streamed call as it goes back into the conversation when its arguments are not one JSON
/// object (cut off, malformed): the text as it arrived, in the form each provider takes in
/// history (a string for OpenAI; for Anthropic and Gemini, which take only an object, the
/// text under `invalid_json`, as Anthropic's documentation says to send invalid JSON back).
pub(crate) fn replay(dialect: Dialect, call: &ToolCall) -> Value {
    let text = match &call.arguments {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    let id = call.id.clone().unwrap_or_default();
    match dialect {
        Dialect::OpenAiChat { .. } => json!({"id": id, "type": "function",
            "function": {"name": call.name, "arguments": text}}),
        Dialect::OpenAiResponses { .. } => json!({"type": "function_call", "call_id": id,
            "name": call.name, "arguments": text}),
        Dialect::Anthropic { .. } => json!({"type": "tool_use", "id": id, "name": call.name,
            "input": {"invalid_json": text}}),
        Dialect::Gemini => {
            let mut part = json!({"name": call.name, "args": {"invalid_json": text}});
            if let Some(id) = &call.id {
                part["id"] = json!(id);
            }
            json!({"functionCall": part})
        }
        Dialect::Mcp => json!({"name": call.name, "arguments": {"invalid_json": text}}),
    }
}

//! Tool calls assembled from a provider's stream: the chunks or events in order, complete
//! [`ToolCall`]s out as each one finishes.
//!
//! - OpenAI Chat: `chat.completion.chunk`s whose `choices[].delta.tool_calls[]` carry an
//!   `index`, then the call's `id` and `function.name`, then `function.arguments` in pieces;
//!   calls of one response may interleave. A call is done when its arguments close as a JSON
//!   object, or at the choice's `finish_reason`.
//! - OpenAI Responses: `response.output_item.added` (a `function_call` item),
//!   `response.function_call_arguments.delta` pieces, `response.function_call_arguments.done`
//!   and `response.output_item.done`, each naming its `item_id` or `output_index`.
//! - Anthropic Messages: `content_block_start` (a `tool_use` block), `content_block_delta`s of
//!   type `input_json_delta` with `partial_json` pieces, `content_block_stop`.
//! - Gemini: each streamed `GenerateContentResponse` carries whole `functionCall` parts.
//! - MCP: calls are not streamed; a `tools/call` request is one whole call.
//!
//! Streamed arguments are kept as the text the model wrote (a JSON string holding the object,
//! as OpenAI's own calls are), so the toolbox reads them with its limits and its refusal of
//! repeated keys. Arguments that are not one JSON object when the call ends (malformed, or cut
//! off by the end of the stream) make a [`StreamedCallError`] for that call alone.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use super::arguments::{replay, truncated};
use super::call::ToolCall;
use crate::dialect::Dialect;
use crate::error::ToolError;
use crate::json::scan::Scan;
use crate::limits::{InputLimits, Limit};
use crate::tool::Tool;
use crate::validate::stream::Parser;

/// The tool a name in a provider's spelling refers to.
type Lookup = dyn Fn(&str) -> Option<Arc<dyn Tool>> + Send + Sync;

/// Finds the tool a streamed call names, to check its arguments as they arrive.
#[derive(Clone)]
pub(crate) struct Resolver(pub(crate) Arc<Lookup>);

impl fmt::Debug for Resolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Resolver")
    }
}

/// A call's tool and the parser checking its arguments.
struct Checked {
    tool: Arc<dyn Tool>,
    parser: Parser,
    limits: InputLimits,
}

impl Checked {
    /// `tool`, with a parser for its arguments under its limits.
    fn of(tool: Arc<dyn Tool>) -> Self {
        let definition = tool.definition();
        Self {
            parser: Parser::new(definition.validation()),
            limits: definition.input_limits().copied().unwrap_or_default(),
            tool,
        }
    }
}

impl fmt::Debug for Checked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Checked")
            .field("tool", &self.tool.definition().name())
            .field("parser", &self.parser)
            .finish()
    }
}

/// Calls open at once, at most: a stream that opens more gets an error for each extra one.
const MAX_OPEN: usize = 256;
/// The most bytes of arguments the open calls of one response hold together, by default.
const DEFAULT_OPEN_BYTES: usize = 4 << 20;
/// Calls in one response, at most (providers send a few dozen): past it the rest of the
/// stream is dropped with one error, so that what the stream remembers stays bounded.
const MAX_CALLS: usize = 1024;

/// Assembles the tool calls of one streamed response.
///
/// ```
/// use toolsmith::serde_json::json;
/// use toolsmith::Dialect;
/// use toolsmith::provider::CallStream;
///
/// let mut stream = CallStream::new(Dialect::Anthropic { strict: false });
/// let events = [
///     json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}}),
///     json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"city\": \"Pa"}}),
///     json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "ris\"}"}}),
///     json!({"type": "content_block_stop", "index": 1}),
/// ];
/// let mut done = Vec::new();
/// for event in &events {
///     done.extend(stream.push(event));
/// }
/// done.extend(stream.finish());
/// let call = done.remove(0).unwrap();
/// assert_eq!((call.id.as_deref(), call.name.as_str()), (Some("toolu_1"), "get_weather"));
/// assert_eq!(call.arguments, json!("{\"city\": \"Paris\"}"));
/// ```
#[derive(Debug)]
pub struct CallStream {
    dialect: Dialect,
    max_bytes: usize,
    /// Calls being assembled, by the key their events name them with.
    open: HashMap<String, Partial>,
    /// Keys in the order their calls started.
    order: Vec<String>,
    /// Keys of calls already given out: later pieces for them are dropped (the call has been
    /// answered for, or is being).
    closed: HashSet<String>,
    /// Whether the response went past `MAX_CALLS`: the rest of it is dropped.
    overflowed: bool,
    /// The toolbox's tools, when calls are checked as they arrive
    /// ([`ProviderToolbox::call_stream`](crate::ProviderToolbox::call_stream)).
    resolve: Option<Resolver>,
    /// Gemini: the parts of a call refused while it streamed are dropped up to its last.
    gemini_dropping: bool,
    /// Bytes of arguments the open calls hold, and the most they may hold together.
    open_bytes: usize,
    max_open_bytes: usize,
}

/// A streamed call whose arguments did not make one JSON object: what was assembled, and the
/// error to answer the model with (`invalid_arguments`, saying what was wrong).
#[derive(Clone, Debug)]
pub struct StreamedCallError {
    /// The call as far as it came: its id and name, and the arguments' text (cut short when
    /// long).
    pub call: ToolCall,
    /// The error for this call, ready to answer the model with
    /// ([`ProviderToolbox::messages`](crate::ProviderToolbox::messages)).
    pub error: ToolError,
}

impl fmt::Display for StreamedCallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "streamed call `{}`: {}",
            self.call.name,
            self.error.message()
        )
    }
}

impl std::error::Error for StreamedCallError {}

impl StreamedCallError {
    /// The call as it goes back into the conversation, in `dialect`'s shape, so that the
    /// history stays one a provider accepts: its arguments as they arrived, a string for
    /// OpenAI, and under `invalid_json` in an object for Anthropic and Gemini, which take only
    /// objects (as Anthropic's documentation says to send invalid JSON back). Put it where
    /// the assistant's calls go (an OpenAI Chat message's `tool_calls`, the Responses input,
    /// an Anthropic assistant message's `content`, a Gemini model content's `parts`), and
    /// answer it with [`error`](Self::error).
    ///
    /// ```
    /// use toolsmith::provider::CallStream;
    /// use toolsmith::serde_json::json;
    /// use toolsmith::Dialect;
    ///
    /// let dialect = Dialect::Anthropic { strict: false };
    /// let mut stream = CallStream::new(dialect);
    /// stream.push(&json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "search", "input": {}}}));
    /// stream.push(&json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"query\": \"vp"}}));
    /// let cut = stream.finish().remove(0).unwrap_err();
    /// assert_eq!(cut.error.code().as_str(), "truncated_arguments");
    /// assert_eq!(cut.replay(dialect)["input"], json!({"invalid_json": "{\"query\": \"vp"}));
    /// ```
    #[must_use]
    pub fn replay(&self, dialect: Dialect) -> Value {
        replay(dialect, &self.call)
    }
}

/// One call being assembled.
#[derive(Debug, Default)]
struct Partial {
    id: Option<String>,
    name: String,
    /// The arguments' text, while no parser reads it (a parser keeps the text itself).
    arguments: String,
    /// Bytes of arguments received (Gemini's counted as the text of each value and its path).
    size: usize,
    scan: Scan,
    /// Why the call is already broken (too long), if it is.
    broken: Option<String>,
    /// The tool and the parser checking the arguments, once the name is known.
    checked: Option<Checked>,
    /// Whether the name was looked up.
    resolved: bool,
    /// Gemini's streamed arguments, assembled by path.
    doc: Option<Value>,
    /// The pointer of a Gemini string argument still arriving.
    continuing: Option<String>,
    /// Gemini: values made so far (the node limit), the pointers of the values that became
    /// whole since the arguments were last checked, and how many bytes had come then.
    nodes: usize,
    unchecked: Vec<String>,
    checked_at: usize,
}

impl Partial {
    /// The arguments' text so far.
    fn text(&self) -> &str {
        match &self.checked {
            Some(checked) => checked.parser.text(),
            None => &self.arguments,
        }
    }

    fn into_text(self) -> String {
        match self.checked {
            Some(checked) => checked.parser.into_text(),
            None => self.arguments,
        }
    }
}

/// The longest name a call may have: longer names are cut (no provider allows more than 128
/// characters).
const MAX_NAME: usize = 1024;

/// The key of Gemini's call whose arguments are streaming (one at a time).
const GEMINI: &str = "gemini";

/// Why a Gemini argument could not be set at its path.
enum Placed {
    /// The path goes through a value of another kind.
    Kind,
    /// Setting it would pass a limit, at this pointer.
    Limit(Limit, String),
}

/// Sets `value` at `pointer` in `doc`, making the objects and arrays on the way (`append`:
/// a string continued) under `limits`: the depth of the path, the items of an array (a gap
/// before an index is filled with `null`s, each counted), the keys of an object and the
/// values made in all (`nodes`).
fn set_at(
    doc: &mut Value,
    pointer: &str,
    value: Value,
    append: bool,
    limits: &InputLimits,
    nodes: &mut usize,
) -> Result<(), Placed> {
    // The arguments' object is depth 1: a value at a path of n steps is inside n objects or
    // arrays.
    if pointer.split('/').skip(1).count() > limits.max_depth {
        return Err(Placed::Limit(Limit::Depth, cut_pointer(pointer)));
    }
    let mut at = doc;
    let mut so_far = 0;
    for segment in pointer.split('/').skip(1) {
        let key = segment.replace("~1", "/").replace("~0", "~");
        let index = key.parse::<usize>().ok();
        if at.is_null() {
            *at = match index {
                Some(_) => Value::Array(Vec::new()),
                None => Value::Object(serde_json::Map::new()),
            };
        }
        let here = so_far;
        so_far += segment.len() + 1;
        let here = || cut_pointer(&pointer[..here]);
        at = match (at, index) {
            (Value::Object(map), _) => {
                if !map.contains_key(&key) {
                    if map.len() >= limits.max_members {
                        return Err(Placed::Limit(Limit::Members, here()));
                    }
                    *nodes += 1;
                    if *nodes > limits.max_nodes {
                        return Err(Placed::Limit(Limit::Nodes, here()));
                    }
                }
                map.entry(key).or_insert(Value::Null)
            }
            (Value::Array(items), Some(i)) => {
                if i >= limits.max_items {
                    return Err(Placed::Limit(Limit::Items, here()));
                }
                let more = (i + 1).saturating_sub(items.len());
                if *nodes + more > limits.max_nodes {
                    return Err(Placed::Limit(Limit::Nodes, here()));
                }
                *nodes += more;
                items.resize(items.len() + more, Value::Null);
                &mut items[i]
            }
            _ => return Err(Placed::Kind),
        };
    }
    match (append, at) {
        (true, Value::String(text)) => {
            if let Value::String(more) = value {
                text.push_str(&more);
            }
        }
        (_, slot) => *slot = value,
    }
    Ok(())
}

/// A pointer as errors show it (cut as the whole-call reader cuts it).
fn cut_pointer(pointer: &str) -> String {
    let keys: Vec<String> = pointer
        .split('/')
        .skip(1)
        .map(crate::json::text::unescape)
        .collect();
    crate::limits::pointer(keys.iter().map(|k| crate::limits::Step::Key(k)))
}

impl CallStream {
    /// A stream of `dialect`'s chunks or events. Each call's arguments may be as long as
    /// [`InputLimits::DEFAULT`]'s `max_bytes` (1 MiB); see [`with_max_bytes`](Self::with_max_bytes).
    #[must_use]
    pub fn new(dialect: Dialect) -> Self {
        Self {
            dialect,
            max_bytes: InputLimits::DEFAULT.max_bytes,
            open: HashMap::new(),
            order: Vec::new(),
            closed: HashSet::new(),
            overflowed: false,
            resolve: None,
            gemini_dropping: false,
            open_bytes: 0,
            max_open_bytes: DEFAULT_OPEN_BYTES,
        }
    }

    /// Checks each call's arguments against its tool as they arrive.
    #[must_use]
    pub(crate) fn with_resolver(mut self, resolve: Resolver) -> Self {
        self.resolve = Some(resolve);
        self
    }

    /// Each call's arguments may be at most `bytes` long; a longer one is an error for that
    /// call, and its further pieces are dropped as they come.
    #[must_use]
    pub fn with_max_bytes(mut self, bytes: usize) -> Self {
        self.max_bytes = bytes;
        self
    }

    /// The open calls of the response may hold at most `bytes` of arguments together
    /// (4 MiB by default): a piece that would pass it breaks its call, which is answered with
    /// an error when it ends. With the per-call limit ([`with_max_bytes`](Self::with_max_bytes))
    /// and the 256 calls a response may have open at once, this bounds what a stream holds:
    /// about six times this figure (the text, and a hash of each key of an open object),
    /// plus a few kilobytes per open call. Calls that ended are handed out and no longer
    /// count.
    ///
    /// ```
    /// use toolsmith::serde_json::json;
    /// use toolsmith::Dialect;
    /// use toolsmith::provider::CallStream;
    ///
    /// let mut stream = CallStream::new(Dialect::Anthropic { strict: false }).with_max_open_bytes(16);
    /// stream.push(&json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "note", "input": {}}}));
    /// stream.push(&json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"text\": \"a long note\"}"}}));
    /// let refused = stream.push(&json!({"type": "content_block_stop", "index": 0})).remove(0).unwrap_err();
    /// assert!(refused.error.message().contains("stream's limit"));
    /// ```
    #[must_use]
    pub fn with_max_open_bytes(mut self, bytes: usize) -> Self {
        self.max_open_bytes = bytes;
        self
    }

    /// Whether calls are still being assembled.
    #[must_use]
    pub fn is_idle(&self) -> bool {
        self.open.is_empty()
    }

    /// Takes the next chunk or event and returns the calls it finished, in the order they
    /// started. Events that carry no tool call (text, usage, pings) finish nothing.
    pub fn push(&mut self, event: &Value) -> Vec<Result<ToolCall, StreamedCallError>> {
        let mut done = Vec::new();
        match self.dialect {
            Dialect::OpenAiChat { .. } => self.push_chat(event, &mut done),
            Dialect::OpenAiResponses { .. } => self.push_responses(event, &mut done),
            Dialect::Anthropic { .. } => self.push_anthropic(event, &mut done),
            Dialect::Gemini => self.push_gemini(event, &mut done),
            Dialect::Mcp => {
                if let Ok(calls) = ToolCall::parse(self.dialect, event) {
                    done.extend(calls.into_iter().map(Ok));
                }
            }
        }
        done
    }

    /// [`push`](Self::push) for an event as text: the `data:` of a server-sent event. The
    /// end marker `[DONE]` ends the stream ([`finish`](Self::finish)); text that is not JSON
    /// finishes nothing.
    pub fn push_text(&mut self, data: &str) -> Vec<Result<ToolCall, StreamedCallError>> {
        let data = data.trim();
        if data == "[DONE]" {
            return self.finish();
        }
        match serde_json::from_str::<Value>(data) {
            Ok(event) => self.push(&event),
            Err(_) => Vec::new(),
        }
    }

    /// Ends the stream: calls still open finish now (an error for any whose arguments were
    /// cut off).
    pub fn finish(&mut self) -> Vec<Result<ToolCall, StreamedCallError>> {
        let keys: Vec<String> = self.order.clone();
        let mut done = Vec::new();
        // A Gemini call whose last part never came is cut off, whatever it holds so far.
        if let Some(partial) = self.remove(GEMINI) {
            let tool = partial
                .checked
                .as_ref()
                .map_or(partial.name.as_str(), |c| c.tool.definition().name());
            let error = truncated(tool, partial.size);
            let text = partial.doc.map(|d| d.to_string()).unwrap_or_default();
            done.push(Err(StreamedCallError {
                error,
                call: ToolCall {
                    id: partial.id,
                    name: partial.name,
                    arguments: Value::String(crate::echo::echo(&text).into_owned()),
                },
            }));
        }
        for key in keys {
            self.complete(&key, None, &mut done);
        }
        done
    }

    /// Gemini: whole `functionCall` parts, or (Vertex AI, `streamFunctionCallArguments`) one
    /// call at a time in parts carrying `partialArgs` by JSON Path, each value checked against
    /// the schema at its path once it is whole.
    fn push_gemini(&mut self, event: &Value, done: &mut Vec<Result<ToolCall, StreamedCallError>>) {
        let parts: Vec<&Value> = event
            .get("candidates")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| c.pointer("/content/parts").and_then(Value::as_array))
            .flatten()
            .collect();
        for part in parts {
            let Some(call) = part.get("functionCall") else {
                continue;
            };
            let continues = call.get("willContinue").and_then(Value::as_bool) == Some(true);
            let named = call
                .get("name")
                .and_then(Value::as_str)
                .is_some_and(|n| !n.is_empty());
            // The rest of a call refused while it streamed, up to its last part.
            if self.gemini_dropping && !named {
                self.gemini_dropping = continues;
                continue;
            }
            self.gemini_dropping = false;
            let streamed =
                call.get("partialArgs").is_some() || continues || self.open.contains_key(GEMINI);
            if !streamed {
                let whole = serde_json::json!({"candidates": [{"content": {"parts": [part]}}]});
                if let Ok(calls) = ToolCall::parse(Dialect::Gemini, &whole) {
                    done.extend(calls.into_iter().map(Ok));
                }
                continue;
            }
            let name = call.get("name").filter(|_| !self.open.contains_key(GEMINI));
            self.update(GEMINI, call.get("id"), name, "", done);
            for arg in call
                .get("partialArgs")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if !self.open.contains_key(GEMINI) {
                    break;
                }
                self.gemini_arg(arg, done);
            }
            if call.get("willContinue").and_then(Value::as_bool) != Some(true)
                && let Some(partial) = self.open.get_mut(GEMINI)
            {
                // The call is whole: its arguments, assembled, as text, read from here on
                // as a whole call's.
                let args = partial.doc.take().unwrap_or_else(|| serde_json::json!({}));
                let text = args.to_string();
                partial.checked = None;
                partial.arguments = text.clone();
                partial.scan = Scan::default();
                partial.scan.feed(&text);
                self.complete(GEMINI, None, done);
                // The next call of the stream takes the key again.
                self.closed.remove(GEMINI);
            }
        }
    }

    /// One Gemini `partialArg`: its value set (or a string continued) at its path, under the
    /// tool's input limits (depth, values, keys, items, bytes), and checked against the schema
    /// once whole. The whole-call check runs again each time the arguments have doubled in
    /// size since it last ran, so that the checks of one call cost time linear in its size.
    fn gemini_arg(&mut self, arg: &Value, done: &mut Vec<Result<ToolCall, StreamedCallError>>) {
        let (max, budget, open_bytes) = (self.max_bytes, self.max_open_bytes, self.open_bytes);
        let Some(partial) = self.open.get_mut(GEMINI) else {
            return;
        };
        if partial.broken.is_some() {
            return;
        }
        if !partial.resolved
            && let Some(resolve) = &self.resolve
        {
            partial.resolved = true;
            partial.checked = (resolve.0)(&partial.name).map(Checked::of);
        }
        let limits = match &partial.checked {
            Some(checked) => checked.limits,
            None => InputLimits::DEFAULT,
        };
        let path = arg.get("jsonPath").and_then(Value::as_str).unwrap_or("");
        let Some(pointer) = crate::validate::stream::json_path_to_pointer(path) else {
            partial.broken = Some(format!(
                "an argument came with the path `{}`, which is not a JSON Path to one value",
                crate::echo::echo(path)
            ));
            return;
        };
        let value = if let Some(text) = arg.get("stringValue").and_then(Value::as_str) {
            Value::String(text.to_owned())
        } else if let Some(n) = arg.get("numberValue").filter(|n| n.is_number()) {
            n.clone()
        } else if let Some(b) = arg.get("boolValue").and_then(Value::as_bool) {
            Value::Bool(b)
        } else {
            Value::Null
        };
        let continues = arg.get("willContinue").and_then(Value::as_bool) == Some(true);
        // What arrived, counted against the limits as text would be.
        let size = value.to_string().len() + pointer.len();
        if partial.size + size > max {
            partial.broken = Some(format!(
                "its arguments are longer than the limit of {max} bytes"
            ));
            return;
        }
        if open_bytes + size > budget {
            partial.broken = Some(format!(
                "the response's calls in progress hold more than {budget} bytes of arguments, the stream's limit"
            ));
            return;
        }
        partial.size += size;
        self.open_bytes += size;
        let append = partial.continuing.as_deref() == Some(pointer.as_str());
        let doc = partial.doc.get_or_insert_with(|| serde_json::json!({}));
        let placed = if limits.too_long(partial.size) {
            Err(Placed::Limit(Limit::Bytes, String::new()))
        } else {
            set_at(doc, &pointer, value, append, &limits, &mut partial.nodes)
        };
        if let Err(refused) = placed {
            match refused {
                Placed::Limit(limit, at) => {
                    // Worded as a whole call with these arguments would be.
                    let error = match &partial.checked {
                        Some(checked) => crate::validate::invalid(
                            checked.tool.definition().validation(),
                            vec![limit.field(&limits, at)],
                        ),
                        None => ToolError::invalid_arguments(format!(
                            "The arguments of this call break a limit: {}",
                            limit.field(&limits, at)
                        )),
                    };
                    self.refuse_gemini(error, done);
                }
                Placed::Kind => {
                    partial.broken = Some(format!(
                        "an argument came at `{}`, inside a value of another kind",
                        crate::echo::echo(path)
                    ));
                }
            }
            return;
        }
        partial.continuing = continues.then(|| pointer.clone());
        if continues {
            return;
        }
        // Whole: checked against the schema at its path, in the words a whole call gets.
        let Some(checked) = &partial.checked else {
            return;
        };
        partial.unchecked.push(pointer);
        if partial.size < partial.checked_at.saturating_mul(2) {
            return;
        }
        partial.checked_at = partial.size;
        let pointers = std::mem::take(&mut partial.unchecked);
        let doc = partial.doc.clone().unwrap_or_default();
        let Some(error) = crate::validate::stream::refusal_among(
            checked.tool.definition().validation(),
            doc,
            &pointers,
            &checked.limits,
        ) else {
            return;
        };
        self.refuse_gemini(error, done);
    }

    /// Refuses the Gemini call streaming now: answered now, the rest of its parts dropped.
    fn refuse_gemini(
        &mut self,
        error: ToolError,
        done: &mut Vec<Result<ToolCall, StreamedCallError>>,
    ) {
        if let Some(partial) = self.remove(GEMINI) {
            self.closed.remove(GEMINI);
            self.gemini_dropping = true;
            let text = partial.doc.map(|d| d.to_string()).unwrap_or_default();
            done.push(Err(StreamedCallError {
                call: ToolCall {
                    id: partial.id,
                    name: partial.name,
                    arguments: Value::String(crate::echo::echo(&text).into_owned()),
                },
                error,
            }));
        }
    }

    fn push_chat(&mut self, chunk: &Value, done: &mut Vec<Result<ToolCall, StreamedCallError>>) {
        let Some(choices) = chunk.get("choices").and_then(Value::as_array) else {
            return;
        };
        for choice in choices {
            let choice_index = choice.get("index").and_then(Value::as_u64).unwrap_or(0);
            let deltas = choice
                .pointer("/delta/tool_calls")
                .and_then(Value::as_array)
                .map_or(&[][..], Vec::as_slice);
            for delta in deltas {
                let index = delta.get("index").and_then(Value::as_u64).unwrap_or(0);
                let key = format!("{choice_index}:{index}");
                let function = delta.get("function");
                let piece = function
                    .and_then(|f| f.get("arguments"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                // A call ends at its choice's `finish_reason`, not when its object closes:
                // more text may follow a closed object, and the call must then be refused.
                self.update(
                    &key,
                    delta.get("id"),
                    function.and_then(|f| f.get("name")),
                    piece,
                    done,
                );
            }
            if choice
                .get("finish_reason")
                .is_some_and(|reason| !reason.is_null())
            {
                let prefix = format!("{choice_index}:");
                let keys: Vec<String> = self
                    .order
                    .iter()
                    .filter(|k| k.starts_with(&prefix))
                    .cloned()
                    .collect();
                for key in keys {
                    self.complete(&key, None, done);
                }
            }
        }
    }

    fn push_responses(
        &mut self,
        event: &Value,
        done: &mut Vec<Result<ToolCall, StreamedCallError>>,
    ) {
        let kind = event.get("type").and_then(Value::as_str).unwrap_or("");
        let item = event.get("item");
        let key = event
            .get("item_id")
            .or_else(|| item.and_then(|i| i.get("id")))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| {
                event
                    .get("output_index")
                    .and_then(Value::as_u64)
                    .map(|i| format!("#{i}"))
            });
        let Some(key) = key else { return };
        match kind {
            "response.output_item.added" => {
                let Some(item) = item.filter(|i| i["type"] == "function_call") else {
                    return;
                };
                let piece = item.get("arguments").and_then(Value::as_str).unwrap_or("");
                self.update(&key, item.get("call_id"), item.get("name"), piece, done);
            }
            "response.function_call_arguments.delta" => {
                let piece = event.get("delta").and_then(Value::as_str).unwrap_or("");
                self.update(&key, None, None, piece, done);
            }
            "response.function_call_arguments.done" => {
                let whole = event.get("arguments").and_then(Value::as_str);
                if let Some(name) = event.get("name") {
                    self.update(&key, None, Some(name), "", done);
                }
                self.complete(&key, whole, done);
            }
            "response.output_item.done" => {
                let Some(item) = item.filter(|i| i["type"] == "function_call") else {
                    return;
                };
                if self.open.contains_key(&key) {
                    self.update(&key, item.get("call_id"), None, "", done);
                    let whole = item.get("arguments").and_then(Value::as_str);
                    self.complete(&key, whole, done);
                } else if !self.closed.contains(&key) {
                    // A stream that only sends whole items.
                    let whole = item.get("arguments").and_then(Value::as_str);
                    self.update(&key, item.get("call_id"), item.get("name"), "", done);
                    self.complete(&key, whole, done);
                }
            }
            _ => {}
        }
    }

    fn push_anthropic(
        &mut self,
        event: &Value,
        done: &mut Vec<Result<ToolCall, StreamedCallError>>,
    ) {
        let kind = event.get("type").and_then(Value::as_str).unwrap_or("");
        let Some(index) = event.get("index").and_then(Value::as_u64) else {
            return;
        };
        let key = index.to_string();
        match kind {
            "content_block_start" => {
                let Some(block) = event
                    .get("content_block")
                    .filter(|b| b["type"] == "tool_use")
                else {
                    // Another kind of block (text, or a tool the provider runs itself, such
                    // as the code execution a program runs in): its input deltas are not a
                    // call's arguments.
                    self.closed.insert(key);
                    return;
                };
                self.update(&key, block.get("id"), block.get("name"), "", done);
                // A block may arrive with its whole input (no deltas follow then).
                if let Some(input) = block
                    .get("input")
                    .filter(|i| i.as_object().is_some_and(|o| !o.is_empty()))
                {
                    let text = input.to_string();
                    self.update(&key, None, None, &text, done);
                }
            }
            "content_block_delta" => {
                let Some(piece) = event
                    .get("delta")
                    .filter(|d| d["type"] == "input_json_delta")
                    .and_then(|d| d.get("partial_json"))
                    .and_then(Value::as_str)
                else {
                    return;
                };
                self.update(&key, None, None, piece, done);
            }
            // A block without input deltas has an empty object for input (see `complete`).
            "content_block_stop" => self.complete(&key, None, done),
            _ => {}
        }
    }

    /// Adds what an event says about the call `key`: its id, its name, a piece of its
    /// arguments. A piece for a call already given out is dropped. An id or a name that
    /// contradicts the one the call already has breaks the call (OpenAI Chat alone sends a
    /// name in pieces, which are joined).
    fn update(
        &mut self,
        key: &str,
        id: Option<&Value>,
        name: Option<&Value>,
        piece: &str,
        done: &mut Vec<Result<ToolCall, StreamedCallError>>,
    ) {
        if self.closed.contains(key) {
            if !piece.trim().is_empty() {
                tracing::debug!(key, "a piece of a streamed call that has ended was dropped");
            }
            return;
        }
        if self.overflowed {
            return;
        }
        if !self.open.contains_key(key) {
            if self.open.len() + self.closed.len() >= MAX_CALLS {
                self.overflowed = true;
                done.push(Err(broken(
                    id.and_then(Value::as_str).map(str::to_owned),
                    name.and_then(Value::as_str).unwrap_or(""),
                    name.and_then(Value::as_str).unwrap_or(""),
                    "",
                    &format!(
                        "the response has more than {MAX_CALLS} calls; the rest of it was dropped"
                    ),
                )));
                return;
            }
            if self.open.len() >= MAX_OPEN {
                self.closed.insert(key.to_owned());
                done.push(Err(broken(
                    id.and_then(Value::as_str).map(str::to_owned),
                    name.and_then(Value::as_str).unwrap_or(""),
                    name.and_then(Value::as_str).unwrap_or(""),
                    "",
                    &format!("the response opened more than {MAX_OPEN} calls at once"),
                )));
                return;
            }
            self.open.insert(key.to_owned(), Partial::default());
            self.order.push(key.to_owned());
        }
        let joins_names = matches!(self.dialect, Dialect::OpenAiChat { .. });
        let (max, budget) = (self.max_bytes, self.max_open_bytes);
        let Some(partial) = self.open.get_mut(key) else {
            return;
        };
        if let Some(id) = id.and_then(Value::as_str).filter(|id| !id.is_empty()) {
            match &partial.id {
                None => partial.id = Some(id.to_owned()),
                Some(known) if known == id => {}
                Some(known) => {
                    let why = format!(
                        "its id changed from `{}` to `{}` while it streamed",
                        crate::echo::echo(known),
                        crate::echo::echo(id)
                    );
                    partial.broken.get_or_insert(why);
                }
            }
        }
        if let Some(name) = name.and_then(Value::as_str).filter(|n| !n.is_empty()) {
            if partial.name.is_empty() || (joins_names && partial.name != name) {
                // Names arrive whole; OpenAI Chat's may come in pieces, which are joined.
                if partial.name.len() + name.len() <= MAX_NAME {
                    partial.name.push_str(name);
                }
            } else if partial.name != name {
                let why = format!(
                    "its name changed from `{}` to `{}` while it streamed",
                    crate::echo::echo(&partial.name),
                    crate::echo::echo(name)
                );
                partial.broken.get_or_insert(why);
            }
        }
        if partial.broken.is_some() || piece.is_empty() {
            return;
        }
        if partial.size + piece.len() > max {
            partial.broken = Some(format!(
                "its arguments are longer than the limit of {max} bytes"
            ));
            return;
        }
        if self.open_bytes + piece.len() > budget {
            partial.broken = Some(format!(
                "the response's calls in progress hold more than {budget} bytes of arguments, the stream's limit"
            ));
            return;
        }
        self.open_bytes += piece.len();
        partial.size += piece.len();
        partial.scan.feed(piece);
        // Checked as it arrives, once the tool is known: what came before the name first.
        let fed: std::borrow::Cow<'_, str> = if partial.resolved {
            std::borrow::Cow::Borrowed(piece)
        } else if let Some(resolve) = &self.resolve
            && !partial.name.is_empty()
        {
            partial.resolved = true;
            partial.checked = (resolve.0)(&partial.name).map(Checked::of);
            let mut before = std::mem::take(&mut partial.arguments);
            before.push_str(piece);
            std::borrow::Cow::Owned(before)
        } else {
            partial.arguments.push_str(piece);
            return;
        };
        let Some(checked) = &mut partial.checked else {
            partial.arguments.push_str(&fed);
            return;
        };
        if let Err(error) = checked.parser.push(
            checked.tool.definition().validation(),
            &fed,
            &checked.limits,
        ) {
            // Refused as soon as no completion could be valid: answered now, the rest of
            // its stream dropped.
            let Some(mut partial) = self.remove(key) else {
                return;
            };
            self.closed.insert(key.to_owned());
            let (id, name) = (partial.id.take(), std::mem::take(&mut partial.name));
            let text = partial.into_text();
            done.push(Err(StreamedCallError {
                call: ToolCall {
                    id,
                    name,
                    arguments: Value::String(crate::echo::echo(&text).into_owned()),
                },
                error,
            }));
        }
    }

    /// Takes the call `key` out of the open ones.
    fn remove(&mut self, key: &str) -> Option<Partial> {
        let partial = self.open.remove(key)?;
        self.order.retain(|k| k != key);
        self.open_bytes = self.open_bytes.saturating_sub(partial.size);
        Some(partial)
    }

    /// Gives out the call `key`: its arguments checked to be one JSON object. `whole` is the
    /// arguments as the provider sent them whole at the end: read as the pieces were when
    /// no piece came, and otherwise required to be the same text.
    fn complete(
        &mut self,
        key: &str,
        whole: Option<&str>,
        done: &mut Vec<Result<ToolCall, StreamedCallError>>,
    ) {
        if let Some(whole) = whole
            && let Some(partial) = self.open.get_mut(key)
        {
            if partial.size == 0 {
                self.update(key, None, None, whole, done);
            } else if partial.text() != whole && partial.broken.is_none() {
                partial.broken = Some(
                    "the arguments its last event carried differ from the pieces that streamed"
                        .to_owned(),
                );
            }
        }
        let Some(mut partial) = self.remove(key) else {
            return;
        };
        self.closed.insert(key.to_owned());
        let (id, name, broken_why) = (
            partial.id.take(),
            std::mem::take(&mut partial.name),
            partial.broken.take(),
        );
        let (closed, trailing) = (partial.scan.closed, partial.scan.trailing);
        // Errors name the tool as a refusal of its arguments does: by its own name, once known.
        let tool = partial
            .checked
            .as_ref()
            .map_or_else(|| name.clone(), |c| c.tool.definition().name().to_owned());
        let mut text = partial.into_text();
        if let Some(why) = broken_why {
            done.push(Err(broken(id, &name, &tool, &text, &why)));
            return;
        }
        let problem = if text.trim().is_empty() {
            // OpenAI sends `""`, Anthropic no delta, for a tool without parameters.
            text = "{}".to_owned();
            None
        } else if trailing {
            Some("there is text after the arguments' closing brace".to_owned())
        } else if !closed {
            // Cut off, whatever the provider said about how the stream ended: never run.
            done.push(Err(StreamedCallError {
                error: truncated(&tool, text.len()),
                call: ToolCall {
                    id,
                    name,
                    arguments: Value::String(crate::echo::echo(&text).into_owned()),
                },
            }));
            return;
        } else {
            match serde_json::from_str::<serde::de::IgnoredAny>(&text) {
                Ok(_) if text.trim_start().starts_with('{') => None,
                Ok(_) => Some("the arguments are not a JSON object".to_owned()),
                Err(err) => Some(format!("the arguments are not valid JSON ({err})")),
            }
        };
        match problem {
            Some(why) => done.push(Err(broken(id, &name, &tool, &text, &why))),
            None => done.push(Ok(ToolCall {
                id,
                name,
                arguments: Value::String(text),
            })),
        }
    }
}

/// The error for a call whose arguments did not come through.
/// A call whose arguments did not arrive whole: `name` as the provider sent it (what goes back
/// into the history), `tool` as its errors name it (the tool's own name when the stream knows
/// the tool, as a refusal of its arguments does; else `name`).
fn broken(
    id: Option<String>,
    name: &str,
    tool: &str,
    arguments: &str,
    why: &str,
) -> StreamedCallError {
    let shown = crate::echo::echo(tool);
    StreamedCallError {
        call: ToolCall {
            id,
            name: name.to_owned(),
            arguments: Value::String(crate::echo::echo(arguments).into_owned()),
        },
        error: ToolError::invalid_arguments(format!(
            "The arguments of this `{shown}` call did not arrive whole: {why}. Call the tool again with complete JSON arguments."
        )),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{CallStream, MAX_CALLS};
    use crate::dialect::Dialect;

    #[test]
    fn what_a_stream_remembers_is_bounded() {
        let mut stream = CallStream::new(Dialect::Anthropic { strict: false });
        let (mut ok, mut errors) = (0, 0);
        for index in 0..MAX_CALLS as u64 + 500 {
            for event in [
                json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": format!("toolu_{index}"), "name": "ping", "input": {}}}),
                json!({"type": "content_block_stop", "index": index}),
            ] {
                for result in stream.push(&event) {
                    match result {
                        Ok(_) => ok += 1,
                        Err(_) => errors += 1,
                    }
                }
            }
        }
        assert_eq!(
            (ok, errors),
            (MAX_CALLS, 1),
            "one error, then the rest dropped"
        );
        assert!(stream.closed.len() <= MAX_CALLS);
        assert!(stream.finish().is_empty());
    }
}

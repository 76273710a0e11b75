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
use crate::limits::InputLimits;
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
    arguments: String,
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
    /// Bytes of Gemini's streamed arguments so far.
    received: usize,
}

/// The key of Gemini's call whose arguments are streaming (one at a time).
const GEMINI: &str = "gemini";

/// Sets `value` at `pointer` in `doc`, making the objects and arrays on the way (`append`:
/// a string continued); `false` when the way goes through another kind of value.
fn set_at(doc: &mut Value, pointer: &str, value: Value, append: bool) -> bool {
    let mut at = doc;
    for segment in pointer.split('/').skip(1) {
        let key = segment.replace("~1", "/").replace("~0", "~");
        let index = key.parse::<usize>().ok();
        if at.is_null() {
            *at = match index {
                Some(_) => Value::Array(Vec::new()),
                None => Value::Object(serde_json::Map::new()),
            };
        }
        at = match (at, index) {
            (Value::Object(map), _) => map.entry(key).or_insert(Value::Null),
            (Value::Array(items), Some(i)) if i <= items.len() + 1024 => {
                while items.len() <= i {
                    items.push(Value::Null);
                }
                &mut items[i]
            }
            _ => return false,
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
    true
}

/// Where a JSON text stands, read piece by piece: whether its first value has closed.
#[derive(Debug, Default)]
struct Scan {
    depth: usize,
    started: bool,
    in_string: bool,
    escaped: bool,
    /// The first value closed; anything but whitespace after it is an error.
    closed: bool,
    trailing: bool,
}

impl Scan {
    fn feed(&mut self, text: &str) {
        for byte in text.bytes() {
            if self.closed {
                if !byte.is_ascii_whitespace() {
                    self.trailing = true;
                }
                continue;
            }
            if self.in_string {
                match byte {
                    _ if self.escaped => self.escaped = false,
                    b'\\' => self.escaped = true,
                    b'"' => self.in_string = false,
                    _ => {}
                }
                continue;
            }
            match byte {
                b'"' => self.in_string = true,
                b'{' | b'[' => {
                    self.started = true;
                    self.depth += 1;
                }
                b'}' | b']' => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.started && self.depth == 0 {
                        self.closed = true;
                    }
                }
                _ => {}
            }
        }
    }
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
        if let Some(partial) = self.open.remove(GEMINI) {
            self.order.retain(|k| k != GEMINI);
            let text = partial.doc.map(|d| d.to_string()).unwrap_or_default();
            done.push(Err(StreamedCallError {
                error: truncated(&partial.name, partial.received),
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
                // The call is whole: its arguments, assembled, as text.
                let args = partial.doc.take().unwrap_or_else(|| serde_json::json!({}));
                let text = args.to_string();
                partial.arguments = text.clone();
                partial.scan = Scan::default();
                partial.scan.feed(&text);
                self.complete(GEMINI, None, done);
                // The next call of the stream takes the key again.
                self.closed.remove(GEMINI);
            }
        }
    }

    /// One Gemini `partialArg`: its value set (or a string continued) at its path, and
    /// checked once whole.
    fn gemini_arg(&mut self, arg: &Value, done: &mut Vec<Result<ToolCall, StreamedCallError>>) {
        let max = self.max_bytes;
        let Some(partial) = self.open.get_mut(GEMINI) else {
            return;
        };
        if partial.broken.is_some() {
            return;
        }
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
        // What arrived, counted against the limit as text would be.
        let size = value.to_string().len() + pointer.len();
        if partial.received + size > max {
            partial.broken = Some(format!(
                "its arguments are longer than the limit of {max} bytes"
            ));
            return;
        }
        partial.received += size;
        let append = partial.continuing.as_deref() == Some(pointer.as_str());
        let doc = partial.doc.get_or_insert_with(|| serde_json::json!({}));
        if !set_at(doc, &pointer, value, append) {
            partial.broken = Some(format!(
                "an argument came at `{}`, inside a value of another kind",
                crate::echo::echo(path)
            ));
            return;
        }
        partial.continuing = continues.then(|| pointer.clone());
        if continues {
            return;
        }
        if !partial.resolved
            && let Some(resolve) = &self.resolve
        {
            partial.resolved = true;
            partial.checked = (resolve.0)(&partial.name).map(Checked::of);
        }
        // Whole: checked against the schema at its path, in the words a whole call gets.
        let Some(checked) = &partial.checked else {
            return;
        };
        let doc = partial.doc.clone().unwrap_or_default();
        let Some(error) = crate::validate::stream::refusal_at(
            checked.tool.definition().validation(),
            doc.clone(),
            &pointer,
            &checked.limits,
        ) else {
            return;
        };
        if let Some(partial) = self.open.remove(GEMINI) {
            self.order.retain(|k| k != GEMINI);
            self.closed.remove(GEMINI);
            self.gemini_dropping = true;
            done.push(Err(StreamedCallError {
                call: ToolCall {
                    id: partial.id,
                    name: partial.name,
                    arguments: Value::String(crate::echo::echo(&doc.to_string()).into_owned()),
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
                self.update(
                    &key,
                    delta.get("id"),
                    function.and_then(|f| f.get("name")),
                    piece,
                    done,
                );
                if self.open.get(&key).is_some_and(|p| p.scan.closed) {
                    self.complete(&key, None, done);
                }
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
    /// arguments. A piece for a call already given out is dropped.
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
                    "",
                    &format!("the response opened more than {MAX_OPEN} calls at once"),
                )));
                return;
            }
            self.open.insert(key.to_owned(), Partial::default());
            self.order.push(key.to_owned());
        }
        let max = self.max_bytes;
        let Some(partial) = self.open.get_mut(key) else {
            return;
        };
        if let Some(id) = id.and_then(Value::as_str).filter(|id| !id.is_empty()) {
            partial.id = Some(id.to_owned());
        }
        if let Some(name) = name.and_then(Value::as_str) {
            // Names arrive whole; a stream that splits one is joined.
            if partial.name.len() + name.len() <= 1024 {
                partial.name.push_str(name);
            }
        }
        if partial.broken.is_some() || piece.is_empty() {
            return;
        }
        if partial.arguments.len() + piece.len() > max {
            partial.broken = Some(format!(
                "its arguments are longer than the limit of {max} bytes"
            ));
            return;
        }
        partial.arguments.push_str(piece);
        partial.scan.feed(piece);
        // Checked as it arrives, once the tool is known: what came before the name first.
        let fed = if partial.resolved {
            piece
        } else if let Some(resolve) = &self.resolve
            && !partial.name.is_empty()
        {
            partial.resolved = true;
            partial.checked = (resolve.0)(&partial.name).map(Checked::of);
            partial.arguments.as_str()
        } else {
            return;
        };
        let Some(checked) = &mut partial.checked else {
            return;
        };
        if let Err(error) =
            checked
                .parser
                .push(checked.tool.definition().validation(), fed, &checked.limits)
        {
            // Refused as soon as no completion could be valid: answered now, the rest of
            // its stream dropped.
            let Some(partial) = self.open.remove(key) else {
                return;
            };
            self.order.retain(|k| k != key);
            self.closed.insert(key.to_owned());
            done.push(Err(StreamedCallError {
                call: ToolCall {
                    id: partial.id,
                    name: partial.name,
                    arguments: Value::String(crate::echo::echo(&partial.arguments).into_owned()),
                },
                error,
            }));
        }
    }

    /// Gives out the call `key`: its arguments (`whole` when the provider sent them whole at
    /// the end) checked to be one JSON object.
    fn complete(
        &mut self,
        key: &str,
        whole: Option<&str>,
        done: &mut Vec<Result<ToolCall, StreamedCallError>>,
    ) {
        let Some(mut partial) = self.open.remove(key) else {
            return;
        };
        self.order.retain(|k| k != key);
        self.closed.insert(key.to_owned());
        if let Some(whole) = whole.filter(|w| w.len() <= self.max_bytes) {
            partial.arguments = whole.to_owned();
            partial.scan = Scan::default();
            partial.scan.feed(whole);
        }
        if let Some(why) = partial.broken {
            done.push(Err(broken(
                partial.id,
                &partial.name,
                &partial.arguments,
                &why,
            )));
            return;
        }
        let problem = if partial.arguments.trim().is_empty() {
            // OpenAI sends `""`, Anthropic no delta, for a tool without parameters.
            partial.arguments = "{}".to_owned();
            None
        } else if partial.scan.trailing {
            Some("there is text after the arguments' closing brace".to_owned())
        } else if !partial.scan.closed {
            // Cut off, whatever the provider said about how the stream ended: never run.
            let bytes = partial.arguments.len();
            done.push(Err(StreamedCallError {
                error: truncated(&partial.name, bytes),
                call: ToolCall {
                    id: partial.id,
                    name: partial.name,
                    arguments: Value::String(crate::echo::echo(&partial.arguments).into_owned()),
                },
            }));
            return;
        } else {
            match serde_json::from_str::<serde::de::IgnoredAny>(&partial.arguments) {
                Ok(_) if partial.arguments.trim_start().starts_with('{') => None,
                Ok(_) => Some("the arguments are not a JSON object".to_owned()),
                Err(err) => Some(format!("the arguments are not valid JSON ({err})")),
            }
        };
        match problem {
            Some(why) => done.push(Err(broken(
                partial.id,
                &partial.name,
                &partial.arguments,
                &why,
            ))),
            None => done.push(Ok(ToolCall {
                id: partial.id,
                name: partial.name,
                arguments: Value::String(partial.arguments),
            })),
        }
    }
}

/// The error for a call whose arguments did not come through.
fn broken(id: Option<String>, name: &str, arguments: &str, why: &str) -> StreamedCallError {
    let shown = crate::echo::echo(name);
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

//! Arguments read while they stream: a push parser per call. Each piece is read once, in time
//! proportional to its length; a call is refused as soon as no completion of what arrived
//! could be valid (an unknown key, a wrong type, an enum value no value starts with, a length,
//! range or count already past its limit, broken JSON), with the words a whole call would get;
//! and the parser, not the provider's end-of-stream signal, decides whether the arguments
//! ended.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::{Validation, invalid, read_once, text_document};
use crate::arguments::Arguments;
use crate::error::{FieldError, ToolError};
use crate::json::number::compare_json_numbers;
use crate::json::text::escape;
use crate::limits::{InputLimits, Limit};

/// The kinds of JSON value, as a set.
const OBJECT: u8 = 1;
const ARRAY: u8 = 2;
const STRING: u8 = 4;
const NUMBER: u8 = 8;
const INTEGER: u8 = 16;
const BOOLEAN: u8 = 32;
const NULL: u8 = 64;

/// Where the text stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lex {
    /// A value must come (the start, after `:`, after `,` in an array).
    Value,
    /// After `[`: a value or `]`.
    ValueOrClose,
    /// After `{`: a key or `}`.
    KeyOrClose,
    /// After `,` in an object: a key.
    Key,
    /// After a key: `:`.
    Colon,
    /// After a value in a container: `,` or the closer.
    After,
    /// In a string (a key's or a value's).
    Str { key: bool },
    /// After `\` in a string.
    Escape { key: bool },
    /// In `\uXXXX`: how many hex digits are left, and the code so far.
    Unicode { key: bool, left: u8, code: u32 },
    /// In a number.
    Number,
    /// In `true`, `false` or `null`.
    Literal,
    /// The arguments' object has closed: only whitespace may follow.
    Done,
}

/// A container being read.
#[derive(Debug)]
enum Frame {
    Object {
        map: Map<String, Value>,
        /// The key whose value comes next.
        key: Option<String>,
        /// The schema of this object (a JSON pointer into the root schema), when one schema
        /// alone describes it.
        schema: Option<String>,
        pointer: String,
    },
    Array {
        items: Vec<Value>,
        schema: Option<String>,
        pointer: String,
    },
}

/// The scalar being read: its text (a number, a literal) or its decoded text (a string), with
/// its pointer and its schema.
#[derive(Debug, Default)]
struct Scalar {
    text: String,
    chars: usize,
    /// A high surrogate waiting for its low half.
    surrogate: Option<u32>,
    pointer: String,
    schema: Option<String>,
    /// The value's kind is not one its schema takes: refused once it is whole.
    mismatch: bool,
}

/// The push parser of one call's arguments.
#[derive(Debug)]
pub(crate) struct Parser {
    root: Arc<Value>,
    lex: Lex,
    stack: Vec<Frame>,
    scalar: Scalar,
    /// The whole text so far (bounded by the byte limit).
    text: String,
    /// The arguments' object, once closed.
    done: Option<Value>,
    nodes: usize,
    max_members: usize,
    /// What the schema says at a pointer, looked up once per parser: the kinds a value may
    /// take, the one schema for a value of a kind, a property's schema in an object.
    kinds_seen: std::collections::HashMap<String, Option<u8>>,
    chosen_seen: std::collections::HashMap<(String, u8), Option<String>>,
    properties_seen:
        std::collections::HashMap<String, std::collections::HashMap<String, Option<String>>>,
    /// The refusal, once the call is refused: nothing more is read.
    refused: Option<ToolError>,
}

/// What the parser found wrong, and where: put in words by the whole-call reader.
enum Found {
    /// Broken JSON, a repeated key or a limit: the reader's verdict on the text so far.
    Text(Option<(Limit, String)>),
    /// A violation of the schema at this pointer.
    Schema(String),
}

impl Parser {
    pub(crate) fn new(def: &Validation) -> Self {
        Self {
            root: Arc::clone(def.input_schema_arc()),
            lex: Lex::Value,
            stack: Vec::new(),
            scalar: Scalar::default(),
            text: String::new(),
            done: None,
            nodes: 0,
            max_members: usize::MAX,
            kinds_seen: std::collections::HashMap::new(),
            chosen_seen: std::collections::HashMap::new(),
            properties_seen: std::collections::HashMap::new(),
            refused: None,
        }
    }

    /// Whether the arguments' object has closed.
    pub(crate) fn is_complete(&self) -> bool {
        self.done.is_some()
    }

    /// The text so far.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// Reads one piece. `Err` when the call is refused (then and on every later piece).
    pub(crate) fn push(
        &mut self,
        def: &Validation,
        piece: &str,
        limits: &InputLimits,
    ) -> Result<(), ToolError> {
        if let Some(err) = &self.refused {
            return Err(err.clone());
        }
        let start = self.text.len();
        if limits.too_long(start + piece.len()) {
            let room = floor_char(piece, limits.max_bytes.saturating_sub(start));
            self.text.push_str(&piece[..room]);
            let err = invalid(def, vec![Limit::Bytes.field(limits, String::new())]);
            self.refused = Some(err.clone());
            return Err(err);
        }
        self.text.push_str(piece);
        for (i, c) in piece.char_indices() {
            if let Err(found) = self.step(c, limits)
                && let Some(err) = self.refusal(def, found, start + i + c.len_utf8(), limits)
            {
                self.refused = Some(err.clone());
                return Err(err);
            }
        }
        // A string in progress that no completion can make valid.
        if matches!(
            self.lex,
            Lex::Str { key: false } | Lex::Escape { key: false } | Lex::Unicode { key: false, .. }
        ) && let Some(schema) = self.scalar.schema.clone()
            && !self.string_prefix_fits(&schema)
        {
            let at = self.scalar.pointer.clone();
            if let Some(err) = self.refusal(def, Found::Schema(at), self.text.len(), limits) {
                self.refused = Some(err.clone());
                return Err(err);
            }
        }
        Ok(())
    }

    /// Reads `text` for its shape alone (schema violations are passed over): `false` when it
    /// is not the beginning of one JSON value.
    pub(crate) fn push_shape(&mut self, text: &str, limits: &InputLimits) -> bool {
        self.text.push_str(text);
        for c in text.chars() {
            if let Err(Found::Text(_)) = self.step(c, limits) {
                return false;
            }
        }
        true
    }

    /// The arguments once the stream ended: their canonical form, or why they are refused.
    /// Arguments that did not end are `None`.
    pub(crate) fn finish(
        &self,
        def: &Validation,
        limits: &InputLimits,
    ) -> Option<Result<super::canonical::Checked, ToolError>> {
        if self.text.trim().is_empty() {
            // OpenAI sends `""`, Anthropic nothing, for a tool without parameters.
            return Some(read_once(
                def,
                &Arguments::Text(Cow::Borrowed("{}")),
                limits,
            ));
        }
        if let Some(err) = &self.refused {
            return Some(Err(err.clone()));
        }
        self.done.as_ref()?;
        Some(read_once(
            def,
            &Arguments::Text(Cow::Borrowed(&self.text)),
            limits,
        ))
    }

    /// The words for what was found, or `None` when the whole-call reader does not confirm
    /// it (then the call goes on: a refusal is never a guess). `cut` is how much of the text
    /// the reader reads: up to the character at fault.
    fn refusal(
        &self,
        def: &Validation,
        found: Found,
        cut: usize,
        limits: &InputLimits,
    ) -> Option<ToolError> {
        match found {
            Found::Text(limit) => {
                let text = &self.text[..floor_char(&self.text, cut)];
                match text_document(def, text, limits, true) {
                    Err(err) => Some(err),
                    Ok(_) => Some(match limit {
                        Some((limit, pointer)) => invalid(def, vec![limit.field(limits, pointer)]),
                        None => invalid(
                            def,
                            vec![FieldError::new(
                                "",
                                "the arguments are not valid JSON; send one JSON object whose keys are the parameter names",
                            )],
                        ),
                    }),
                }
            }
            Found::Schema(at) => refusal_at(def, self.partial(), &at, limits),
        }
    }

    /// What has arrived, as a value: open containers closed, a string in progress as far as it
    /// came, a key without its value left out.
    pub(crate) fn partial(&self) -> Value {
        if let Some(done) = &self.done {
            return done.clone();
        }
        let mut inner: Option<Value> = match self.lex {
            Lex::Str { key: false }
            | Lex::Escape { key: false }
            | Lex::Unicode { key: false, .. } => Some(Value::String(self.scalar.text.clone())),
            _ => None,
        };
        for frame in self.stack.iter().rev() {
            inner = Some(match frame {
                Frame::Object { map, key, .. } => {
                    let mut map = map.clone();
                    if let (Some(key), Some(value)) = (key, inner.take()) {
                        map.insert(key.clone(), value);
                    }
                    Value::Object(map)
                }
                Frame::Array { items, .. } => {
                    let mut items = items.clone();
                    items.extend(inner.take());
                    Value::Array(items)
                }
            });
        }
        inner.unwrap_or_else(|| Value::Object(Map::new()))
    }

    /// Reads one character.
    fn step(&mut self, c: char, limits: &InputLimits) -> Result<(), Found> {
        let syntax = || Found::Text(None);
        match self.lex {
            Lex::Done => {
                if !c.is_whitespace() {
                    return Err(syntax());
                }
            }
            Lex::Str { key } => match c {
                '"' => self.end_string(key)?,
                '\\' => self.lex = Lex::Escape { key },
                c if (c as u32) < 0x20 => return Err(syntax()),
                c => self.push_char(c),
            },
            Lex::Escape { key } => {
                let decoded = match c {
                    '"' => '"',
                    '\\' => '\\',
                    '/' => '/',
                    'b' => '\u{8}',
                    'f' => '\u{c}',
                    'n' => '\n',
                    'r' => '\r',
                    't' => '\t',
                    'u' => {
                        self.lex = Lex::Unicode {
                            key,
                            left: 4,
                            code: 0,
                        };
                        return Ok(());
                    }
                    _ => return Err(syntax()),
                };
                self.push_char(decoded);
                self.lex = Lex::Str { key };
            }
            Lex::Unicode { key, left, code } => {
                let digit = c.to_digit(16).ok_or_else(syntax)?;
                let code = code * 16 + digit;
                if left > 1 {
                    self.lex = Lex::Unicode {
                        key,
                        left: left - 1,
                        code,
                    };
                    return Ok(());
                }
                self.lex = Lex::Str { key };
                match (self.scalar.surrogate.take(), code) {
                    (None, 0xD800..=0xDBFF) => self.scalar.surrogate = Some(code),
                    (Some(high), 0xDC00..=0xDFFF) => {
                        let joined = 0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00);
                        self.push_char(char::from_u32(joined).unwrap_or('\u{FFFD}'));
                    }
                    (_, code) => self.push_char(char::from_u32(code).unwrap_or('\u{FFFD}')),
                }
            }
            Lex::Number => {
                if matches!(c, '0'..='9' | '-' | '+' | '.' | 'e' | 'E') {
                    self.scalar.text.push(c);
                    if self.scalar.text.len() > 4096 {
                        return Err(syntax());
                    }
                } else {
                    self.end_number()?;
                    return self.step(c, limits);
                }
            }
            Lex::Literal => {
                self.scalar.text.push(c);
                let word = &self.scalar.text;
                let whole = ["true", "false", "null"]
                    .into_iter()
                    .find(|w| w.starts_with(word.as_str()))
                    .ok_or_else(syntax)?;
                if whole.len() == word.len() {
                    let value = match whole {
                        "true" => Value::Bool(true),
                        "false" => Value::Bool(false),
                        _ => Value::Null,
                    };
                    let wrong = self.scalar.mismatch;
                    self.end_scalar(value, wrong)?;
                }
            }
            Lex::Colon => match c {
                ':' => self.lex = Lex::Value,
                c if c.is_whitespace() => {}
                _ => return Err(syntax()),
            },
            Lex::KeyOrClose | Lex::Key => match c {
                '"' => {
                    self.scalar = Scalar::default();
                    self.lex = Lex::Str { key: true };
                }
                '}' if self.lex == Lex::KeyOrClose => self.close()?,
                c if c.is_whitespace() => {}
                _ => return Err(syntax()),
            },
            Lex::After => match (c, self.stack.last()) {
                (',', Some(Frame::Object { .. })) => self.lex = Lex::Key,
                (',', Some(Frame::Array { .. })) => self.lex = Lex::Value,
                ('}', Some(Frame::Object { .. })) | (']', Some(Frame::Array { .. })) => {
                    self.close()?
                }
                (c, _) if c.is_whitespace() => {}
                _ => return Err(syntax()),
            },
            Lex::Value | Lex::ValueOrClose => {
                if c.is_whitespace() {
                    return Ok(());
                }
                if c == ']' && self.lex == Lex::ValueOrClose {
                    return self.close();
                }
                let kind = match c {
                    '{' => OBJECT,
                    '[' => ARRAY,
                    '"' => STRING,
                    '-' | '0'..='9' => NUMBER,
                    't' | 'f' => BOOLEAN,
                    'n' => NULL,
                    _ => return Err(syntax()),
                };
                self.start_value(c, kind, limits)?;
            }
        }
        Ok(())
    }

    fn push_char(&mut self, c: char) {
        if let Some(high) = self.scalar.surrogate.take() {
            // A high surrogate not followed by its low half.
            let _ = high;
            self.scalar.text.push('\u{FFFD}');
            self.scalar.chars += 1;
        }
        self.scalar.text.push(c);
        self.scalar.chars += 1;
    }

    /// The pointer and schema of the value that starts now.
    fn next_slot(&mut self) -> (String, Option<String>) {
        if let Some(Frame::Object {
            key: Some(key),
            schema: Some(object),
            ..
        }) = self.stack.last()
            && !self
                .properties_seen
                .get(object.as_str())
                .is_some_and(|seen| seen.contains_key(key.as_str()))
        {
            let (object, key) = (object.clone(), key.clone());
            let found = self.property_schema(&object, &key);
            self.properties_seen
                .entry(object)
                .or_default()
                .insert(key, found);
        }
        match self.stack.last() {
            None => (String::new(), Some(String::new())),
            Some(Frame::Object {
                key,
                schema,
                pointer,
                ..
            }) => {
                let key = key.as_deref().unwrap_or_default();
                let at = format!("{pointer}/{}", escape(key));
                let schema = schema.as_deref().and_then(|s| {
                    self.properties_seen
                        .get(s)
                        .and_then(|seen| seen.get(key))
                        .cloned()
                        .flatten()
                });
                (at, schema)
            }
            Some(Frame::Array {
                items,
                schema,
                pointer,
            }) => {
                let at = format!("{pointer}/{}", items.len());
                let schema = schema.as_deref().and_then(|s| {
                    let node = self.node(s)?;
                    node.get("items")
                        .filter(|i| i.is_object())
                        .map(|_| format!("{s}/items"))
                });
                (at, schema)
            }
        }
    }

    fn start_value(&mut self, c: char, kind: u8, limits: &InputLimits) -> Result<(), Found> {
        self.max_members = limits.max_members;
        let (at, schema) = self.next_slot();
        self.nodes += 1;
        if self.nodes > limits.max_nodes {
            return Err(Found::Text(Some((Limit::Nodes, at))));
        }
        if let Some(Frame::Array { items, pointer, .. }) = self.stack.last()
            && items.len() >= limits.max_items
        {
            return Err(Found::Text(Some((Limit::Items, pointer.clone()))));
        }
        // The kind must be one the schema takes (a number may still be an integer).
        let mismatch = schema
            .as_deref()
            .and_then(|s| self.kinds_cached(s))
            .is_some_and(|kinds| {
                if kind == NUMBER {
                    kinds & (NUMBER | INTEGER) == 0
                } else {
                    kinds & kind == 0
                }
            });
        let chosen = if mismatch {
            None
        } else {
            schema.as_deref().and_then(|s| self.select_cached(s, kind))
        };
        match c {
            '{' | '[' => {
                if self.stack.len() >= limits.max_depth {
                    return Err(Found::Text(Some((Limit::Depth, at))));
                }
                self.stack.push(if c == '{' {
                    Frame::Object {
                        map: Map::new(),
                        key: None,
                        schema: chosen,
                        pointer: at.clone(),
                    }
                } else {
                    Frame::Array {
                        items: Vec::new(),
                        schema: chosen,
                        pointer: at.clone(),
                    }
                });
                self.lex = if c == '{' {
                    Lex::KeyOrClose
                } else {
                    Lex::ValueOrClose
                };
                if mismatch {
                    // Refused as it opens, worded with the container as far as it came.
                    return Err(Found::Schema(at));
                }
            }
            '"' => {
                self.scalar = Scalar {
                    pointer: at,
                    schema: chosen,
                    mismatch,
                    ..Scalar::default()
                };
                self.lex = Lex::Str { key: false };
            }
            c => {
                self.scalar = Scalar {
                    pointer: at,
                    schema: chosen,
                    mismatch,
                    ..Scalar::default()
                };
                self.scalar.text.push(c);
                self.lex = if kind == NUMBER {
                    Lex::Number
                } else {
                    Lex::Literal
                };
            }
        }
        Ok(())
    }

    fn end_string(&mut self, key: bool) -> Result<(), Found> {
        if self.scalar.surrogate.take().is_some() {
            self.scalar.text.push('\u{FFFD}');
        }
        let text = std::mem::take(&mut self.scalar.text);
        if !key {
            let wrong = self.scalar.mismatch
                || self
                    .scalar
                    .schema
                    .as_deref()
                    .is_some_and(|schema| !self.string_fits(schema, &text));
            return self.end_scalar(Value::String(text), wrong);
        }
        // A key: once in an object, and one the object's schema takes.
        let Some(Frame::Object {
            map,
            key: slot,
            schema,
            pointer,
        }) = self.stack.last_mut()
        else {
            return Err(Found::Text(None));
        };
        if map.contains_key(&text) {
            return Err(Found::Text(None));
        }
        if map.len() >= self.max_members {
            return Err(Found::Text(Some((Limit::Members, pointer.clone()))));
        }
        let unknown = schema.as_deref().is_some_and(|s| {
            let Some(node) = node_at(&self.root, s) else {
                return false;
            };
            node.get("additionalProperties") == Some(&Value::Bool(false))
                && node.get("patternProperties").is_none()
                && !node
                    .get("properties")
                    .and_then(Value::as_object)
                    .is_some_and(|p| p.contains_key(&text))
        });
        let at = format!("{pointer}/{}", escape(&text));
        *slot = Some(text);
        self.lex = Lex::Colon;
        if unknown {
            // Worded with the key present, its value not yet come.
            if let Some(Frame::Object {
                map,
                key: Some(key),
                ..
            }) = self.stack.last_mut()
            {
                map.insert(key.clone(), Value::Null);
            }
            return Err(Found::Schema(at));
        }
        Ok(())
    }

    /// [`kinds`](Self::kinds), looked up once per pointer.
    fn kinds_cached(&mut self, pointer: &str) -> Option<u8> {
        if let Some(kinds) = self.kinds_seen.get(pointer) {
            return *kinds;
        }
        let kinds = self.kinds(pointer, 0);
        self.kinds_seen.insert(pointer.to_owned(), kinds);
        kinds
    }

    /// [`select`](Self::select), looked up once per pointer and kind.
    fn select_cached(&mut self, pointer: &str, kind: u8) -> Option<String> {
        if let Some(chosen) = self.chosen_seen.get(&(pointer.to_owned(), kind)) {
            return chosen.clone();
        }
        let chosen = self.select(pointer, kind, 0);
        self.chosen_seen
            .insert((pointer.to_owned(), kind), chosen.clone());
        chosen
    }

    fn end_number(&mut self) -> Result<(), Found> {
        let text = std::mem::take(&mut self.scalar.text);
        let value: Value = serde_json::from_str(&text).map_err(|_| Found::Text(None))?;
        let integer_only = match self.scalar.schema.clone() {
            Some(schema) => self
                .kinds_cached(&schema)
                .is_some_and(|k| k & NUMBER == 0 && k & INTEGER != 0),
            None => false,
        };
        let wrong = self.scalar.mismatch
            || self
                .scalar
                .schema
                .as_deref()
                .is_some_and(|schema| !self.number_fits(schema, &value, integer_only));
        self.end_scalar(value, wrong)
    }

    /// Puts a finished scalar in its container; `wrong` when its schema refuses it.
    fn end_scalar(&mut self, value: Value, wrong: bool) -> Result<(), Found> {
        let at = std::mem::take(&mut self.scalar.pointer);
        self.end_value(value)?;
        if wrong {
            return Err(Found::Schema(at));
        }
        Ok(())
    }

    /// Puts a finished value in its container.
    fn end_value(&mut self, value: Value) -> Result<(), Found> {
        self.lex = Lex::After;
        let too_many = match self.stack.last_mut() {
            Some(Frame::Object { map, key, .. }) => {
                if let Some(key) = key.take() {
                    map.insert(key, value);
                }
                None
            }
            Some(Frame::Array {
                items,
                schema,
                pointer,
            }) => {
                items.push(value);
                let count = items.len() as u64;
                let max = schema
                    .as_deref()
                    .and_then(|s| node_at(&self.root, s))
                    .and_then(|n| n.get("maxItems"))
                    .and_then(Value::as_u64);
                max.is_some_and(|max| count > max).then(|| pointer.clone())
            }
            None => {
                // Not an object: the whole call refuses it.
                self.done = Some(value);
                self.lex = Lex::Done;
                None
            }
        };
        match too_many {
            Some(at) => Err(Found::Schema(at)),
            None => Ok(()),
        }
    }

    /// Closes the innermost container.
    fn close(&mut self) -> Result<(), Found> {
        let Some(frame) = self.stack.pop() else {
            return Err(Found::Text(None));
        };
        let (value, schema, pointer) = match frame {
            Frame::Object {
                map,
                schema,
                pointer,
                ..
            } => (Value::Object(map), schema, pointer),
            Frame::Array {
                items,
                schema,
                pointer,
            } => (Value::Array(items), schema, pointer),
        };
        // A closed object lacks a required key, or a closed array has too few items: no later
        // text can change that.
        let short = schema
            .as_deref()
            .and_then(|s| self.node(s))
            .is_some_and(|node| match &value {
                Value::Object(map) => {
                    node.get("required")
                        .and_then(Value::as_array)
                        .is_some_and(|r| {
                            r.iter()
                                .filter_map(Value::as_str)
                                .any(|k| !map.contains_key(k))
                        })
                }
                Value::Array(items) => node
                    .get("minItems")
                    .and_then(Value::as_u64)
                    .is_some_and(|min| (items.len() as u64) < min),
                _ => false,
            });
        if self.stack.is_empty() {
            self.done = Some(value);
            self.lex = Lex::Done;
            return Ok(());
        }
        self.end_value(value)?;
        if short {
            return Err(Found::Schema(pointer));
        }
        Ok(())
    }

    // --- the schema, read as far as one schema alone describes a value ---

    fn node(&self, pointer: &str) -> Option<&Value> {
        node_at(&self.root, pointer)
    }

    /// `pointer` with its `$ref`s followed (local ones).
    fn deref(&self, pointer: &str, depth: usize) -> Option<String> {
        let node = self.node(pointer)?;
        match node.get("$ref").and_then(Value::as_str) {
            Some(reference) if depth < 32 => {
                let target = reference.strip_prefix('#')?;
                self.deref(target, depth + 1)
            }
            Some(_) => None,
            None => Some(pointer.to_owned()),
        }
    }

    /// The kinds of value the schema at `pointer` may take; `None` when it does not say (or
    /// says in ways not followed here).
    fn kinds(&self, pointer: &str, depth: usize) -> Option<u8> {
        let at = self.deref(pointer, 0)?;
        let node = self.node(&at)?;
        if depth > 16 || !node.is_object() {
            return None;
        }
        if let Some(types) = node.get("type") {
            let names: Vec<&str> = match types {
                Value::String(t) => vec![t.as_str()],
                Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
                _ => return None,
            };
            let mut set = 0;
            for name in names {
                set |= match name {
                    "object" => OBJECT,
                    "array" => ARRAY,
                    "string" => STRING,
                    "number" => NUMBER | INTEGER,
                    "integer" => INTEGER,
                    "boolean" => BOOLEAN,
                    "null" => NULL,
                    _ => return None,
                };
            }
            return Some(set);
        }
        for combinator in ["anyOf", "oneOf"] {
            if let Some(branches) = node.get(combinator).and_then(Value::as_array) {
                let mut set = 0;
                for i in 0..branches.len() {
                    set |= self.kinds(&format!("{at}/{combinator}/{i}"), depth + 1)?;
                }
                return Some(set);
            }
        }
        let values: Vec<&Value> = match (node.get("enum"), node.get("const")) {
            (Some(Value::Array(values)), _) => values.iter().collect(),
            (_, Some(value)) => vec![value],
            _ => return None,
        };
        Some(values.iter().fold(0, |set, v| set | kind_of(v)))
    }

    /// The one schema that describes a value of `kind` at `pointer`: through `$ref`s, and into
    /// the one branch of an `anyOf`/`oneOf` that can take it. `None` when several can, or the
    /// schema combines others in ways not followed here.
    fn select(&self, pointer: &str, kind: u8, depth: usize) -> Option<String> {
        let at = self.deref(pointer, 0)?;
        let node = self.node(&at)?.as_object()?;
        if depth > 16
            || [
                "allOf",
                "not",
                "if",
                "$dynamicRef",
                "unevaluatedProperties",
                "unevaluatedItems",
            ]
            .iter()
            .any(|k| node.contains_key(*k))
        {
            return None;
        }
        for combinator in ["anyOf", "oneOf"] {
            if let Some(branches) = node.get(combinator).and_then(Value::as_array) {
                let takes = |i: usize| {
                    self.kinds(&format!("{at}/{combinator}/{i}"), 0)
                        .is_none_or(|k| {
                            if kind == NUMBER {
                                k & (NUMBER | INTEGER) != 0
                            } else {
                                k & kind != 0
                            }
                        })
                };
                let fitting: Vec<usize> = (0..branches.len()).filter(|&i| takes(i)).collect();
                let [only] = fitting[..] else { return None };
                // Keywords beside the combinator apply too: only a bare one is followed.
                if node.keys().any(|k| {
                    !matches!(
                        k.as_str(),
                        "anyOf" | "oneOf" | "description" | "title" | "default" | "examples"
                    )
                }) {
                    return None;
                }
                return self.select(&format!("{at}/{combinator}/{only}"), kind, depth + 1);
            }
        }
        Some(at)
    }

    fn property_schema(&self, object: &str, key: &str) -> Option<String> {
        let node = self.node(object)?;
        let escaped = key.replace('~', "~0").replace('/', "~1");
        if node.get("properties").and_then(|p| p.get(key)).is_some() {
            return Some(format!("{object}/properties/{escaped}"));
        }
        if node.get("patternProperties").is_some() {
            return None;
        }
        node.get("additionalProperties")
            .filter(|a| a.is_object())
            .map(|_| format!("{object}/additionalProperties"))
    }

    /// Whether some completion of the string in progress can satisfy the schema at `pointer`.
    fn string_prefix_fits(&self, pointer: &str) -> bool {
        let Some(node) = self.node(pointer) else {
            return true;
        };
        let prefix = &self.scalar.text;
        if node
            .get("maxLength")
            .and_then(Value::as_u64)
            .is_some_and(|max| self.scalar.chars as u64 > max)
        {
            return false;
        }
        let allowed: Option<Vec<&str>> = match (node.get("enum"), node.get("const")) {
            (Some(Value::Array(values)), _) => values.iter().map(Value::as_str).collect(),
            (_, Some(Value::String(value))) => Some(vec![value.as_str()]),
            _ => None,
        };
        allowed.is_none_or(|values| values.iter().any(|v| v.starts_with(prefix.as_str())))
    }

    /// Whether the whole string `text` can satisfy the schema at `pointer` (as far as checked
    /// here: its length and enumeration; a pattern or format is the validator's at the end).
    fn string_fits(&self, pointer: &str, text: &str) -> bool {
        let Some(node) = self.node(pointer) else {
            return true;
        };
        let chars = text.chars().count() as u64;
        if node
            .get("maxLength")
            .and_then(Value::as_u64)
            .is_some_and(|max| chars > max)
            || node
                .get("minLength")
                .and_then(Value::as_u64)
                .is_some_and(|min| chars < min)
        {
            return false;
        }
        let allowed: Option<Vec<&str>> = match (node.get("enum"), node.get("const")) {
            (Some(Value::Array(values)), _) => values.iter().map(Value::as_str).collect(),
            (_, Some(Value::String(value))) => Some(vec![value.as_str()]),
            _ => None,
        };
        allowed.is_none_or(|values| values.contains(&text))
    }

    /// Whether the number `value` satisfies the schema at `pointer` (its type and range).
    fn number_fits(&self, pointer: &str, value: &Value, integer_only: bool) -> bool {
        let Some(node) = self.node(pointer) else {
            return true;
        };
        if integer_only
            && value.as_f64().is_some_and(|f| f.fract() != 0.0)
            && value.as_i64().is_none()
            && value.as_u64().is_none()
        {
            return false;
        }
        let beyond = |key: &str, wrong: &[Ordering]| {
            node.get(key)
                .filter(|limit| limit.is_number())
                .and_then(|limit| compare_json_numbers(value, limit))
                .is_some_and(|order| wrong.contains(&order))
        };
        !(beyond("minimum", &[Ordering::Less])
            || beyond("maximum", &[Ordering::Greater])
            || beyond("exclusiveMinimum", &[Ordering::Less, Ordering::Equal])
            || beyond("exclusiveMaximum", &[Ordering::Greater, Ordering::Equal]))
    }
}

/// The whole-call reader's verdict on `partial` (what has arrived), kept to the field at
/// `at` and below: `None` when it finds nothing wrong there.
pub(crate) fn refusal_at(
    def: &Validation,
    partial: Value,
    at: &str,
    limits: &InputLimits,
) -> Option<ToolError> {
    let err = read_once(def, &Arguments::Value(Cow::Owned(partial)), limits).err()?;
    let below = format!("{at}/");
    let fields: Vec<FieldError> = err
        .fields()
        .iter()
        .filter(|f| f.pointer == at || f.pointer.starts_with(&below))
        .cloned()
        .collect();
    (!fields.is_empty()).then(|| invalid(def, fields))
}

/// Whether `schema` (a node of the schema `root`) may take a value of JSON type `kind`
/// (`"object"`, `"array"`, `"string"`, ...); `true` when it does not say.
pub(crate) fn takes_kind(root: &Value, schema: &Value, kind: &str) -> bool {
    fn walk(root: &Value, schema: &Value, kind: &str, depth: usize) -> bool {
        if depth > 16 {
            return true;
        }
        if let Some(target) = schema.get("$ref").and_then(Value::as_str) {
            return match target.strip_prefix('#').and_then(|p| node_at(root, p)) {
                Some(next) => walk(root, next, kind, depth + 1),
                None => true,
            };
        }
        let matches = |t: &str| t == kind || (t == "number" && kind == "integer");
        match schema.get("type") {
            Some(Value::String(t)) => return matches(t),
            Some(Value::Array(ts)) => return ts.iter().filter_map(Value::as_str).any(matches),
            _ => {}
        }
        for combinator in ["anyOf", "oneOf"] {
            if let Some(branches) = schema.get(combinator).and_then(Value::as_array) {
                return branches.iter().any(|b| walk(root, b, kind, depth + 1));
            }
        }
        true
    }
    walk(root, schema, kind, 0)
}

/// A JSON Path of the normalized form Gemini streams arguments by (`$.a.b[0]['c d']`, RFC
/// 9535) as a JSON pointer; `None` for any other form.
pub(crate) fn json_path_to_pointer(path: &str) -> Option<String> {
    let mut rest = path.strip_prefix('$')?;
    let mut pointer = String::new();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            let name = &after[..end];
            if name.is_empty() {
                return None;
            }
            pointer.push('/');
            pointer.push_str(&name.replace('~', "~0").replace('/', "~1"));
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix("['") {
            let end = after.find("']")?;
            pointer.push('/');
            pointer.push_str(&after[..end].replace('~', "~0").replace('/', "~1"));
            rest = &after[end + 2..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']')?;
            let index: usize = after[..end].parse().ok()?;
            pointer.push('/');
            pointer.push_str(&index.to_string());
            rest = &after[end + 1..];
        } else {
            return None;
        }
    }
    Some(pointer)
}

fn node_at<'v>(root: &'v Value, pointer: &str) -> Option<&'v Value> {
    if pointer.is_empty() {
        Some(root)
    } else {
        root.pointer(pointer)
    }
}

fn kind_of(value: &Value) -> u8 {
    match value {
        Value::Object(_) => OBJECT,
        Value::Array(_) => ARRAY,
        Value::String(_) => STRING,
        Value::Number(n) if n.is_f64() => NUMBER,
        Value::Number(_) => INTEGER | NUMBER,
        Value::Bool(_) => BOOLEAN,
        Value::Null => NULL,
    }
}

/// The largest char boundary of `text` at or below `at`.
fn floor_char(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

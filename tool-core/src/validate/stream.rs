//! Arguments read while they stream: a push parser per call. Each piece is read once, in time
//! proportional to its length; a call is refused as soon as no completion of what arrived
//! could be valid (an unknown key, a wrong type, an enum value no value starts with, a length,
//! range or count already past its limit, broken JSON), with the words a whole call would get;
//! and the parser, not the provider's end-of-stream signal, decides whether the arguments
//! ended.
//!
//! What the parser keeps is the text (bounded by `max_bytes`) and, per open container, what
//! the limits and the early checks need: a hash of each key of an open object, the count of an
//! open array's items, the key or index being read. It builds no value while reading: a value
//! costs tens of bytes per JSON node, so a tree kept per call would cost many times the text.
//! [`Parser::partial`] reads the text again when asked.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::HashSet;
use std::hash::BuildHasher;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::outline::{ARRAY, BOOLEAN, INTEGER, NULL, NUMBER, OBJECT, Outline, STRING};
use super::reader::{self, Refusal};
use super::{Validation, invalid, read_once, text_document};
use crate::arguments::Arguments;
use crate::error::{FieldError, ToolError};
use crate::json::number::compare_json_numbers;
use crate::limits::{InputLimits, Limit, Step};

/// The hashes of an open object's keys.
type Keys = HashSet<u64, foldhash::fast::RandomState>;

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
    /// The arguments' value has closed: only whitespace may follow.
    Done,
}

/// A container being read: what its limits and checks need, not its values.
#[derive(Debug)]
enum Frame {
    Object {
        /// The keys read so far that are among the first 64 of the schema's `properties`, as
        /// bits of their places there.
        seen: u64,
        /// A hash of each other key read so far (a repeat is confirmed by the whole-call
        /// reader before anything is refused).
        keys: Keys,
        /// How many keys were read.
        count: usize,
        /// The key whose value comes next (or is being read); empty before the first.
        key: String,
        /// The schema of that key's value.
        next: Option<u32>,
        /// The schema of this object (a node of the outline), when one schema alone
        /// describes it.
        schema: Option<u32>,
        /// Where the text stands after the last whole member (or the `{`).
        resume: usize,
    },
    Array {
        /// Items read so far: the index of the one being read.
        count: usize,
        schema: Option<u32>,
        /// Where the text stands after the last whole item (or the `[`).
        resume: usize,
    },
}

impl Frame {
    fn resume(&self) -> usize {
        match self {
            Self::Object { resume, .. } | Self::Array { resume, .. } => *resume,
        }
    }
}

/// The scalar being read: its text (a number, a literal) or its decoded text (a string), with
/// its schema.
#[derive(Debug, Default)]
struct Scalar {
    text: String,
    chars: usize,
    /// A high surrogate waiting for its low half, and where its escape began.
    surrogate: Option<(u32, usize)>,
    schema: Option<u32>,
    /// The value's kind is not one its schema takes: refused once it is whole.
    mismatch: bool,
    /// Its schema bounds its length while it is read: `chars` is counted.
    counted: bool,
}

impl Scalar {
    /// Starts another scalar, keeping the text's buffer.
    fn reset(&mut self, schema: Option<u32>, mismatch: bool, counted: bool) {
        self.text.clear();
        self.chars = 0;
        self.surrogate = None;
        self.schema = schema;
        self.mismatch = mismatch;
        self.counted = counted;
    }
}

/// What one piece added to the arguments, in order: applied to an empty object, the changes
/// of every piece so far make [`ArgumentStream::partial`](crate::provider::ArgumentStream::partial).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ArgumentChange {
    /// A value at the pointer: a number, `true`, `false` or `null` once whole, a string as it
    /// starts (`""`), an object or a list as it opens (`{}`, `[]`).
    Set {
        /// Where (a JSON pointer).
        pointer: String,
        /// The value.
        value: Value,
    },
    /// More text of the string at the pointer.
    Append {
        /// Where (a JSON pointer).
        pointer: String,
        /// The text that arrived, decoded.
        text: String,
    },
}

/// The push parser of one call's arguments.
#[derive(Debug)]
pub(crate) struct Parser {
    /// What the schema says at each location, read once per tool.
    outline: Arc<Outline>,
    lex: Lex,
    stack: Vec<Frame>,
    scalar: Scalar,
    /// The whole text so far (bounded by the byte limit).
    text: String,
    /// Where the character being read ends in `text`.
    pos: usize,
    /// Where the escape being read in a string began.
    escape_start: usize,
    /// The arguments' value has closed.
    done: bool,
    nodes: usize,
    max_members: usize,
    hasher: foldhash::fast::RandomState,
    /// The key sets and key buffers of closed objects, kept for the next objects to open.
    spare: Vec<(Keys, String)>,
    /// The refusal, once the call is refused: nothing more is read.
    refused: Option<ToolError>,
    /// The changes of the last piece, when asked for.
    changes: Option<Vec<ArgumentChange>>,
    /// How much of the string being read the changes have told.
    appended: usize,
}

/// What the parser found wrong, and where: put in words by the whole-call reader.
enum Found {
    /// Broken JSON or a limit: the reader's verdict on the text so far.
    Text(Option<(Limit, String)>),
    /// A key read twice in one object (by its hash): refused when the reader agrees.
    Repeated,
    /// A violation of the schema at this pointer.
    Schema(String),
    /// A key the object's schema does not take, at this pointer: worded with the key
    /// present and its value not yet come.
    Unknown(String),
}

impl Parser {
    pub(crate) fn new(def: &Validation) -> Self {
        Self {
            outline: Arc::clone(def.outline()),
            lex: Lex::Value,
            stack: Vec::new(),
            scalar: Scalar::default(),
            text: String::new(),
            pos: 0,
            escape_start: 0,
            done: false,
            nodes: 0,
            max_members: usize::MAX,
            hasher: foldhash::fast::RandomState::default(),
            spare: Vec::new(),
            refused: None,
            changes: None,
            appended: 0,
        }
    }

    /// Records the changes each piece makes ([`changes`](Self::changes)).
    pub(crate) fn record_changes(&mut self) {
        self.changes = Some(Vec::new());
    }

    /// The changes the last piece made, when recorded.
    pub(crate) fn changes(&self) -> &[ArgumentChange] {
        self.changes.as_deref().unwrap_or_default()
    }

    /// Whether the arguments' value has closed.
    pub(crate) fn is_complete(&self) -> bool {
        self.done
    }

    /// The text so far.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// The text so far, taken.
    pub(crate) fn into_text(self) -> String {
        self.text
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
        if let Some(changes) = &mut self.changes {
            changes.clear();
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
        let bytes = piece.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            // Inside a string, a run of characters that are neither a quote, a backslash nor a
            // control character is taken whole.
            if matches!(self.lex, Lex::Str { .. }) && self.scalar.surrogate.is_none() {
                let run = crate::json::escape::plain_run(&bytes[i..]);
                if run > 0 {
                    // The run ends before an ASCII byte or at the piece's end: a char boundary.
                    let plain = &piece[i..i + run];
                    self.scalar.text.push_str(plain);
                    if self.scalar.counted {
                        self.scalar.chars += plain.chars().count();
                    }
                    i += run;
                    self.pos = start + i;
                    continue;
                }
            }
            let Some(c) = piece[i..].chars().next() else {
                break;
            };
            i += c.len_utf8();
            self.pos = start + i;
            if let Err(found) = self.step(c, limits)
                && let Some(err) = self.refusal(def, found, self.pos, limits)
            {
                self.refused = Some(err.clone());
                return Err(err);
            }
        }
        self.flush_append();
        // A string in progress that no completion can make valid.
        if matches!(
            self.lex,
            Lex::Str { key: false } | Lex::Escape { key: false } | Lex::Unicode { key: false, .. }
        ) && let Some(schema) = self.scalar.schema
            && !self.string_prefix_fits(schema)
        {
            let at = self.slot_pointer();
            if let Some(err) = self.refusal(def, Found::Schema(at), self.text.len(), limits) {
                self.refused = Some(err.clone());
                return Err(err);
            }
        }
        Ok(())
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
        if !self.done {
            return None;
        }
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
            Found::Repeated => {
                // The text up to the repeated key and a value for it: the reader names it.
                let mut text = self.text[..floor_char(&self.text, cut)].to_owned();
                text.push_str(":null");
                text.extend(self.closers());
                match reader::read(&text, &limits.with_max_bytes(usize::MAX)) {
                    Err(Refusal::Duplicate { .. }) => {
                        text_document(def, &text, &limits.with_max_bytes(usize::MAX), true).err()
                    }
                    _ => None,
                }
            }
            Found::Schema(at) => refusal_at(def, self.partial_with(None), &at, limits),
            Found::Unknown(at) => refusal_at(def, self.partial_with(Some(":null")), &at, limits),
        }
    }

    /// What has arrived, as a value: open containers closed, a string in progress as far as it
    /// came, a key without its value left out. It reads the text so far again: its cost is in
    /// proportion to the text, not to the last piece.
    pub(crate) fn partial(&self) -> Value {
        self.partial_with(None)
    }

    /// The closers of the open containers, innermost first.
    fn closers(&self) -> impl Iterator<Item = char> + '_ {
        self.stack.iter().rev().map(|frame| match frame {
            Frame::Object { .. } => '}',
            Frame::Array { .. } => ']',
        })
    }

    /// [`partial`](Self::partial), with `extra` written right after the text so far (`:null`
    /// for a key whose value has not come).
    fn partial_with(&self, extra: Option<&str>) -> Value {
        if self.done {
            return serde_json::from_str(&self.text).unwrap_or_else(|_| Value::Object(Map::new()));
        }
        let Some(top) = self.stack.last() else {
            return match self.lex {
                Lex::Str { key: false } => Value::String(self.scalar.text.clone()),
                _ => Value::Object(Map::new()),
            };
        };
        let mut text = match (extra, self.lex) {
            (Some(extra), _) => format!("{}{extra}", &self.text[..self.pos]),
            (
                None,
                Lex::Str { key: false }
                | Lex::Escape { key: false }
                | Lex::Unicode { key: false, .. },
            ) => {
                let cut = match (self.scalar.surrogate, self.lex) {
                    (Some((_, start)), _) => start,
                    (None, Lex::Str { .. }) => self.pos,
                    (None, _) => self.escape_start,
                };
                format!("{}\"", &self.text[..cut])
            }
            (None, _) => self.text[..top.resume()].to_owned(),
        };
        text.extend(self.closers());
        serde_json::from_str(&text).unwrap_or_else(|_| Value::Object(Map::new()))
    }

    /// The pointer of the container `depth` frames down (`0`: the arguments' object).
    fn pointer_to(&self, depth: usize) -> String {
        crate::limits::pointer(self.stack[..depth].iter().map(|frame| match frame {
            Frame::Object { key, .. } => Step::Key(key),
            Frame::Array { count, .. } => Step::Index(*count),
        }))
    }

    /// The pointer of the value being read.
    fn slot_pointer(&self) -> String {
        self.pointer_to(self.stack.len())
    }

    /// The exact pointer of the value being read, for a change.
    fn change_pointer(&self) -> String {
        let mut out = String::new();
        for frame in &self.stack {
            out.push('/');
            match frame {
                Frame::Object { key, .. } => {
                    out.push_str(&key.replace('~', "~0").replace('/', "~1"));
                }
                Frame::Array { count, .. } => out.push_str(&count.to_string()),
            }
        }
        out
    }

    fn record(&mut self, value: Value) {
        if self.changes.is_some() {
            let pointer = self.change_pointer();
            if let Some(changes) = &mut self.changes {
                changes.push(ArgumentChange::Set { pointer, value });
            }
        }
    }

    /// Records the text a string value gained since it was last recorded.
    fn flush_append(&mut self) {
        if self.changes.is_none()
            || !matches!(
                self.lex,
                Lex::Str { key: false }
                    | Lex::Escape { key: false }
                    | Lex::Unicode { key: false, .. }
            )
            || self.scalar.text.len() <= self.appended
        {
            return;
        }
        let text = self.scalar.text[self.appended..].to_owned();
        self.appended = self.scalar.text.len();
        let pointer = self.change_pointer();
        if let Some(changes) = &mut self.changes {
            changes.push(ArgumentChange::Append { pointer, text });
        }
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
                '\\' => {
                    self.escape_start = self.pos - 1;
                    self.lex = Lex::Escape { key };
                }
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
                    (None, 0xD800..=0xDBFF) => {
                        self.scalar.surrogate = Some((code, self.escape_start));
                    }
                    (Some((high, _)), 0xDC00..=0xDFFF) => {
                        let joined = 0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00);
                        self.push_char(char::from_u32(joined).unwrap_or('\u{FFFD}'));
                    }
                    (Some(_), code) => {
                        self.push_char('\u{FFFD}');
                        self.push_char(char::from_u32(code).unwrap_or('\u{FFFD}'));
                    }
                    (None, code) => self.push_char(char::from_u32(code).unwrap_or('\u{FFFD}')),
                }
            }
            Lex::Number => {
                if matches!(c, '0'..='9' | '-' | '+' | '.' | 'e' | 'E') {
                    self.scalar.text.push(c);
                } else {
                    self.end_number(self.pos - c.len_utf8())?;
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
                    self.end_scalar(value, wrong, self.pos)?;
                }
            }
            Lex::Colon => match c {
                ':' => self.lex = Lex::Value,
                c if c.is_whitespace() => {}
                _ => return Err(syntax()),
            },
            Lex::KeyOrClose | Lex::Key => match c {
                '"' => {
                    self.scalar.reset(None, false, false);
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
        if let Some(_high) = self.scalar.surrogate.take() {
            // A high surrogate not followed by its low half.
            self.scalar.text.push('\u{FFFD}');
            self.scalar.chars += 1;
        }
        self.scalar.text.push(c);
        self.scalar.chars += 1;
    }

    /// The schema of the value that starts now: the one its key was found to have, or its
    /// list's items'. (Only the current key's is kept: the keys are the model's, and a table
    /// of them would grow with the text.)
    fn next_schema(&self) -> Option<u32> {
        match self.stack.last() {
            None => Some(0),
            Some(Frame::Object { next, .. }) => *next,
            Some(Frame::Array { schema, .. }) => schema.and_then(|s| self.outline.node(s).items),
        }
    }

    fn start_value(&mut self, c: char, kind: u8, limits: &InputLimits) -> Result<(), Found> {
        self.max_members = limits.max_members;
        let schema = self.next_schema();
        self.nodes += 1;
        if self.nodes > limits.max_nodes {
            return Err(Found::Text(Some((Limit::Nodes, self.slot_pointer()))));
        }
        if let Some(Frame::Array { count, .. }) = self.stack.last()
            && *count >= limits.max_items
        {
            let at = self.pointer_to(self.stack.len() - 1);
            return Err(Found::Text(Some((Limit::Items, at))));
        }
        let node = schema.map(|s| self.outline.node(s));
        // The kind must be one the schema takes (a number may still be an integer).
        let mismatch = node
            .and_then(|n| n.kinds)
            .is_some_and(|kinds| !super::outline::takes(kinds, kind));
        let chosen = if mismatch {
            None
        } else {
            node.and_then(|n| n.pick(kind))
        };
        match c {
            '{' | '[' => {
                if self.stack.len() >= limits.max_depth {
                    return Err(Found::Text(Some((Limit::Depth, self.slot_pointer()))));
                }
                if self.changes.is_some() {
                    self.record(if c == '{' {
                        Value::Object(Map::new())
                    } else {
                        Value::Array(Vec::new())
                    });
                }
                let at = if mismatch {
                    Some(self.slot_pointer())
                } else {
                    None
                };
                let frame = if c == '{' {
                    let (keys, key) = self.spare.pop().unwrap_or_default();
                    Frame::Object {
                        seen: 0,
                        keys,
                        count: 0,
                        key,
                        next: None,
                        schema: chosen,
                        resume: self.pos,
                    }
                } else {
                    Frame::Array {
                        count: 0,
                        schema: chosen,
                        resume: self.pos,
                    }
                };
                self.stack.push(frame);
                self.lex = if c == '{' {
                    Lex::KeyOrClose
                } else {
                    Lex::ValueOrClose
                };
                if let Some(at) = at {
                    // Refused as it opens, worded with the container as far as it came.
                    return Err(Found::Schema(at));
                }
            }
            '"' => {
                if self.changes.is_some() {
                    self.record(Value::String(String::new()));
                }
                let counted = chosen.is_some_and(|s| self.outline.node(s).max_length.is_some());
                self.scalar.reset(chosen, mismatch, counted);
                self.appended = 0;
                self.lex = Lex::Str { key: false };
            }
            c => {
                self.scalar.reset(chosen, mismatch, false);
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
            self.scalar.chars += 1;
        }
        if !key {
            self.flush_append();
            let wrong = self.scalar.mismatch
                || self
                    .scalar
                    .schema
                    .is_some_and(|schema| !self.string_fits(schema, &self.scalar.text));
            return self.end_scalar_unrecorded(wrong, self.pos);
        }
        // A key: once in an object, and one the object's schema takes.
        let max_members = self.max_members;
        let outline = &self.outline;
        let hasher = &self.hasher;
        let Some(Frame::Object {
            seen,
            keys,
            count,
            key: slot,
            next,
            schema,
            ..
        }) = self.stack.last_mut()
        else {
            return Err(Found::Text(None));
        };
        let node = schema.map(|s| outline.node(s));
        let at = node.and_then(|n| n.find(&self.scalar.text));
        // One of the schema's first 64 properties is told by its place; any other key by a
        // hash.
        let repeated = match at {
            Some(at) if at < 64 => {
                let bit = 1u64 << at;
                let again = *seen & bit != 0;
                *seen |= bit;
                again
            }
            _ => !keys.insert(hasher.hash_one(self.scalar.text.as_str())),
        };
        *count += 1;
        let too_many = *count > max_members;
        let unknown = node.is_some_and(|n| n.closed && at.is_none());
        *next = node.and_then(|n| n.value_at(at));
        // The key is copied into its object's buffer: both buffers are kept.
        slot.clear();
        slot.push_str(&self.scalar.text);
        self.lex = Lex::Colon;
        if repeated {
            return Err(Found::Repeated);
        }
        if too_many {
            let at = self.pointer_to(self.stack.len() - 1);
            return Err(Found::Text(Some((Limit::Members, at))));
        }
        if unknown {
            return Err(Found::Unknown(self.slot_pointer()));
        }
        Ok(())
    }

    /// A number ends at `end`, the character after it not yet read.
    fn end_number(&mut self, end: usize) -> Result<(), Found> {
        let value = match small_integer(&self.scalar.text) {
            Some(value) => value,
            None => serde_json::from_str(&self.scalar.text).map_err(|_| Found::Text(None))?,
        };
        let wrong = self.scalar.mismatch
            || self
                .scalar
                .schema
                .is_some_and(|schema| !self.number_fits(schema, &value));
        self.end_scalar(value, wrong, end)
    }

    /// Puts a finished scalar in its container; `wrong` when its schema refuses it.
    fn end_scalar(&mut self, value: Value, wrong: bool, end: usize) -> Result<(), Found> {
        if self.changes.is_some() {
            self.record(value);
        }
        self.end_scalar_unrecorded(wrong, end)
    }

    fn end_scalar_unrecorded(&mut self, wrong: bool, end: usize) -> Result<(), Found> {
        let at = wrong.then(|| self.slot_pointer());
        self.end_value(end)?;
        match at {
            Some(at) => Err(Found::Schema(at)),
            None => Ok(()),
        }
    }

    /// Counts a finished value in its container; it ends at `end`.
    fn end_value(&mut self, end: usize) -> Result<(), Found> {
        self.lex = Lex::After;
        let depth = self.stack.len();
        let too_many = match self.stack.last_mut() {
            Some(Frame::Object { resume, .. }) => {
                *resume = end;
                false
            }
            Some(Frame::Array {
                count,
                schema,
                resume,
            }) => {
                *count += 1;
                *resume = end;
                let count = *count as u64;
                schema
                    .and_then(|s| self.outline.node(s).max_items)
                    .is_some_and(|max| count > max)
            }
            None => {
                // Not an object: the whole call refuses it.
                self.done = true;
                self.lex = Lex::Done;
                false
            }
        };
        if too_many {
            return Err(Found::Schema(self.pointer_to(depth - 1)));
        }
        Ok(())
    }

    /// Closes the innermost container.
    fn close(&mut self) -> Result<(), Found> {
        let depth = self.stack.len();
        let Some(frame) = self.stack.last() else {
            return Err(Found::Text(None));
        };
        // A closed object lacks a required key, or a closed array has too few items: no later
        // text can change that.
        let short = match frame {
            Frame::Object {
                seen, keys, schema, ..
            } => schema.is_some_and(|s| {
                let node = self.outline.node(s);
                node.required_mask & !seen != 0
                    || node
                        .required_rest
                        .iter()
                        .any(|k| !keys.contains(&self.hasher.hash_one(k.as_str())))
            }),
            Frame::Array { count, schema, .. } => schema
                .and_then(|s| self.outline.node(s).min_items)
                .is_some_and(|min| (*count as u64) < min),
        };
        let at = short.then(|| self.pointer_to(depth - 1));
        if let Some(Frame::Object { mut keys, key, .. }) = self.stack.pop() {
            keys.clear();
            self.spare.push((keys, key));
        }
        if self.stack.is_empty() {
            self.done = true;
            self.lex = Lex::Done;
            return Ok(());
        }
        self.end_value(self.pos)?;
        match at {
            Some(at) => Err(Found::Schema(at)),
            None => Ok(()),
        }
    }

    // --- the checks of a whole or partial value against its schema's node ---

    /// Whether some completion of the string in progress can satisfy the schema `node`.
    fn string_prefix_fits(&self, node: u32) -> bool {
        let node = self.outline.node(node);
        let prefix = &self.scalar.text;
        if node
            .max_length
            .is_some_and(|max| self.scalar.chars as u64 > max)
        {
            return false;
        }
        node.allowed
            .as_deref()
            .is_none_or(|values| values.iter().any(|v| v.starts_with(prefix.as_str())))
    }

    /// Whether the whole string `text` can satisfy the schema `node` (as far as checked
    /// here: its length and enumeration; a pattern or format is the validator's at the end).
    fn string_fits(&self, node: u32, text: &str) -> bool {
        let node = self.outline.node(node);
        if node.max_length.is_some() || node.min_length.is_some() {
            let chars = if self.scalar.counted {
                self.scalar.chars
            } else {
                text.chars().count()
            } as u64;
            if node.max_length.is_some_and(|max| chars > max)
                || node.min_length.is_some_and(|min| chars < min)
            {
                return false;
            }
        }
        node.allowed
            .as_deref()
            .is_none_or(|values| values.iter().any(|v| v == text))
    }

    /// Whether the number `value` satisfies the schema `node` (its type and range).
    fn number_fits(&self, node: u32, value: &Value) -> bool {
        let node = self.outline.node(node);
        let integer_only = node
            .kinds
            .is_some_and(|k| k & NUMBER == 0 && k & INTEGER != 0);
        if integer_only
            && value.as_f64().is_some_and(|f| f.fract() != 0.0)
            && value.as_i64().is_none()
            && value.as_u64().is_none()
        {
            return false;
        }
        let beyond = |at: usize, wrong: &[Ordering]| {
            node.bounds[at]
                .as_ref()
                .and_then(|limit| compare_json_numbers(value, limit))
                .is_some_and(|order| wrong.contains(&order))
        };
        !(beyond(0, &[Ordering::Less])
            || beyond(1, &[Ordering::Greater])
            || beyond(2, &[Ordering::Less, Ordering::Equal])
            || beyond(3, &[Ordering::Greater, Ordering::Equal]))
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

/// [`refusal_at`] for several pointers at once: the whole-call reader's verdict on `partial`,
/// kept to the fields at or below one of `pointers`.
pub(crate) fn refusal_among(
    def: &Validation,
    partial: Value,
    pointers: &[String],
    limits: &InputLimits,
) -> Option<ToolError> {
    let err = read_once(def, &Arguments::Value(Cow::Owned(partial)), limits).err()?;
    let wanted: HashSet<&str> = pointers.iter().map(String::as_str).collect();
    let fields: Vec<FieldError> = err
        .fields()
        .iter()
        .filter(|f| {
            let mut at = f.pointer.as_str();
            loop {
                if wanted.contains(at) {
                    return true;
                }
                match at.rfind('/') {
                    Some(cut) => at = &at[..cut],
                    None => return false,
                }
            }
        })
        .cloned()
        .collect();
    (!fields.is_empty()).then(|| invalid(def, fields))
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

/// A number written as a JSON integer of at most 18 digits, read as `serde_json` reads it,
/// without its parser; `None` for any other text (`-0`, which it reads as a float, among them).
fn small_integer(text: &str) -> Option<Value> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(digits) => (true, digits),
        None => (false, text),
    };
    if digits.is_empty()
        || digits.len() > 18
        || (digits.len() > 1 && digits.starts_with('0'))
        || !digits.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let n = digits
        .bytes()
        .fold(0i64, |n, b| n * 10 + i64::from(b - b'0'));
    match (negative, n) {
        (true, 0) => None,
        (true, n) => Some(Value::from(-n)),
        (false, n) => Some(Value::from(n)),
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

#[cfg(test)]
mod tests {
    use super::small_integer;

    proptest::proptest! {
        #[test]
        fn a_small_integer_is_read_as_serde_json_reads_it(
            text in "-?[0-9]{1,20}|-?0[0-9]*|[-+0-9.eE]{1,6}",
        ) {
            if let Some(value) = small_integer(&text) {
                let read: serde_json::Value = serde_json::from_str(&text).unwrap();
                proptest::prop_assert_eq!(&value, &read);
                proptest::prop_assert_eq!(value.as_i64(), read.as_i64());
                proptest::prop_assert_eq!(value.as_u64(), read.as_u64());
                proptest::prop_assert_eq!(value.is_f64(), read.is_f64());
            }
        }
    }

    #[test]
    fn minus_zero_and_long_integers_are_left_to_serde_json() {
        for text in ["-0", "0123", "1234567890123456789", "1.0", "", "-"] {
            assert_eq!(small_integer(text), None, "{text}");
        }
        assert_eq!(small_integer("-42"), Some(serde_json::json!(-42)));
        assert_eq!(small_integer("0"), Some(serde_json::json!(0)));
    }
}

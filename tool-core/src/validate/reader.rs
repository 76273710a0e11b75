//! Reading argument text into a `serde_json::Value` for validation, approval, idempotency and
//! explanations, with the checks serde_json's own `Value` reader does not make:
//!
//! - **Duplicate keys** are refused at every depth, with the key's pointer. serde_json keeps
//!   the last of two equal keys; a reviewer that reads the first would approve another call
//!   than the one that runs (RFC 8259 §4: names within an object SHOULD be unique, and
//!   receivers disagree on which one wins).
//! - **Limits** ([`InputLimits`]) are checked while reading, before more is built.
//! - **Numbers are exact.** serde_json reads a number written with a fraction or an exponent,
//!   or an integer beyond 64 bits, as the nearest `f64`. Here every such number is looked at
//!   in its own text: when its exact value is an integer that fits `i64` or `u64`, the value
//!   holds that integer (`5.0` → `5`, `9007199254740993.0` → `9007199254740993`,
//!   `1e19` → `10000000000000000000`); otherwise it stays a float and is listed as
//!   [`Inexact`] when the float would pass for an integer it is not
//!   (`-9223372036854775809`, `1.00000000000000001`), so that an integer parameter refuses it
//!   instead of taking a neighbouring value.

use std::cell::{Cell, RefCell};
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::limits::{InputLimits, Limit, Step};

/// A document read from text.
#[derive(Debug)]
pub(crate) struct Read {
    pub(crate) value: Value,
    /// Numbers an integer parameter must refuse although their float looks integral.
    pub(crate) inexact: Vec<Inexact>,
}

/// A number whose float looks like an integer its text is not.
#[derive(Clone, Debug)]
pub(crate) struct Inexact {
    pub(crate) pointer: String,
    pub(crate) literal: String,
}

/// Why a text was not read.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// Not JSON (serde_json's message says where).
    Syntax(serde_json::Error),
    /// A limit, at a pointer.
    Limit(Limit, String),
    /// A key that appears twice in one object.
    Duplicate { pointer: String, key: String },
}

/// Checks that `text` is one JSON document within `limits` and without a repeated key,
/// building nothing but the keys of the objects being read: for a transport that hands the
/// text on to another parser.
#[cfg_attr(not(feature = "mcp"), allow(dead_code))]
pub(crate) fn check(text: &str, limits: &InputLimits) -> Result<(), Refusal> {
    if limits.too_long(text.len()) {
        return Err(Refusal::Limit(Limit::Bytes, String::new()));
    }
    let state = State::new(limits, true);
    let mut de = serde_json::Deserializer::from_str(text);
    match Node(&state).deserialize(&mut de).and_then(|_| de.end()) {
        Ok(()) => Ok(()),
        Err(err) => Err(state.refusal.into_inner().unwrap_or(Refusal::Syntax(err))),
    }
}

/// Reads `text` (one JSON document) under `limits`.
pub(crate) fn read(text: &str, limits: &InputLimits) -> Result<Read, Refusal> {
    if limits.too_long(text.len()) {
        return Err(Refusal::Limit(Limit::Bytes, String::new()));
    }
    let state = State::new(limits, false);
    let mut de = serde_json::Deserializer::from_str(text);
    let parsed = Node(&state)
        .deserialize(&mut de)
        .and_then(|value| de.end().map(|()| value));
    let mut value = match parsed {
        Ok(value) => value,
        Err(err) => {
            return Err(state.refusal.into_inner().unwrap_or(Refusal::Syntax(err)));
        }
    };
    let floats = state.floats.into_inner();
    let mut inexact = Vec::new();
    if !floats.is_empty() {
        let mut literals = number_literals(text).enumerate();
        for (ordinal, path) in floats {
            let Some(literal) = literals.find(|(i, _)| *i == ordinal).map(|(_, l)| l) else {
                break;
            };
            let Some(slot) = locate(&mut value, &path) else {
                continue;
            };
            match exact_integer(literal) {
                Exact::Int(n) => match (i64::try_from(n), u64::try_from(n)) {
                    (Ok(i), _) => *slot = Value::from(i),
                    (_, Ok(u)) => *slot = Value::from(u),
                    _ => inexact.push(inexact_at(&path, literal)),
                },
                Exact::Huge => inexact.push(inexact_at(&path, literal)),
                Exact::Fraction => {
                    if slot.as_f64().is_some_and(|f| f.fract() == 0.0) {
                        inexact.push(inexact_at(&path, literal));
                    }
                }
            }
        }
    }
    Ok(Read { value, inexact })
}

/// Reads `text`, one JSON object, under `limits`, handing each of its members to `member` as
/// it is read instead of building the object; `member` answers `false` for a key the object
/// already had. `false` when the text is anything else, or anything the whole read
/// ([`read`]) would refuse, change or list could be in it: not JSON, past a limit, a key
/// repeated, a number written as a float (whose exact value [`read`] looks at in its text).
/// The members handed on before then are to be forgotten.
pub(crate) fn read_members(
    text: &str,
    limits: &InputLimits,
    member: &mut dyn FnMut(String, Value) -> bool,
) -> bool {
    if limits.too_long(text.len()) || !text.starts_with('{') {
        return false;
    }
    let mut state = State::new(limits, false);
    state.members = Some(RefCell::new(member));
    let mut de = serde_json::Deserializer::from_str(text);
    Node(&state).deserialize(&mut de).is_ok() && de.end().is_ok()
}

fn inexact_at(path: &[Seg], literal: &str) -> Inexact {
    Inexact {
        pointer: pointer_of(path),
        literal: crate::echo::echo(literal).into_owned(),
    }
}

/// One step of the path being read; keys are owned because the map takes them after.
#[derive(Clone, Debug)]
enum Seg {
    Key(String),
    Index(usize),
}

fn pointer_of(path: &[Seg]) -> String {
    crate::limits::pointer(path.iter().map(|seg| match seg {
        Seg::Key(key) => Step::Key(key),
        Seg::Index(i) => Step::Index(*i),
    }))
}

fn locate<'v>(mut value: &'v mut Value, path: &[Seg]) -> Option<&'v mut Value> {
    for seg in path {
        value = match (seg, value) {
            (Seg::Key(key), Value::Object(map)) => map.get_mut(key)?,
            (Seg::Index(i), Value::Array(items)) => items.get_mut(*i)?,
            _ => return None,
        };
    }
    Some(value)
}

struct State<'l> {
    limits: &'l InputLimits,
    /// Check the limits and keys only: build no value.
    shape_only: bool,
    nodes: Cell<usize>,
    /// The ordinal of the next number in document order.
    numbers: Cell<usize>,
    path: RefCell<Vec<Seg>>,
    /// Numbers read as floats: their ordinal and path, to be looked at in their text.
    floats: RefCell<Vec<(usize, Vec<Seg>)>>,
    refusal: RefCell<Option<Refusal>>,
    /// Where the top object's members go instead of into the object ([`read_members`]).
    members: Option<RefCell<&'l mut dyn FnMut(String, Value) -> bool>>,
}

impl<'l> State<'l> {
    fn new(limits: &'l InputLimits, shape_only: bool) -> Self {
        Self {
            members: None,
            limits,
            shape_only,
            nodes: Cell::new(0),
            numbers: Cell::new(0),
            path: RefCell::new(Vec::new()),
            floats: RefCell::new(Vec::new()),
            refusal: RefCell::new(None),
        }
    }

    fn refuse<E: de::Error>(&self, refusal: Refusal) -> E {
        *self.refusal.borrow_mut() = Some(refusal);
        E::custom("the arguments were refused")
    }

    fn limit<E: de::Error>(&self, limit: Limit) -> E {
        let pointer = pointer_of(&self.path.borrow());
        self.refuse(Refusal::Limit(limit, pointer))
    }

    fn number(&self) -> usize {
        let n = self.numbers.get();
        self.numbers.set(n + 1);
        n
    }
}

struct Node<'s, 'l>(&'s State<'l>);

impl<'de> DeserializeSeed<'de> for Node<'_, '_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        let state = self.0;
        let nodes = state.nodes.get() + 1;
        if nodes > state.limits.max_nodes {
            return Err(state.limit(Limit::Nodes));
        }
        state.nodes.set(nodes);
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_, '_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        self.0.number();
        Ok(Value::from(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        self.0.number();
        Ok(Value::from(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        if self.0.shape_only {
            return Ok(Value::Null);
        }
        let ordinal = self.0.number();
        let path = self.0.path.borrow().clone();
        self.0.floats.borrow_mut().push((ordinal, path));
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        if self.0.shape_only {
            return Ok(Value::Null);
        }
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        if self.0.shape_only {
            return Ok(Value::Null);
        }
        Ok(Value::String(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let state = self.0;
        if state.path.borrow().len() + 1 > state.limits.max_depth {
            return Err(state.limit(Limit::Depth));
        }
        let mut items = Vec::new();
        let mut count = 0;
        loop {
            state.path.borrow_mut().push(Seg::Index(count));
            let item = seq.next_element_seed(Node(state))?;
            state.path.borrow_mut().pop();
            let Some(item) = item else {
                return Ok(Value::Array(items));
            };
            if count >= state.limits.max_items {
                return Err(state.limit(Limit::Items));
            }
            count += 1;
            if !state.shape_only {
                items.push(item);
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let state = self.0;
        let top = state.path.borrow().is_empty();
        if state.path.borrow().len() + 1 > state.limits.max_depth {
            return Err(state.limit(Limit::Depth));
        }
        let mut members = Map::new();
        let mut count = 0;
        while let Some(key) = map.next_key::<String>()? {
            if count >= state.limits.max_members {
                return Err(state.limit(Limit::Members));
            }
            count += 1;
            // A small object is searched in place: hashing the key for the look-up costs more
            // than comparing it with a few others, and the insert below hashes it anyway.
            let repeated = if members.len() <= 8 {
                members.keys().any(|k| *k == key)
            } else {
                members.contains_key(&key)
            };
            if repeated {
                let mut path = state.path.borrow().clone();
                path.push(Seg::Key(key.clone()));
                let refusal = Refusal::Duplicate {
                    pointer: pointer_of(&path),
                    key: crate::echo::echo(&key).into_owned(),
                };
                return Err(state.refuse(refusal));
            }
            state.path.borrow_mut().push(Seg::Key(key));
            let value = map.next_value_seed(Node(state));
            let Some(Seg::Key(key)) = state.path.borrow_mut().pop() else {
                return Err(de::Error::custom("the path lost its key"));
            };
            let value = value?;
            if let Some(sink) = state.members.as_ref().filter(|_| top) {
                // Handed on, the member is not kept: the sink finds a repeat; a float is left
                // to the whole read, which reads its exact value in the text.
                if !state.floats.borrow().is_empty() || !(sink.borrow_mut())(key, value) {
                    return Err(de::Error::custom("read whole"));
                }
                continue;
            }
            // Checking only, the map keeps its keys (to find a repeat) and no values.
            members.insert(key, if state.shape_only { Value::Null } else { value });
        }
        Ok(Value::Object(members))
    }
}

/// The number literals of a JSON text, in document order. Only called on text serde_json
/// has read, so every `-` or digit outside a string starts a number.
fn number_literals(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < bytes.len() {
            match bytes[i] {
                b'"' => {
                    i += 1;
                    while i < bytes.len() {
                        match bytes[i] {
                            b'\\' => i += 2,
                            b'"' => {
                                i += 1;
                                break;
                            }
                            _ => i += 1,
                        }
                    }
                }
                b'-' | b'0'..=b'9' => {
                    let start = i;
                    while i < bytes.len()
                        && matches!(bytes[i], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
                    {
                        i += 1;
                    }
                    return text.get(start..i);
                }
                _ => i += 1,
            }
        }
        None
    })
}

/// What a number literal is exactly.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Exact {
    /// An integer within `i128`.
    Int(i128),
    /// An integer beyond `i128`.
    Huge,
    /// Not an integer.
    Fraction,
}

/// The exact value of a JSON number literal (`-12.50e3`), by its decimal digits: no float.
pub(crate) fn exact_integer(literal: &str) -> Exact {
    let (negative, rest) = match literal.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, literal),
    };
    let (mantissa, exponent) = match rest.find(['e', 'E']) {
        Some(at) => (&rest[..at], &rest[at + 1..]),
        None => (rest, ""),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let (exp_negative, exp_digits) = match exponent.as_bytes().first() {
        Some(b'-') => (true, &exponent[1..]),
        Some(b'+') => (false, &exponent[1..]),
        _ => (false, exponent),
    };
    let mut exp: i64 = 0;
    for d in exp_digits.bytes() {
        exp = exp.saturating_mul(10).saturating_add(i64::from(d - b'0'));
    }
    if exp_negative {
        exp = -exp;
    }
    // The digits of int and frac as one number, times 10^scale.
    let digits: Vec<u8> = int.bytes().chain(frac.bytes()).collect();
    let trailing = digits.iter().rev().take_while(|d| **d == b'0').count();
    let significant: &[u8] = {
        let end = digits.len() - trailing;
        let start = digits[..end].iter().take_while(|d| **d == b'0').count();
        &digits[start..end]
    };
    if significant.is_empty() {
        return Exact::Int(0);
    }
    let frac_len = i64::try_from(frac.len()).unwrap_or(i64::MAX);
    let trailing = i64::try_from(trailing).unwrap_or(i64::MAX);
    let scale = exp.saturating_sub(frac_len).saturating_add(trailing);
    if scale < 0 {
        return Exact::Fraction;
    }
    let len = i64::try_from(significant.len()).unwrap_or(i64::MAX);
    if len.saturating_add(scale) > 39 {
        return Exact::Huge;
    }
    let mut n: i128 = 0;
    for d in significant {
        n = match n
            .checked_mul(10)
            .and_then(|n| n.checked_add(i128::from(d - b'0')))
        {
            Some(n) => n,
            None => return Exact::Huge,
        };
    }
    for _ in 0..scale {
        n = match n.checked_mul(10) {
            Some(n) => n,
            None => return Exact::Huge,
        };
    }
    Exact::Int(if negative { -n } else { n })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read_ok(text: &str) -> Read {
        read(text, &InputLimits::DEFAULT).unwrap()
    }

    #[test]
    fn exact_values_of_literals() {
        assert_eq!(exact_integer("5"), Exact::Int(5));
        assert_eq!(exact_integer("5.0"), Exact::Int(5));
        assert_eq!(exact_integer("-0"), Exact::Int(0));
        assert_eq!(exact_integer("-0.0e-5"), Exact::Int(0));
        assert_eq!(
            exact_integer("1e19"),
            Exact::Int(10_000_000_000_000_000_000)
        );
        assert_eq!(exact_integer("1.5e1"), Exact::Int(15));
        assert_eq!(exact_integer("150e-1"), Exact::Int(15));
        assert_eq!(exact_integer("1.55e1"), Exact::Fraction);
        assert_eq!(exact_integer("1.0000000000000002"), Exact::Fraction);
        assert_eq!(exact_integer("1.00000000000000000001"), Exact::Fraction);
        assert_eq!(
            exact_integer("9007199254740993.0"),
            Exact::Int(9_007_199_254_740_993)
        );
        assert_eq!(
            exact_integer("-9223372036854775809"),
            Exact::Int(-9_223_372_036_854_775_809)
        );
        assert_eq!(exact_integer("1e39"), Exact::Huge);
        assert_eq!(exact_integer("1e999999999999999999999"), Exact::Huge);
        assert_eq!(exact_integer("1e-999999999999999999999"), Exact::Fraction);
        assert_eq!(exact_integer("0e999999999999999999999"), Exact::Int(0));
    }

    #[test]
    fn integral_numbers_are_exact_integers() {
        let read = read_ok(r#"{"a": 5.0, "b": [1e19, -0.0], "c": 9007199254740993.0, "d": 2.5}"#);
        assert_eq!(
            read.value,
            json!({"a": 5, "b": [10_000_000_000_000_000_000_u64, 0], "c": 9_007_199_254_740_993_i64, "d": 2.5})
        );
        assert!(read.inexact.is_empty());
    }

    #[test]
    fn numbers_an_integer_cannot_hold_are_listed() {
        let read = read_ok(
            r#"{"s": "-1 2.0 \"3.0", "a": -9223372036854775809, "b": [1.00000000000000000001, 1.5]}"#,
        );
        let found: Vec<(&str, &str)> = read
            .inexact
            .iter()
            .map(|i| (i.pointer.as_str(), i.literal.as_str()))
            .collect();
        assert_eq!(
            found,
            [
                ("/a", "-9223372036854775809"),
                ("/b/0", "1.00000000000000000001")
            ]
        );
    }

    /// The members `read_members` hands on, or `None` where the whole read must decide.
    fn members(text: &str, limits: &InputLimits) -> Option<Vec<(String, Value)>> {
        let mut seen: Vec<(String, Value)> = Vec::new();
        read_members(text, limits, &mut |key, value| {
            if seen.iter().any(|(k, _)| *k == key) {
                return false;
            }
            seen.push((key, value));
            true
        })
        .then_some(seen)
    }

    #[test]
    fn members_are_handed_on_only_where_the_whole_read_agrees() {
        let limits = InputLimits::DEFAULT;
        let text = r#"{"a": "x", "b": [1, {"c": null}], "d": 5}"#;
        let read_whole = read(text, &limits).unwrap().value;
        let handed: Map<String, Value> = members(text, &limits).unwrap().into_iter().collect();
        assert_eq!(Value::Object(handed), read_whole);
        assert_eq!(members("{}", &limits), Some(Vec::new()));
        // What the whole read refuses, changes or lists.
        for text in [
            r#"{"a": 1, "a": 2}"#,
            r#"{"a": {"x": 1, "x": 2}}"#,
            r#"{"a": 5.0}"#,
            r#"{"a": [1e400]}"#,
            r#"{"a": 1"#,
            r#"{"a": 1} x"#,
            r#""{\"a\": 1}""#,
            "[1]",
            " {}",
        ] {
            assert_eq!(members(text, &limits), None, "{text}");
        }
        // The limits, counted as the whole read counts them.
        for limits in [
            InputLimits::DEFAULT.with_max_members(2),
            InputLimits::DEFAULT.with_max_depth(2),
            InputLimits::DEFAULT.with_max_nodes(4),
            InputLimits::DEFAULT.with_max_items(1),
        ] {
            for text in [
                r#"{"a": 1, "b": 2}"#,
                r#"{"a": 1, "b": 2, "c": 3}"#,
                r#"{"a": [1]}"#,
                r#"{"a": [[1]]}"#,
                r#"{"a": [1, 2]}"#,
            ] {
                assert_eq!(
                    members(text, &limits).is_some(),
                    read(text, &limits).is_ok(),
                    "{text} under {limits:?}"
                );
            }
        }
    }

    #[test]
    fn duplicate_keys_are_refused_at_every_depth() {
        let err = read(r#"{"point": {"x": 1, "x": 2}}"#, &InputLimits::DEFAULT).unwrap_err();
        assert!(
            matches!(err, Refusal::Duplicate { ref pointer, ref key } if pointer == "/point/x" && key == "x"),
            "{err:?}"
        );
        let err = read(
            r#"[{"a~b": 1}, {"a/b": 1, "a/b": 1}]"#,
            &InputLimits::DEFAULT,
        )
        .unwrap_err();
        assert!(matches!(err, Refusal::Duplicate { ref pointer, .. } if pointer == "/1/a~1b"));
    }

    #[test]
    fn checking_alone_finds_the_same_refusals() {
        assert!(check(r#"{"a": [1, {"b": "x"}], "c": 1.5}"#, &InputLimits::DEFAULT).is_ok());
        let err = check(
            r#"{"p": {"a": [1, {"x": 1, "x": 2}]}}"#,
            &InputLimits::DEFAULT,
        )
        .unwrap_err();
        assert!(matches!(err, Refusal::Duplicate { ref pointer, .. } if pointer == "/p/a/1/x"));
        let limits = InputLimits::DEFAULT.with_max_items(2);
        let err = check(r#"{"a": [1, 2, 3]}"#, &limits).unwrap_err();
        assert!(matches!(err, Refusal::Limit(Limit::Items, ref p) if p == "/a"));
        assert!(matches!(
            check("{", &InputLimits::DEFAULT).unwrap_err(),
            Refusal::Syntax(_)
        ));
    }

    #[test]
    fn limits_stop_the_read_where_they_are_broken() {
        let limits = InputLimits::DEFAULT.with_max_members(2);
        let err = read(r#"{"a": {"x": 1, "y": 2, "z": 3}}"#, &limits).unwrap_err();
        assert!(matches!(err, Refusal::Limit(Limit::Members, ref p) if p == "/a"));
        let limits = InputLimits::DEFAULT.with_max_items(2);
        let err = read(r#"{"a": [1, 2, 3]}"#, &limits).unwrap_err();
        assert!(matches!(err, Refusal::Limit(Limit::Items, ref p) if p == "/a"));
        let limits = InputLimits::DEFAULT.with_max_depth(2);
        let err = read(r#"{"a": {"b": {}}}"#, &limits).unwrap_err();
        assert!(matches!(err, Refusal::Limit(Limit::Depth, ref p) if p == "/a/b"));
        let limits = InputLimits::DEFAULT.with_max_nodes(3);
        let err = read(r#"{"a": 1, "b": 2, "c": 3}"#, &limits).unwrap_err();
        assert!(matches!(err, Refusal::Limit(Limit::Nodes, ref p) if p == "/c"));
        let limits = InputLimits::DEFAULT.with_max_bytes(4);
        assert!(matches!(
            read(r#"{"a":1}"#, &limits).unwrap_err(),
            Refusal::Limit(Limit::Bytes, _)
        ));
        assert!(matches!(
            read(r#"{"a":1"#, &InputLimits::DEFAULT).unwrap_err(),
            Refusal::Syntax(_)
        ));
    }
}

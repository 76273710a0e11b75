//! What the typed `#[arg]` checks found, in the words the explanation of a document uses.
//!
//! When serde read the arguments into the tool's struct and only its `#[arg]` constraints
//! failed, those failures are every problem with the call: serde has already refused unknown
//! and missing keys, wrong types and repeated keys, and a tool whose schema has constraints
//! serde cannot see validates fully instead. The checks then say what broke from the typed
//! values they hold, and the document is not read a second time to find it again.
//! `tests/differential.rs` holds these messages to the full validator's.

use crate::error::FieldError;
use crate::json::number::Num;
use crate::json::text::{brief_str, escape, push_int};
use crate::schema::Compiled;
use crate::spec::{Bound, Constraint, ParamSpec, range_bounds};
use crate::validate::explain::{describe_text, out_of_range, too_long, too_short};

/// The broken `#[arg]` constraints of one call, each with its pointer and message. Empty on
/// the success path, where it allocates nothing.
#[doc(hidden)]
pub struct Findings<'d> {
    /// The tool's compiled `pattern`/`format` checks, one per parameter.
    compiled: &'d Compiled,
    fields: Vec<FieldError>,
}

impl<'d> Findings<'d> {
    pub(crate) fn new(compiled: &'d Compiled) -> Self {
        Self {
            compiled,
            fields: Vec::new(),
        }
    }

    /// Whether `text` satisfies the `pattern`/`format` constraints of parameter `index`.
    pub(crate) fn text_matches(&self, index: usize, text: &str) -> bool {
        text_matches(self.compiled, index, text)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    pub(crate) fn into_fields(self) -> Vec<FieldError> {
        self.fields
    }

    /// A number outside its `range`: one message per bound it breaks, as the schema's
    /// `minimum`, `maximum`, `exclusiveMinimum` and `exclusiveMaximum` would say it. `n` is
    /// compared; `shown` is how the message writes it (the JSON the model sent reads back
    /// the same).
    #[cold]
    #[inline(never)]
    pub(crate) fn range(
        &mut self,
        param: &ParamSpec,
        constraint: &Constraint,
        n: Num,
        shown: &str,
    ) {
        let pointer = pointer(param);
        for (bound, side) in range_bounds(constraint) {
            if let Some(bound) = bound.filter(|b| side.broken_by(n, *b)) {
                let message = out_of_range(shown, side, |out| push_bound(out, bound));
                self.fields.push(FieldError::new(pointer.clone(), message));
            }
        }
    }

    /// A string or a list outside its `length`, as `minLength`/`maxLength` or
    /// `minItems`/`maxItems` would say it. `text` is the string (for the message that quotes
    /// it), `None` for a list.
    #[cold]
    #[inline(never)]
    pub(crate) fn length(
        &mut self,
        param: &ParamSpec,
        constraint: &Constraint,
        len: usize,
        text: Option<&str>,
    ) {
        let Constraint::Length { kind, min, max } = *constraint else {
            return;
        };
        let len = len as u64;
        let message = match (min.filter(|m| len < *m), max.filter(|m| len > *m)) {
            (Some(min), _) => {
                let shown = text.map(brief_str).unwrap_or_default();
                too_short(kind, &shown, len, min)
            }
            (None, Some(max)) => too_long(kind, len, max),
            (None, None) => return,
        };
        self.fields.push(FieldError::new(pointer(param), message));
    }

    /// A string that breaks the `pattern`/`format` constraints of parameter `index`, in the
    /// words of the validator that checked it.
    #[cold]
    #[inline(never)]
    pub(crate) fn text(&mut self, param: &ParamSpec, index: usize, text: &str) {
        if let Some(Some(validator)) = self.compiled.text.get(index) {
            let value = serde_json::Value::String(text.to_owned());
            describe_text(validator, &value, &pointer(param), &mut self.fields);
        }
    }
}

/// A bound as the schema writes it: integers by a digit loop, floats as serde_json writes
/// them.
fn push_bound(out: &mut String, bound: Bound) {
    match bound {
        Bound::Int(n) => push_int(out, i128::from(n)),
        Bound::UInt(n) => push_int(out, i128::from(n)),
        Bound::Float(_) => out.push_str(&bound.to_json().to_string()),
    }
}

/// A number as the explanation of a document quotes it: an integer's digits; a float that
/// holds an integer (`5.0`) as that integer, since the explaining reader reads such a literal
/// as the integer it is; any other float as serde_json writes an `f64`.
pub(crate) fn shown(n: Num) -> String {
    /// 2^64: every integral float below it (and from -2^63) is an `i64` or a `u64`.
    const TWO_TO_64: f64 = 18_446_744_073_709_551_616.0;
    let mut out = String::new();
    match n {
        Num::Int(i) => push_int(&mut out, i),
        #[allow(clippy::cast_possible_truncation)]
        Num::Float(f) if f.fract() == 0.0 && f >= i64::MIN as f64 && f < TWO_TO_64 => {
            push_int(&mut out, f as i128);
        }
        Num::Float(f) => {
            out = serde_json::Number::from_f64(f).map_or_else(|| f.to_string(), |n| n.to_string());
        }
    }
    out
}

/// Whether `text` satisfies the `pattern`/`format` constraints of parameter `index`, with
/// the engine the schema validator uses.
pub(crate) fn text_matches(compiled: &Compiled, index: usize, text: &str) -> bool {
    match compiled.text.get(index) {
        Some(Some(validator)) => validator.is_valid(&serde_json::Value::String(text.to_owned())),
        Some(None) => true,
        None => false,
    }
}

/// The parameter's JSON pointer. A name of plain characters is its own segment.
fn pointer(param: &ParamSpec) -> String {
    let name = param.name;
    let plain = name.len() <= crate::echo::ECHO_CAP
        && name
            .bytes()
            .all(|b| b.is_ascii_graphic() && b != b'~' && b != b'/');
    if plain {
        let mut pointer = String::with_capacity(name.len() + 1);
        pointer.push('/');
        pointer.push_str(name);
        pointer
    } else {
        format!("/{}", escape(name))
    }
}

//! Limits on the size and shape of a call's arguments, checked while they are read.
//!
//! A model's arguments are untrusted input. Their text is bounded by [`InputLimits::max_bytes`],
//! but text alone does not bound memory: a parsed document costs per value, not per byte (a
//! two-byte `0,` becomes a 72-byte `serde_json::Value`), so the number of values, the members of
//! one object, the items of one array and the nesting depth are limited too. Every reader in the
//! crate (the typed read, the reader behind the explanations, the check of a parsed value a host
//! hands in) stops at the first limit it meets, before building more.

use std::fmt;

use serde_json::Value;

use crate::error::FieldError;

/// Limits on a call's arguments. Exceeding one is an `invalid_arguments` error that names the
/// limit, its value and what to send instead.
///
/// The defaults fit any call a model writes and bound what one call can cost:
///
/// | limit | default | why |
/// |---|---|---|
/// | `max_bytes` | 1 MiB | a model's whole response is capped by its output tokens (tens of thousands; about 4 bytes each), so no model writes a larger call; larger documents come from elsewhere and belong in a file or a URL |
/// | `max_depth` | 64 | tool schemas nest a few levels (OpenAI's strict mode allows 10); 64 leaves room for recursive types and free-form JSON and keeps every reader's stack small |
/// | `max_nodes` | 100,000 | every JSON value costs a parsed node; at the default, a call's parsed arguments stay within a few megabytes |
/// | `max_members` | 1,000 | an object with more keys than this is a data set, not parameters |
/// | `max_items` | 10,000 | the same for one array (an embedding of 4,096 numbers fits) |
///
/// Set them per toolbox with [`Defaults::input_limits`](crate::policy::Defaults::input_limits),
/// per tool with `#[tool(limits(max_bytes = 4_194_304))]` or
/// [`ToolDefinition::with_input_limits`](crate::ToolDefinition::with_input_limits).
///
/// ```
/// use toolsmith::InputLimits;
/// let limits = InputLimits::default().with_max_bytes(4 << 20).with_max_items(50_000);
/// assert_eq!(limits.max_bytes, 4 << 20);
/// assert_eq!(limits.max_depth, InputLimits::DEFAULT.max_depth);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct InputLimits {
    /// Bytes of argument text (UTF-8), including any JSON-string wrapping.
    pub max_bytes: usize,
    /// Objects and arrays inside one another; the arguments object itself is depth 1.
    pub max_depth: usize,
    /// JSON values in the whole document (every object, array, string, number, boolean and
    /// `null`, the arguments object included).
    pub max_nodes: usize,
    /// Keys of any one object.
    pub max_members: usize,
    /// Items of any one array.
    pub max_items: usize,
}

impl InputLimits {
    /// The defaults (see the table above).
    pub const DEFAULT: Self = Self {
        max_bytes: 1 << 20,
        max_depth: 64,
        max_nodes: 100_000,
        max_members: 1_000,
        max_items: 10_000,
    };

    /// Sets [`max_bytes`](Self::max_bytes).
    #[must_use]
    pub const fn with_max_bytes(mut self, n: usize) -> Self {
        self.max_bytes = n;
        self
    }

    /// Sets [`max_depth`](Self::max_depth).
    #[must_use]
    pub const fn with_max_depth(mut self, n: usize) -> Self {
        self.max_depth = n;
        self
    }

    /// Sets [`max_nodes`](Self::max_nodes).
    #[must_use]
    pub const fn with_max_nodes(mut self, n: usize) -> Self {
        self.max_nodes = n;
        self
    }

    /// Sets [`max_members`](Self::max_members).
    #[must_use]
    pub const fn with_max_members(mut self, n: usize) -> Self {
        self.max_members = n;
        self
    }

    /// Sets [`max_items`](Self::max_items).
    #[must_use]
    pub const fn with_max_items(mut self, n: usize) -> Self {
        self.max_items = n;
        self
    }

    /// Whether `n` bytes of text are too many.
    pub(crate) fn too_long(&self, n: usize) -> bool {
        n > self.max_bytes
    }
}

impl Default for InputLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Which limit a document broke.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Limit {
    Bytes,
    Depth,
    Nodes,
    Members,
    Items,
}

impl Limit {
    fn value(self, limits: &InputLimits) -> usize {
        match self {
            Self::Bytes => limits.max_bytes,
            Self::Depth => limits.max_depth,
            Self::Nodes => limits.max_nodes,
            Self::Members => limits.max_members,
            Self::Items => limits.max_items,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Bytes => "max_bytes",
            Self::Depth => "max_depth",
            Self::Nodes => "max_nodes",
            Self::Members => "max_members",
            Self::Items => "max_items",
        }
    }

    /// The problem, at `pointer`, written for the model.
    pub(crate) fn field(self, limits: &InputLimits, pointer: String) -> FieldError {
        let n = self.value(limits);
        let name = self.name();
        let message = match self {
            Self::Bytes => format!(
                "the arguments are longer than the limit of {n} bytes ({name}); send less text in one call (split the work into several calls, or pass a reference such as a URL or file name instead of the content)"
            ),
            Self::Depth => format!(
                "nested more than {n} levels deep, the limit ({name}); send a flatter structure"
            ),
            Self::Nodes => format!(
                "the arguments hold more than {n} JSON values, the limit ({name}); send fewer values in one call and split the work into several calls"
            ),
            Self::Members => format!(
                "this object has more than {n} keys, the limit ({name}); send fewer keys in one call"
            ),
            Self::Items => format!(
                "this array has more than {n} items, the limit ({name}); send fewer items in one call and split the work into several calls"
            ),
        };
        FieldError::new(pointer, message)
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One step of a JSON pointer.
#[derive(Clone, Debug)]
pub(crate) enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

/// The most characters a pointer shows: each key in it is cut to the echo cap, and a deep
/// pointer is cut as a whole.
pub(crate) const MAX_POINTER: usize = 300;

/// The JSON pointer (RFC 6901) of `steps`, each key cut to the echo cap, the whole to
/// [`MAX_POINTER`] characters.
pub(crate) fn pointer<'a>(steps: impl IntoIterator<Item = Step<'a>>) -> String {
    let mut out = String::new();
    for step in steps {
        out.push('/');
        match step {
            Step::Key(key) => out.push_str(&crate::json::text::escape(key)),
            Step::Index(i) => out.push_str(&i.to_string()),
        }
        if out.len() > MAX_POINTER * 4 {
            break;
        }
    }
    if out.len() > MAX_POINTER {
        out = crate::echo::echo_to(&out, MAX_POINTER).into_owned();
    }
    out
}

/// What the check of a parsed value found.
pub(crate) struct ValueCheck {
    /// The first limit broken, with its pointer.
    pub(crate) broken: Option<(Limit, String)>,
    /// A float that holds an integer exactly (`5.0`, below 2^53), so the value needs a copy
    /// with such numbers written as integers.
    pub(crate) integral_floats: bool,
    /// Floats that look integral beyond 2^53, where a float stands for many integers: their
    /// pointer and their JSON text (at most a few are kept).
    pub(crate) beyond_exact: Vec<(String, String)>,
}

/// The largest magnitude up to which every integer has exactly one `f64`; a float beyond it
/// stands for a range of integers, so it cannot be taken as any one of them.
pub(crate) const EXACT_FLOAT_INTEGERS: f64 = 9_007_199_254_740_991.0;

/// Whether `f` is an integer a float holds unambiguously.
pub(crate) fn exact_integral(f: f64) -> bool {
    f.fract() == 0.0 && f.abs() <= EXACT_FLOAT_INTEGERS
}

/// Checks a parsed value against `limits` without recursion (a host may hand in a value
/// nested deeper than any stack), in document order.
pub(crate) fn check_value(value: &Value, limits: &InputLimits) -> ValueCheck {
    flat_check(value, limits).unwrap_or_else(|| walk(value, limits))
}

/// [`check_value`] for the common case, an object of scalars within the limits, in one pass
/// without a stack; `None` for anything else.
fn flat_check(value: &Value, limits: &InputLimits) -> Option<ValueCheck> {
    let Value::Object(map) = value else {
        return None;
    };
    if map.len() > limits.max_members || map.len() >= limits.max_nodes || limits.max_depth == 0 {
        return None;
    }
    let mut bytes = 2usize;
    let mut integral_floats = false;
    for (key, value) in map {
        bytes += key.len() + 4;
        match value {
            Value::Object(_) | Value::Array(_) => return None,
            Value::String(text) => bytes += text.len() + 2,
            Value::Number(n) if n.is_f64() => match n.as_f64() {
                Some(f) if f.fract() == 0.0 && !exact_integral(f) => return None,
                Some(f) if f.fract() == 0.0 => {
                    integral_floats = true;
                    bytes += 1;
                }
                _ => bytes += 1,
            },
            _ => bytes += 1,
        }
    }
    (bytes <= limits.max_bytes).then_some(ValueCheck {
        broken: None,
        integral_floats,
        beyond_exact: Vec::new(),
    })
}

fn walk(value: &Value, limits: &InputLimits) -> ValueCheck {
    enum Frame<'v> {
        Object(serde_json::map::Iter<'v>),
        Array(std::iter::Enumerate<std::slice::Iter<'v, Value>>),
    }
    let mut found = ValueCheck {
        broken: None,
        integral_floats: false,
        beyond_exact: Vec::new(),
    };
    // The path to the value being looked at: one frame per open container, and the step
    // that led into each child.
    let mut frames: Vec<Frame<'_>> = Vec::new();
    let mut steps: Vec<Step<'_>> = Vec::new();
    let mut nodes = 0usize;
    // The value's size as JSON text, counted without escapes or spaces: what `max_bytes`
    // bounds when there is no text.
    let mut bytes = 0usize;
    let mut next = Some(value);
    loop {
        if let Some(value) = next.take() {
            nodes += 1;
            bytes = bytes.saturating_add(match value {
                Value::String(text) => text.len() + 2,
                Value::Object(map) => map.keys().map(|k| k.len() + 4).sum::<usize>() + 2,
                Value::Array(items) => items.len() + 2,
                _ => 1,
            });
            let container = matches!(value, Value::Object(_) | Value::Array(_));
            let broken = if nodes > limits.max_nodes {
                Some(Limit::Nodes)
            } else if bytes > limits.max_bytes {
                Some(Limit::Bytes)
            } else if container && frames.len() + 1 > limits.max_depth {
                Some(Limit::Depth)
            } else {
                match value {
                    Value::Object(map) if map.len() > limits.max_members => Some(Limit::Members),
                    Value::Array(items) if items.len() > limits.max_items => Some(Limit::Items),
                    _ => None,
                }
            };
            if let Some(limit) = broken {
                found.broken = Some((limit, pointer(steps.iter().cloned())));
                return found;
            }
            match value {
                Value::Object(map) => frames.push(Frame::Object(map.iter())),
                Value::Array(items) => frames.push(Frame::Array(items.iter().enumerate())),
                scalar => {
                    if let Value::Number(n) = scalar
                        && n.is_f64()
                        && let Some(f) = n.as_f64()
                        && f.fract() == 0.0
                    {
                        if exact_integral(f) {
                            found.integral_floats = true;
                        } else if found.beyond_exact.len() < 20 {
                            found
                                .beyond_exact
                                .push((pointer(steps.iter().cloned()), scalar.to_string()));
                        }
                    }
                    // A scalar closes at once: forget the step that led to it.
                    steps.pop();
                }
            }
        }
        // The next child of the innermost open container, or close it.
        let Some(frame) = frames.last_mut() else {
            return found;
        };
        let child = match frame {
            Frame::Object(iter) => iter.next().map(|(k, v)| (Step::Key(k), v)),
            Frame::Array(iter) => iter.next().map(|(i, v)| (Step::Index(i), v)),
        };
        match child {
            Some((step, child)) => {
                steps.push(step);
                next = Some(child);
            }
            None => {
                frames.pop();
                // The step into the container just closed (none for the root).
                steps.pop();
            }
        }
    }
}

/// `value` with every float that holds an integer unambiguously written as that integer
/// (`5.0` → `5`). Numbers beyond 2^53 written as floats stay floats, so an integer
/// parameter refuses them instead of taking a neighbouring integer.
pub(crate) fn integral_floats_as_integers(value: &Value) -> Value {
    match value {
        Value::Number(n) if n.is_f64() => match n.as_f64() {
            #[allow(clippy::cast_possible_truncation)]
            Some(f) if exact_integral(f) => Value::from(f as i64),
            _ => value.clone(),
        },
        Value::Array(items) => {
            Value::Array(items.iter().map(integral_floats_as_integers).collect())
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), integral_floats_as_integers(v)))
                .collect(),
        ),
        _ => value.clone(),
    }
}

/// Drops a value without recursion: a value nested deeper than the stack allows would
/// overflow it in `Drop`.
pub(crate) fn dismantle(value: Value) {
    let mut pending = vec![value];
    while let Some(value) = pending.pop() {
        match value {
            Value::Array(items) => pending.extend(items),
            Value::Object(map) => pending.extend(map.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nested(depth: usize) -> Value {
        let mut v = json!(1);
        for _ in 0..depth {
            v = Value::Array(vec![v]);
        }
        v
    }

    #[test]
    fn value_checks_find_the_first_broken_limit_with_its_pointer() {
        let limits = InputLimits::DEFAULT.with_max_items(2);
        let found = check_value(&json!({"a": [1, {"b": [1, 2, 3]}]}), &limits);
        assert_eq!(found.broken, Some((Limit::Items, "/a/1/b".to_owned())));
        let limits = InputLimits::DEFAULT.with_max_depth(3);
        let found = check_value(&json!({"a": [[1]], "b": [[[1]]]}), &limits);
        assert_eq!(found.broken, Some((Limit::Depth, "/b/0/0".to_owned())));
        let limits = InputLimits::DEFAULT.with_max_nodes(4);
        let found = check_value(&json!({"a~/": [1, 2, 3]}), &limits);
        assert_eq!(found.broken, Some((Limit::Nodes, "/a~0~1/2".to_owned())));
        let limits = InputLimits::DEFAULT.with_max_bytes(20);
        let found = check_value(&json!({"a": "0123456789", "b": "0123456789"}), &limits);
        assert_eq!(found.broken, Some((Limit::Bytes, "/a".to_owned())));
        let found = check_value(&json!({"a": 1, "b": 2.0}), &InputLimits::DEFAULT);
        assert!(found.broken.is_none());
        assert!(found.integral_floats);
        let found = check_value(
            &json!({"a": 1, "b": 2.5, "c": 1e300}),
            &InputLimits::DEFAULT,
        );
        assert!(!found.integral_floats);
    }

    #[test]
    fn pointers_are_bounded_however_deep() {
        let key = "k".repeat(100);
        let steps = (0..1000).map(|_| Step::Key(&key));
        let shown = pointer(steps);
        assert!(shown.chars().count() <= MAX_POINTER + 1, "{}", shown.len());
        assert!(shown.ends_with('…'));
        assert_eq!(pointer([Step::Key("a/b"), Step::Index(3)]), "/a~1b/3");
    }

    #[test]
    fn deep_values_are_checked_and_dropped_without_recursion() {
        let deep = nested(200_000);
        let found = check_value(&deep, &InputLimits::DEFAULT);
        assert_eq!(found.broken.map(|(l, _)| l), Some(Limit::Depth));
        assert!(
            check_value(&nested(63), &InputLimits::DEFAULT)
                .broken
                .is_none()
        );
        dismantle(deep);
    }

    #[test]
    fn only_unambiguous_integral_floats_become_integers() {
        let v = json!([5.0, -0.0, 5.5, 9007199254740991.0, 9007199254740992.0, 1e19]);
        assert_eq!(
            integral_floats_as_integers(&v),
            json!([5, 0, 5.5, 9007199254740991_i64, 9007199254740992.0, 1e19])
        );
    }
}

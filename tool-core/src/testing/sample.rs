//! Arguments made from a tool's input schema: a document the schema accepts, built keyword by
//! keyword and then checked with the same JSON Schema validator the toolbox compiles.
//!
//! Every property is filled in (optional ones too, so their constraints are exercised), each
//! number sits inside its bounds on a multiple of its `multipleOf`, each string fits its
//! lengths, `format` and `pattern` (strings for a pattern come from proptest's regex
//! strategy), and each array its item counts, `uniqueItems` and `contains`. Where a choice
//! can go wrong (a union, a pattern with lengths, `not`, `if`), other choices are tried in
//! turn until the validator accepts one.

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{Map, Value, json};

/// How deep a sample goes before optional properties and array items are left out.
const SHALLOW: usize = 6;
/// How deep a sample goes at all (a schema that recurses without end has none).
const DEEPEST: usize = 24;
/// How many sets of choices are tried before a schema is declared unsatisfiable here.
const VARIANTS: u64 = 32;

/// An argument document `schema` accepts, or `None` when none was found (a schema that
/// accepts nothing, or one whose constraints this sampler cannot meet together).
///
/// ```
/// use toolsmith::serde_json::json;
/// use toolsmith::testing::sample;
///
/// let schema = json!({
///     "type": "object",
///     "properties": {
///         "city": {"type": "string", "minLength": 2, "pattern": "^[A-Z][a-z]+$"},
///         "days": {"type": "integer", "minimum": 1, "maximum": 14},
///         "units": {"enum": ["metric", "imperial"]}
///     },
///     "required": ["city"],
///     "additionalProperties": false
/// });
/// let arguments = sample(&schema).unwrap();
/// assert!(arguments["city"].as_str().unwrap().len() >= 2);
/// assert_eq!(arguments["days"], json!(1));
/// assert_eq!(arguments["units"], json!("metric"));
/// ```
#[must_use]
pub fn sample(schema: &Value) -> Option<Value> {
    let validator = crate::schema::compile(schema).ok()?;
    (0..VARIANTS).find_map(|variant| {
        let value = Sampler::new(schema, variant).value(schema, 0, 0)?;
        validator.is_valid(&value).then_some(value)
    })
}

/// Builds one document for one set of choices (`variant`).
pub(super) struct Sampler<'s> {
    root: &'s Value,
    variant: u64,
}

impl<'s> Sampler<'s> {
    pub(super) fn new(root: &'s Value, variant: u64) -> Self {
        Self { root, variant }
    }

    /// Follows local `$ref`s (`#/$defs/...`, `#/definitions/...`, `#`).
    pub(super) fn resolve<'v>(&self, mut schema: &'v Value) -> &'v Value
    where
        's: 'v,
    {
        for _ in 0..32 {
            let Some(reference) = schema.get("$ref").and_then(Value::as_str) else {
                break;
            };
            let Some(pointer) = reference.strip_prefix('#') else {
                break;
            };
            match self.root.pointer(pointer) {
                Some(target) => schema = target,
                None => break,
            }
        }
        schema
    }

    /// Picks one of `n` options: the first for variant 0, another for each variant after.
    fn pick(&self, n: usize, salt: u64) -> usize {
        if n == 0 {
            return 0;
        }
        let turn = self.variant.wrapping_add(salt);
        usize::try_from(turn % n as u64).unwrap_or(0)
    }

    /// A value for `schema`; `nth` tells apart the items of one array.
    pub(super) fn value(&self, schema: &Value, nth: u64, depth: usize) -> Option<Value> {
        if depth > DEEPEST {
            return None;
        }
        let schema = self.resolve(schema);
        let node = match schema {
            Value::Bool(true) => return Some(json!("example")),
            Value::Object(node) => node,
            _ => return None,
        };
        if let Some(value) = node.get("const") {
            return Some(value.clone());
        }
        if let Some(values) = node.get("enum").and_then(Value::as_array) {
            return values.get(self.pick(values.len(), nth)).cloned();
        }
        if let Some(all) = node.get("allOf").and_then(Value::as_array) {
            return self.all_of(node, all, nth, depth);
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(branches) = node.get(key).and_then(Value::as_array) {
                return self.one_branch(branches, nth, depth);
            }
        }
        let ty = self.type_of(node)?;
        match ty {
            "null" => Some(Value::Null),
            "boolean" => Some(Value::Bool(nth % 2 == 0)),
            "integer" => integer(node, nth),
            "number" => number(node, nth),
            "string" => Some(Value::String(self.string(node, nth)?)),
            "array" => self.array(node, nth, depth),
            "object" => self.object(node, depth),
            _ => None,
        }
    }

    /// The type to build: the schema's own, else the one its keywords imply, else a string
    /// (a schema with no type accepts any).
    fn type_of(&self, node: &Map<String, Value>) -> Option<&'static str> {
        let declared: Vec<&str> = match node.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if declared.is_empty() {
            let implied = if ["properties", "required", "additionalProperties"]
                .iter()
                .any(|k| node.contains_key(*k))
            {
                "object"
            } else if ["items", "prefixItems", "minItems", "maxItems"]
                .iter()
                .any(|k| node.contains_key(*k))
            {
                "array"
            } else if ["minimum", "maximum", "multipleOf"]
                .iter()
                .any(|k| node.contains_key(*k))
            {
                "number"
            } else {
                "string"
            };
            return Some(implied);
        }
        // Anything but null first: the sample exercises more; null is the last choice.
        let mut ordered: Vec<&str> = declared.iter().copied().filter(|t| *t != "null").collect();
        if declared.contains(&"null") {
            ordered.push("null");
        }
        let at = self.pick(ordered.len(), 0);
        ordered.get(at).map(|t| static_type(t))
    }

    fn one_branch(&self, branches: &[Value], nth: u64, depth: usize) -> Option<Value> {
        let null = |b: &Value| self.resolve(b).get("type").and_then(Value::as_str) == Some("null");
        let mut ordered: Vec<&Value> = branches.iter().filter(|b| !null(b)).collect();
        ordered.extend(branches.iter().filter(|b| null(b)));
        let start = self.pick(ordered.len(), 0);
        (0..ordered.len()).find_map(|i| {
            let branch = ordered[(start + i) % ordered.len()];
            self.value(branch, nth, depth + 1)
        })
    }

    /// `allOf`: the schema's own keywords and each branch, objects merged; otherwise the
    /// first part's value (the validator judges whether the others agree).
    fn all_of(
        &self,
        node: &Map<String, Value>,
        all: &[Value],
        nth: u64,
        depth: usize,
    ) -> Option<Value> {
        let mut own = node.clone();
        own.remove("allOf");
        let mut parts = Vec::new();
        if own
            .keys()
            .any(|k| !matches!(k.as_str(), "description" | "title" | "$defs" | "default"))
        {
            parts.push(self.value(&Value::Object(own), nth, depth + 1)?);
        }
        for branch in all {
            parts.push(self.value(branch, nth, depth + 1)?);
        }
        let mut merged: Option<Value> = None;
        for part in parts {
            merged = Some(match (merged, part) {
                (Some(Value::Object(mut a)), Value::Object(b)) => {
                    a.extend(b);
                    Value::Object(a)
                }
                (Some(first), _) => first,
                (None, part) => part,
            });
        }
        merged
    }

    fn string(&self, node: &Map<String, Value>, nth: u64) -> Option<String> {
        let min = count(node, "minLength").unwrap_or(0);
        let max = count(node, "maxLength").unwrap_or(usize::MAX);
        let fits = |s: &str| (min..=max).contains(&s.chars().count());
        if let Some(sample) = node
            .get("format")
            .and_then(Value::as_str)
            .and_then(formatted)
            && fits(sample)
        {
            return Some(sample.to_owned());
        }
        if let Some(pattern) = node.get("pattern").and_then(Value::as_str) {
            return matching(pattern, self.variant.wrapping_add(nth), &fits);
        }
        let mut text = if nth == 0 {
            "example".to_owned()
        } else {
            format!("example-{nth}")
        };
        let have = text.chars().count();
        if have < min {
            text.extend(std::iter::repeat_n('x', min - have));
        }
        if text.chars().count() > max {
            text = format!("{nth}")
                .chars()
                .chain(std::iter::repeat('x'))
                .take(max)
                .collect();
        }
        Some(text)
    }

    fn array(&self, node: &Map<String, Value>, nth: u64, depth: usize) -> Option<Value> {
        let min = count(node, "minItems").unwrap_or(0);
        let max = count(node, "maxItems").unwrap_or(usize::MAX);
        let prefix: &[Value] = node
            .get("prefixItems")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice);
        let items = node.get("items");
        let mut out = Vec::new();
        if let Some(contains) = node.get("contains") {
            out.push(self.value(contains, nth, depth + 1)?);
        }
        for (i, schema) in prefix.iter().enumerate().skip(out.len()) {
            out.push(self.value(schema, i as u64, depth + 1)?);
        }
        let open = !matches!(items, Some(Value::Bool(false)));
        let want = if depth >= SHALLOW { min } else { min.max(1) }.min(max);
        let unique = node.get("uniqueItems") == Some(&Value::Bool(true));
        while open && out.len() < want {
            let i = out.len() as u64;
            let item = match items {
                Some(schema) => self.value(schema, if unique { i } else { nth }, depth + 1)?,
                None => json!(format!("item-{i}")),
            };
            out.push(item);
        }
        Some(Value::Array(out))
    }

    fn object(&self, node: &Map<String, Value>, depth: usize) -> Option<Value> {
        let required: Vec<&str> = node
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let properties = node.get("properties").and_then(Value::as_object);
        let optional_too = depth < SHALLOW && self.variant % 2 == 0;
        let mut out = Map::new();
        for (name, schema) in properties.into_iter().flatten() {
            if required.contains(&name.as_str()) || optional_too {
                match self.value(schema, 0, depth + 1) {
                    Some(value) => {
                        out.insert(name.clone(), value);
                    }
                    None if required.contains(&name.as_str()) => return None,
                    None => {}
                }
            }
        }
        let extra = match node.get("additionalProperties") {
            Some(Value::Bool(false)) => None,
            Some(schema) => Some(schema),
            None => Some(&Value::Bool(true)),
        };
        for name in &required {
            if !out.contains_key(*name) {
                let value = self.value(extra?, 0, depth + 1)?;
                out.insert((*name).to_owned(), value);
            }
        }
        let min = count(node, "minProperties").unwrap_or(0);
        let mut i = 0;
        while out.len() < min {
            let value = self.value(extra?, i, depth + 1)?;
            out.insert(format!("extra_{i}"), value);
            i += 1;
        }
        if let Some(max) = count(node, "maxProperties") {
            let optional: Vec<String> = out
                .keys()
                .filter(|k| !required.contains(&k.as_str()))
                .cloned()
                .collect();
            for name in optional.into_iter().rev() {
                if out.len() <= max {
                    break;
                }
                out.shift_remove(&name);
            }
        }
        Some(Value::Object(out))
    }
}

/// The type names a schema may declare, as `'static` strings.
pub(super) fn static_type(t: &str) -> &'static str {
    match t {
        "null" => "null",
        "boolean" => "boolean",
        "integer" => "integer",
        "number" => "number",
        "array" => "array",
        "object" => "object",
        _ => "string",
    }
}

/// A count keyword (`minLength`, `maxItems`...), when it is a whole number.
pub(super) fn count(node: &Map<String, Value>, key: &str) -> Option<usize> {
    node.get(key)
        .and_then(Value::as_f64)
        .filter(|n| *n >= 0.0 && n.fract() == 0.0)
        .map(|n| if n > 1e9 { usize::MAX } else { n as usize })
}

/// The inclusive bounds a number must fall within, and its `multipleOf`.
pub(super) struct Bounds {
    pub(super) low: f64,
    pub(super) high: f64,
    pub(super) step: Option<f64>,
}

pub(super) fn bounds(node: &Map<String, Value>, integer: bool) -> Bounds {
    let num = |k: &str| node.get(k).and_then(Value::as_f64);
    let nudge: f64 = if integer { 1.0 } else { 1e-6 };
    let mut low = num("minimum").unwrap_or(f64::NEG_INFINITY);
    if let Some(x) = num("exclusiveMinimum") {
        low = low.max(if integer {
            x.floor() + 1.0
        } else {
            x + nudge.max(x.abs() * 1e-9)
        });
    }
    let mut high = num("maximum").unwrap_or(f64::INFINITY);
    if let Some(x) = num("exclusiveMaximum") {
        high = high.min(if integer {
            x.ceil() - 1.0
        } else {
            x - nudge.max(x.abs() * 1e-9)
        });
    }
    if integer {
        low = low.ceil();
        high = high.floor();
    }
    Bounds {
        low,
        high,
        step: num("multipleOf").filter(|m| *m > 0.0),
    }
}

/// Whether `value` is a multiple of `step` as the validator judges it.
pub(super) fn multiple_of(value: f64, step: f64) -> bool {
    let ratio = value / step;
    ratio.is_finite() && (ratio.fract() == 0.0 || (ratio % 1.0) < f64::EPSILON)
}

/// A number within `bounds` near `wish`, on a multiple of the step when there is one.
fn within(bounds: &Bounds, wish: f64) -> Option<f64> {
    if bounds.low > bounds.high {
        return None;
    }
    let clamp = |x: f64| x.clamp(bounds.low, bounds.high);
    let Some(step) = bounds.step else {
        return Some(clamp(wish));
    };
    // Whole multiples, from the one nearest the wish outwards.
    let first = (clamp(wish) / step).ceil();
    let last = (bounds.high / step).floor();
    let start = (bounds.low / step).ceil();
    [first, start, 1.0, 0.0, last]
        .into_iter()
        .filter(|k| k.is_finite())
        .map(|k| k * step)
        .find(|v| (bounds.low..=bounds.high).contains(v) && multiple_of(*v, step))
}

fn integer(node: &Map<String, Value>, nth: u64) -> Option<Value> {
    let value = within(&bounds(node, true), 1.0 + nth as f64)?;
    Some(whole(value))
}

/// `value` written as an integer.
pub(super) fn whole(value: f64) -> Value {
    if (0.0..1.8e19).contains(&value) {
        json!(value as u64)
    } else if (-9.2e18..0.0).contains(&value) {
        json!(value as i64)
    } else {
        json!(value)
    }
}

fn number(node: &Map<String, Value>, nth: u64) -> Option<Value> {
    let bounds = bounds(node, false);
    let wish = if bounds.step.is_some() {
        1.0 + nth as f64
    } else {
        1.5 + nth as f64
    };
    let value = within(&bounds, wish)?;
    if value.fract() == 0.0 && value.abs() < 1e15 {
        return Some(whole(value));
    }
    serde_json::Number::from_f64(value).map(Value::Number)
}

/// A value for a `format` the validator checks.
fn formatted(format: &str) -> Option<&'static str> {
    Some(match format {
        "date-time" => "2025-05-01T12:30:00Z",
        "date" => "2025-05-01",
        "time" => "12:30:00Z",
        "duration" => "P1DT2H",
        "email" | "idn-email" => "someone@example.com",
        "hostname" | "idn-hostname" => "example.com",
        "ipv4" => "192.0.2.1",
        "ipv6" => "2001:db8::1",
        "uri" | "iri" => "https://example.com/a",
        "uri-reference" | "iri-reference" => "/a",
        "uri-template" => "https://example.com/{id}",
        "uuid" => "123e4567-e89b-42d3-a456-426614174000",
        "json-pointer" => "/a",
        "relative-json-pointer" => "0/a",
        "regex" => "^a+$",
        _ => return None,
    })
}

/// A string `pattern` matches, of a length `fits` accepts, from proptest's regex strategy.
fn matching(pattern: &str, seed: u64, fits: &dyn Fn(&str) -> bool) -> Option<String> {
    // The generator takes no anchors; without them it makes strings the pattern matches
    // (the validator checks each sample against the pattern as written).
    let strategy = proptest::string::string_regex(&unanchored(pattern)).ok()?;
    let mut seed_bytes = [0u8; 32];
    seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes);
    let mut runner = TestRunner::new_with_rng(Config::default(), rng);
    (0..64).find_map(|_| {
        let text = strategy.new_tree(&mut runner).ok()?.current();
        fits(&text).then_some(text)
    })
}

/// `pattern` without its anchors (`^` and `$` outside a character class).
fn unanchored(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    let (mut escaped, mut in_class) = (false, false);
    for c in pattern.chars() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '[' => in_class = true,
            ']' => in_class = false,
            '^' | '$' if !in_class => continue,
            _ => {}
        }
        out.push(c);
    }
    out
}

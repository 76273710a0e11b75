//! Near misses: a valid argument document changed in one place so that it breaks exactly one
//! constraint of the schema, with where the refusal must point.
//!
//! Each candidate change is kept only when the JSON Schema validator the toolbox compiles
//! finds exactly one violation, at the place changed; a change that breaks two things at
//! once (a shorter string that also misses its pattern) is dropped, so each mutation tests
//! one rule.

use serde_json::{Map, Value, json};

use super::sample::{Sampler, bounds, count, multiple_of, sample, static_type, whole};
use crate::json::text::escape;

/// Arguments that break exactly one constraint of a schema: the document, where a validator
/// must point (a JSON Pointer into the arguments, as [`FieldError::pointer`](crate::FieldError)
/// gives it), and the JSON Schema keyword it breaks.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Mutation {
    /// The arguments.
    pub arguments: Value,
    /// Where the violation is: the value changed, or for a property left out or added, the
    /// property's place.
    pub pointer: String,
    /// The keyword broken: `required`, `type`, `enum`, `const`, `minimum`, `maximum`,
    /// `exclusiveMinimum`, `exclusiveMaximum`, `multipleOf`, `minLength`, `maxLength`,
    /// `pattern`, `format`, `minItems`, `maxItems`, `uniqueItems`, `additionalProperties`,
    /// `minProperties` or `maxProperties`.
    pub keyword: &'static str,
}

/// Every mutation of [`sample`]'s document for `schema`, each breaking exactly one
/// constraint. Empty when the schema has no sample, or nothing to break (`{}` with open
/// properties). The document as a whole keeps its object shape: providers deliver arguments
/// as an object, so a change of the root's type is not one a model can make.
///
/// ```
/// use toolsmith::serde_json::json;
/// use toolsmith::testing::mutations;
///
/// let schema = json!({
///     "type": "object",
///     "properties": {"days": {"type": "integer", "minimum": 1, "maximum": 14}},
///     "required": ["days"],
///     "additionalProperties": false
/// });
/// let all = mutations(&schema);
/// let kinds: Vec<(&str, &str)> = all
///     .iter()
///     .map(|m| (m.pointer.as_str(), m.keyword))
///     .collect();
/// assert_eq!(
///     kinds,
///     [
///         ("/unexpected_field", "additionalProperties"),
///         ("/days", "required"),
///         ("/days", "type"),
///         ("/days", "type"),
///         ("/days", "minimum"),
///         ("/days", "maximum"),
///     ]
/// );
/// ```
#[must_use]
pub fn mutations(schema: &Value) -> Vec<Mutation> {
    let (Some(document), Ok(validator)) = (sample(schema), crate::schema::compile(schema)) else {
        return Vec::new();
    };
    let mut sites = Vec::new();
    let walker = Walker {
        sampler: Sampler::new(schema, 0),
    };
    walker.walk(schema, &document, "", &mut sites, 0);
    let mut out: Vec<Mutation> = Vec::new();
    for site in sites {
        let mut arguments = document.clone();
        let changed = if site.at.is_empty() {
            Some(&mut arguments)
        } else {
            arguments.pointer_mut(&site.at)
        };
        let Some(slot) = changed else { continue };
        match site.change {
            Change::Replace(value) => *slot = value,
            Change::Remove(name) => {
                if let Value::Object(map) = slot {
                    map.shift_remove(&name);
                }
            }
        }
        if one_violation_at(&validator, &arguments, &site.pointer)
            && !out.iter().any(|m| m.arguments == arguments)
        {
            out.push(Mutation {
                arguments,
                pointer: site.pointer,
                keyword: site.keyword,
            });
        }
    }
    out
}

/// Whether the validator finds exactly one violation in `arguments`, at `pointer`.
fn one_violation_at(validator: &jsonschema::Validator, arguments: &Value, pointer: &str) -> bool {
    use jsonschema::error::ValidationErrorKind as Kind;
    let errors: Vec<_> = validator.iter_errors(arguments).collect();
    let [error] = &errors[..] else {
        return false;
    };
    let at = error.instance_path().as_str().to_owned();
    let place = match error.kind() {
        Kind::Required { property } => {
            format!("{at}/{}", escape(property.as_str().unwrap_or_default()))
        }
        Kind::AdditionalProperties { unexpected } | Kind::UnevaluatedProperties { unexpected } => {
            match &unexpected[..] {
                [one] => format!("{at}/{}", escape(one)),
                _ => return false,
            }
        }
        _ => at,
    };
    place == pointer
}

/// One change to try: at `at` (a pointer to the value changed), reported at `pointer`.
struct Site {
    at: String,
    pointer: String,
    keyword: &'static str,
    change: Change,
}

enum Change {
    Replace(Value),
    /// Leave out this property of the object at `at`.
    Remove(String),
}

struct Walker<'s> {
    sampler: Sampler<'s>,
}

impl Walker<'_> {
    /// Collects the changes to `value` (at `at`, checked by `schema`) and to what it holds.
    fn walk(&self, schema: &Value, value: &Value, at: &str, out: &mut Vec<Site>, depth: usize) {
        if depth > 32 {
            return;
        }
        let schema = self.sampler.resolve(schema);
        let Some(node) = schema.as_object() else {
            return;
        };
        if let Some(all) = node.get("allOf").and_then(Value::as_array) {
            for branch in all {
                self.walk(branch, value, at, out, depth + 1);
            }
        }
        // `Option<T>` and other unions: the rules of the one branch the value is in. Whether
        // a change breaks only that branch is the validator's to judge.
        for key in ["anyOf", "oneOf"] {
            if let Some(branches) = node.get(key).and_then(Value::as_array) {
                let fitting: Vec<&Value> = branches
                    .iter()
                    .filter(|b| matches_type(self.sampler.resolve(b), value))
                    .collect();
                if let [branch] = fitting[..] {
                    self.walk(branch, value, at, out, depth + 1);
                }
            }
        }
        if !at.is_empty() {
            self.types(node, value, at, out);
            values(node, value, at, out);
        }
        match value {
            Value::Object(map) => self.object(node, map, at, out, depth),
            Value::Array(items) => self.array(node, items, at, out, depth),
            Value::String(text) => strings(node, text, at, out),
            Value::Number(n) => {
                if let Some(n) = n.as_f64() {
                    numbers(node, value, n, at, out);
                }
            }
            _ => {}
        }
    }

    /// A value of a type the schema (or every branch of its union) does not take; `null`
    /// where null is not taken, as a model in strict mode sends it.
    fn types(&self, node: &Map<String, Value>, value: &Value, at: &str, out: &mut Vec<Site>) {
        let allowed = self.allowed_types(node);
        if allowed.is_empty() {
            return;
        }
        let takes =
            |ty: &str| allowed.contains(&ty) || (ty == "integer" && allowed.contains(&"number"));
        let wrong = [
            ("string", json!("text")),
            ("integer", json!(7)),
            ("number", json!(7.5)),
            ("boolean", json!(true)),
            ("array", json!([])),
            ("object", json!({})),
        ];
        if let Some((_, replacement)) = wrong.into_iter().find(|(ty, v)| !takes(ty) && v != value) {
            out.push(site(at, "type", Change::Replace(replacement)));
        }
        if !takes("null") && !value.is_null() {
            out.push(site(at, "type", Change::Replace(Value::Null)));
        }
    }

    /// The types a schema takes: its `type`, its `enum` or `const` values' types, or, for a
    /// union, every branch's. Empty when any type is taken.
    fn allowed_types(&self, node: &Map<String, Value>) -> Vec<&'static str> {
        if let Some(t) = node.get("type") {
            let list: Vec<&Value> = match t {
                Value::Array(ts) => ts.iter().collect(),
                one => vec![one],
            };
            return list
                .into_iter()
                .filter_map(Value::as_str)
                .map(static_type)
                .collect();
        }
        if let Some(values) = node.get("enum").and_then(Value::as_array) {
            return values.iter().map(json_type).collect();
        }
        if let Some(value) = node.get("const") {
            return vec![json_type(value)];
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(branches) = node.get(key).and_then(Value::as_array) {
                let mut all = Vec::new();
                for branch in branches {
                    let branch = self.sampler.resolve(branch);
                    let types = branch
                        .as_object()
                        .map(|b| self.allowed_types(b))
                        .unwrap_or_default();
                    if types.is_empty() {
                        return Vec::new();
                    }
                    all.extend(types);
                }
                return all;
            }
        }
        Vec::new()
    }

    fn object(
        &self,
        node: &Map<String, Value>,
        map: &Map<String, Value>,
        at: &str,
        out: &mut Vec<Site>,
        depth: usize,
    ) {
        let properties = node.get("properties").and_then(Value::as_object);
        let closed = node.get("additionalProperties") == Some(&Value::Bool(false))
            || node.get("unevaluatedProperties") == Some(&Value::Bool(false));
        if closed && !properties.is_some_and(|p| p.contains_key("unexpected_field")) {
            let mut wider = map.clone();
            wider.insert("unexpected_field".into(), json!("x"));
            out.push(Site {
                at: at.to_owned(),
                pointer: format!("{at}/unexpected_field"),
                keyword: "additionalProperties",
                change: Change::Replace(Value::Object(wider)),
            });
        }
        let required: Vec<&str> = node
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for name in required.iter().filter(|n| map.contains_key(**n)) {
            out.push(Site {
                at: at.to_owned(),
                pointer: format!("{at}/{}", escape(name)),
                keyword: "required",
                change: Change::Remove((*name).to_owned()),
            });
        }
        if let Some(min) = count(node, "minProperties").filter(|m| *m > 0 && map.len() >= *m) {
            let mut fewer = map.clone();
            let optional: Vec<String> = fewer
                .keys()
                .filter(|k| !required.contains(&k.as_str()))
                .cloned()
                .collect();
            for name in optional.iter().take(map.len() - min + 1) {
                fewer.shift_remove(name);
            }
            out.push(site(
                at,
                "minProperties",
                Change::Replace(Value::Object(fewer)),
            ));
        }
        if let Some(max) = count(node, "maxProperties").filter(|m| *m < 64)
            && !closed
        {
            let mut more = map.clone();
            let mut i = 0;
            while more.len() <= max {
                more.insert(format!("extra_{i}"), json!("x"));
                i += 1;
            }
            out.push(site(
                at,
                "maxProperties",
                Change::Replace(Value::Object(more)),
            ));
        }
        for (name, value) in map {
            if let Some(schema) = properties.and_then(|p| p.get(name)) {
                let inner = format!("{at}/{}", escape(name));
                self.walk(schema, value, &inner, out, depth + 1);
            }
        }
    }

    fn array(
        &self,
        node: &Map<String, Value>,
        items: &[Value],
        at: &str,
        out: &mut Vec<Site>,
        depth: usize,
    ) {
        if let Some(min) = count(node, "minItems").filter(|m| *m > 0 && items.len() >= *m) {
            let fewer = items[..min - 1].to_vec();
            out.push(site(at, "minItems", Change::Replace(Value::Array(fewer))));
        }
        if let Some(max) = count(node, "maxItems").filter(|m| *m < 64) {
            let mut more = items.to_vec();
            let schema = node.get("items").unwrap_or(&Value::Bool(true));
            while more.len() <= max {
                let nth = more.len() as u64;
                match self.sampler.value(schema, nth, depth + 1) {
                    Some(item) => more.push(item),
                    None => break,
                }
            }
            if more.len() > max {
                out.push(site(at, "maxItems", Change::Replace(Value::Array(more))));
            }
        }
        if node.get("uniqueItems") == Some(&Value::Bool(true))
            && let Some(first) = items.first()
        {
            let mut twice = items.to_vec();
            if twice.len() >= 2 {
                twice[1] = first.clone();
            } else {
                twice.push(first.clone());
            }
            out.push(site(
                at,
                "uniqueItems",
                Change::Replace(Value::Array(twice)),
            ));
        }
        let prefix = node.get("prefixItems").and_then(Value::as_array);
        for (i, item) in items.iter().enumerate() {
            let schema = prefix.and_then(|p| p.get(i)).or_else(|| node.get("items"));
            if let Some(schema) = schema {
                self.walk(schema, item, &format!("{at}/{i}"), out, depth + 1);
            }
        }
    }
}

fn site(at: &str, keyword: &'static str, change: Change) -> Site {
    Site {
        at: at.to_owned(),
        pointer: at.to_owned(),
        keyword,
        change,
    }
}

/// `enum` and `const`: a value of the same type that is not allowed.
fn values(node: &Map<String, Value>, value: &Value, at: &str, out: &mut Vec<Site>) {
    let other = |v: &Value| match v {
        Value::String(s) => Some(json!(format!("{s}_other"))),
        Value::Number(n) => n.as_f64().map(|n| whole(n.floor() + 1000.0)),
        Value::Bool(b) => Some(json!(!b)),
        _ => None,
    };
    if let Some(allowed) = node.get("enum").and_then(Value::as_array)
        && let Some(outside) = other(value).filter(|v| !allowed.contains(v))
    {
        out.push(site(at, "enum", Change::Replace(outside)));
    }
    if let Some(constant) = node.get("const")
        && let Some(outside) = other(constant)
    {
        out.push(site(at, "const", Change::Replace(outside)));
    }
}

fn strings(node: &Map<String, Value>, text: &str, at: &str, out: &mut Vec<Site>) {
    let chars: Vec<char> = text.chars().collect();
    if let Some(min) = count(node, "minLength").filter(|m| *m > 0 && chars.len() >= *m) {
        let shorter: String = chars[..min - 1].iter().collect();
        out.push(site(at, "minLength", Change::Replace(json!(shorter))));
    }
    if let Some(max) = count(node, "maxLength").filter(|m| *m < 100_000) {
        // Longer by repeating its own last character (most likely to keep its pattern).
        for pad in [chars.last().copied().unwrap_or('x'), 'x', '0'] {
            let mut longer = text.to_owned();
            longer.extend(std::iter::repeat_n(pad, max + 1 - chars.len().min(max)));
            out.push(site(at, "maxLength", Change::Replace(json!(longer))));
        }
    }
    if node.contains_key("pattern") {
        for miss in ["", " ", "!", "~~", "0", "a", "Z", "-1", "a b", "\u{00e9}"] {
            out.push(site(at, "pattern", Change::Replace(json!(miss))));
        }
    }
    if node.contains_key("format") {
        out.push(site(
            at,
            "format",
            Change::Replace(json!("not a valid value")),
        ));
    }
}

fn numbers(node: &Map<String, Value>, value: &Value, n: f64, at: &str, out: &mut Vec<Site>) {
    let integer = node.get("type").and_then(Value::as_str) == Some("integer")
        || value.is_u64()
        || value.is_i64();
    let write = |x: f64| {
        if x.fract() == 0.0 && x.abs() < 1e15 {
            whole(x)
        } else {
            serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
        }
    };
    let step = if integer { 1.0 } else { 0.5 };
    let num = |k: &str| node.get(k).and_then(Value::as_f64);
    if let Some(low) = num("minimum") {
        out.push(site(at, "minimum", Change::Replace(write(low - step))));
    }
    if let Some(high) = num("maximum") {
        out.push(site(at, "maximum", Change::Replace(write(high + step))));
    }
    if let Some(low) = num("exclusiveMinimum") {
        out.push(site(at, "exclusiveMinimum", Change::Replace(write(low))));
    }
    if let Some(high) = num("exclusiveMaximum") {
        out.push(site(at, "exclusiveMaximum", Change::Replace(write(high))));
    }
    let limits = bounds(node, integer);
    if let Some(m) = limits.step {
        let candidates = [n + m / 2.0, n - m / 2.0, n + 1.0, n - 1.0, n + 0.5];
        if let Some(off) = candidates
            .into_iter()
            .find(|x| !multiple_of(*x, m) && (limits.low..=limits.high).contains(x))
        {
            out.push(site(at, "multipleOf", Change::Replace(write(off))));
        }
    }
}

/// Whether `value` is of a type `schema` names (a schema naming none takes any).
fn matches_type(schema: &Value, value: &Value) -> bool {
    let ty = json_type(value);
    match schema.get("type") {
        Some(Value::String(t)) => t == ty || (ty == "integer" && t == "number"),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .any(|t| t == ty || (ty == "integer" && t == "number")),
        _ => match schema.get("enum").and_then(Value::as_array) {
            Some(values) => values.contains(value),
            None => schema.get("const").is_none_or(|c| c == value),
        },
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

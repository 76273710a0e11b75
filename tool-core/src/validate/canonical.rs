//! A call's arguments read once, into the one form every step of the call sees: validated,
//! `null` for an optional parameter read as the parameter left out, defaults applied, numbers
//! written as integers where they are integers, and written as canonical JSON (RFC 8785).
//!
//! Two documents a tool reads as the same value become the same canonical value, so they
//! match the same approval and share an idempotency key; the tool itself is handed that
//! value, so what was approved, hashed and recorded is what runs.
//!
//! What the schema says about each object (its properties, which are required, their
//! defaults) is read from the schema once per tool, into a [`Shape`]: a call then walks its
//! value once, with no lookups in the schema.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::{Map, Value};

/// A call's arguments, read once: the canonical value, its canonical JSON, and (on first
/// use) its SHA-256 digest, which the approval binding and the audit write out as the
/// arguments' hash ([`arguments_hash`](crate::policy::arguments_hash)) and the idempotency key
/// of long arguments is derived from: the canonical JSON is hashed once per call, whoever
/// asks.
#[derive(Debug)]
pub(crate) struct Checked {
    pub(crate) value: Value,
    /// The canonical JSON of `value` (RFC 8785).
    pub(crate) text: String,
    digest: OnceLock<[u8; 32]>,
    hash: OnceLock<String>,
    /// How the arguments were repaired before they could be read (`Defaults::repair`).
    pub(crate) repairs: Vec<String>,
}

impl Checked {
    /// `value`, already canonical, with its canonical JSON.
    pub(crate) fn new(value: Value) -> Self {
        let text = crate::json::canonical::canonical_json(&value);
        Self {
            value,
            text,
            digest: OnceLock::new(),
            hash: OnceLock::new(),
            repairs: Vec::new(),
        }
    }

    /// SHA-256 of the canonical JSON.
    pub(crate) fn digest(&self) -> &[u8; 32] {
        self.digest
            .get_or_init(|| crate::json::canonical::digest_text(&self.text))
    }

    /// `sha256:<hex>` of the canonical JSON: what approvals are bound to.
    pub(crate) fn hash(&self) -> &str {
        self.hash
            .get_or_init(|| crate::json::canonical::hash_of(self.digest()))
    }
}

/// How deep a value is followed; deeper values are kept as they are (the limits on
/// arguments refuse deeper documents long before).
const MAX_DEPTH: usize = 128;

/// How many references a schema may chain, and how many object shapes it may describe,
/// before the rest is treated as any JSON.
const MAX_NODES: usize = 4096;

/// What a tool's schema says about the objects in its arguments, read once.
#[derive(Debug)]
pub(crate) struct Shape {
    /// Node 0 is the arguments themselves.
    nodes: Vec<Node>,
}

#[derive(Debug)]
enum Node {
    /// Nothing known: numbers are still made canonical.
    Any,
    Object {
        properties: Vec<Property>,
        /// Property names to their index, for objects with many properties.
        index: Option<HashMap<String, usize, foldhash::fast::RandomState>>,
        /// The shape of the other properties' values (`additionalProperties`).
        extra: Option<usize>,
        /// Whether a property may be `null` and not required, or has a default: else the
        /// object's keys are left as they are.
        rewrites: bool,
    },
    Array(usize),
}

#[derive(Debug)]
struct Property {
    name: String,
    required: bool,
    default: Option<Value>,
    node: usize,
}

/// Above this many properties, an object's properties are found through a map.
const INDEXED: usize = 12;

impl Shape {
    /// The shape of the schema `root`.
    pub(crate) fn of(root: &Value) -> Self {
        let mut builder = Builder {
            root,
            nodes: Vec::new(),
            seen: HashMap::new(),
        };
        builder.node(root, 0);
        Self {
            nodes: builder.nodes,
        }
    }

    /// Rewrites a valid `value` into its canonical form: in every object the schema
    /// describes, a `null` for a property that is not required is removed (an optional
    /// parameter reads `null` as absent), an absent property with a `default` gets it, and
    /// everywhere integral floats (below 2^53) become integers. Parts of the value the schema
    /// does not describe with certainty (a choice between several object shapes) keep their
    /// keys as they are.
    pub(crate) fn canonicalize(&self, value: &mut Value) {
        self.walk(0, value, 0);
    }

    fn walk(&self, node: usize, value: &mut Value, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        let node = self.nodes.get(node).unwrap_or(&Node::Any);
        match value {
            Value::Object(map) => match node {
                Node::Object {
                    properties,
                    index,
                    extra,
                    rewrites,
                } => {
                    if *rewrites {
                        rewrite(properties, map);
                    }
                    for (name, value) in map.iter_mut() {
                        let found = match index {
                            Some(index) => index.get(name.as_str()).copied(),
                            None => properties.iter().position(|p| p.name == *name),
                        };
                        let child = found.and_then(|i| properties.get(i)).map(|p| p.node);
                        match child.or(*extra) {
                            Some(child) => self.walk(child, value, depth + 1),
                            None => self.any(value, depth + 1),
                        }
                    }
                }
                _ => self.any(value, depth),
            },
            Value::Array(items) => match node {
                Node::Array(item) => {
                    for value in items {
                        self.walk(*item, value, depth + 1);
                    }
                }
                _ => self.any(value, depth),
            },
            Value::Number(_) => integral(value),
            _ => {}
        }
    }

    /// A value the schema says nothing certain about: only its numbers change.
    fn any(&self, value: &mut Value, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        match value {
            Value::Object(map) => map.values_mut().for_each(|v| self.any(v, depth + 1)),
            Value::Array(items) => items.iter_mut().for_each(|v| self.any(v, depth + 1)),
            Value::Number(_) => integral(value),
            _ => {}
        }
    }
}

/// An object's properties as the tool reads them: `null` for one not required is absent, an
/// absent one with a default has it.
fn rewrite(properties: &[Property], map: &mut Map<String, Value>) {
    if map.values().any(Value::is_null) {
        map.retain(|name, value| {
            !value.is_null()
                || properties
                    .iter()
                    .find(|p| p.name == *name)
                    .is_none_or(|p| p.required)
        });
    }
    for property in properties {
        if let Some(default) = &property.default
            && !property.required
            && !map.contains_key(&property.name)
        {
            map.insert(property.name.clone(), default.clone());
        }
    }
}

/// An integral float below 2^53 as the integer it is (`5.0` → `5`, `-0.0` → `0`).
fn integral(value: &mut Value) {
    if let Value::Number(number) = value
        && number.is_f64()
        && let Some(f) = number.as_f64()
        && f.fract() == 0.0
        && f.abs() < 9_007_199_254_740_992.0
    {
        // Exact: below 2^53 every integral double is an integer an i64 holds.
        #[allow(clippy::cast_possible_truncation)]
        let n = f as i64;
        *value = Value::from(n);
    }
}

struct Builder<'s> {
    root: &'s Value,
    nodes: Vec<Node>,
    /// Schema nodes already built, by address: references to one definition share a node, and
    /// a recursive definition ends.
    seen: HashMap<*const Value, usize>,
}

impl<'s> Builder<'s> {
    fn node(&mut self, schema: &'s Value, depth: usize) -> usize {
        let schema = resolve(self.root, schema);
        let key: *const Value = schema;
        if let Some(&built) = self.seen.get(&key) {
            return built;
        }
        let at = self.nodes.len();
        let shaped = ["properties", "additionalProperties", "items"]
            .iter()
            .any(|k| schema.get(*k).is_some());
        if !shaped
            && depth <= MAX_DEPTH
            && let Some(only) = single_branch(schema)
        {
            // `Option<Struct>` and the like: the shape beside `null` is the shape.
            return self.node(only, depth + 1);
        }
        if depth > MAX_DEPTH || at >= MAX_NODES {
            // Past the bounds: whatever the shape, only numbers change.
            self.nodes.push(Node::Any);
            return at;
        }
        self.nodes.push(Node::Any);
        self.seen.insert(key, at);
        let built = self.build(schema, depth);
        self.nodes[at] = built;
        at
    }

    fn build(&mut self, schema: &'s Value, depth: usize) -> Node {
        let properties = schema.get("properties").and_then(Value::as_object);
        let extra = schema.get("additionalProperties").filter(|s| s.is_object());
        if properties.is_none() && extra.is_none() {
            return match schema.get("items").filter(|s| s.is_object()) {
                Some(items) => Node::Array(self.node(items, depth + 1)),
                None => Node::Any,
            };
        }
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut list = Vec::new();
        for (name, sub) in properties.into_iter().flatten() {
            let resolved = resolve(self.root, sub);
            list.push(Property {
                name: name.clone(),
                required: required.contains(&name.as_str()),
                default: sub
                    .get("default")
                    .or_else(|| resolved.get("default"))
                    .cloned(),
                node: self.node(sub, depth + 1),
            });
        }
        let extra = extra.map(|extra| self.node(extra, depth + 1));
        let rewrites = list.iter().any(|p| !p.required);
        let index = (list.len() > INDEXED).then(|| {
            list.iter()
                .enumerate()
                .map(|(i, p)| (p.name.clone(), i))
                .collect()
        });
        Node::Object {
            properties: list,
            index,
            extra,
            rewrites,
        }
    }
}

/// The one branch of an `anyOf`/`oneOf` that is not `{"type": "null"}`, when there is one.
fn single_branch(schema: &Value) -> Option<&Value> {
    let branches = schema
        .get("anyOf")
        .or_else(|| schema.get("oneOf"))?
        .as_array()?;
    let mut others = branches
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) != Some("null"));
    let only = others.next()?;
    others.next().is_none().then_some(only)
}

/// `schema` with local references (`#/$defs/..`) followed.
fn resolve<'s>(root: &'s Value, mut schema: &'s Value) -> &'s Value {
    for _ in 0..32 {
        let Some(pointer) = schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix('#'))
        else {
            return schema;
        };
        match root.pointer(pointer) {
            Some(target) => schema = target,
            None => return schema,
        }
    }
    schema
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn canonical(schema: &Value, mut value: Value) -> Value {
        Shape::of(schema).canonicalize(&mut value);
        value
    }

    #[test]
    fn null_is_absent_and_defaults_apply() {
        let schema = json!({
            "type": "object",
            "properties": {
                "flight": {"type": "string"},
                "cabin": {"type": ["string", "null"]},
                "seats": {"type": ["integer", "null"], "default": 1},
                "note": {"type": "null"}
            },
            "required": ["flight", "note"]
        });
        let sent = json!({"flight": "F1", "cabin": null, "seats": null, "note": null});
        let left_out = json!({"note": null, "flight": "F1"});
        let explicit = json!({"flight": "F1", "seats": 1.0, "note": null});
        let expected = json!({"flight": "F1", "seats": 1, "note": null});
        assert_eq!(canonical(&schema, sent), expected);
        assert_eq!(canonical(&schema, left_out), expected);
        assert_eq!(canonical(&schema, explicit), expected);
    }

    #[test]
    fn nested_objects_through_references_and_options() {
        let schema = json!({
            "type": "object",
            "properties": {
                "to": {"$ref": "#/$defs/Address"},
                "cc": {"anyOf": [{"$ref": "#/$defs/Address"}, {"type": "null"}]},
                "all": {"type": "array", "items": {"$ref": "#/$defs/Address"}},
                "by_name": {"type": "object", "additionalProperties": {"$ref": "#/$defs/Address"}}
            },
            "required": ["to"],
            "$defs": {
                "Address": {
                    "type": "object",
                    "properties": {
                        "city": {"type": "string"},
                        "zip": {"type": ["string", "null"]},
                        "country": {"type": "string", "default": "FR"}
                    },
                    "required": ["city"]
                }
            }
        });
        let value = json!({
            "to": {"city": "Paris", "zip": null},
            "cc": {"city": "Lyon", "country": "FR"},
            "all": [{"city": "Nice", "zip": null}],
            "by_name": {"ada": {"city": "Brest", "zip": null}}
        });
        assert_eq!(
            canonical(&schema, value),
            json!({
                "to": {"city": "Paris", "country": "FR"},
                "cc": {"city": "Lyon", "country": "FR"},
                "all": [{"city": "Nice", "country": "FR"}],
                "by_name": {"ada": {"city": "Brest", "country": "FR"}}
            })
        );
    }

    #[test]
    fn a_choice_between_shapes_is_left_alone() {
        let schema = json!({
            "type": "object",
            "properties": {"shape": {"oneOf": [
                {"type": "object", "properties": {"r": {"type": ["number", "null"]}}},
                {"type": "object", "properties": {"w": {"type": ["number", "null"]}}}
            ]}}
        });
        let value = json!({"shape": {"r": null}});
        assert_eq!(canonical(&schema, value.clone()), value);
    }

    #[test]
    fn reference_cycles_end() {
        let schema = json!({"$ref": "#/$defs/A", "$defs": {"A": {"$ref": "#/$defs/A"}}});
        assert_eq!(canonical(&schema, json!({"x": null})), json!({"x": null}));
    }
}

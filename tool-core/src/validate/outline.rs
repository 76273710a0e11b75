//! What a stream's early checks read from a tool's input schema, read once per tool: one node
//! per schema location a value can be read at, with the kinds of value it takes, the one
//! location that describes a value of each kind (through `$ref`s and into the one branch of an
//! `anyOf` that can take it), and the facts the checks compare a value with (known and
//! required keys, items, lengths, enumerations, bounds). A stream then follows indices from
//! node to node: no JSON pointer is built or looked up while it reads.
//!
//! A location the outline does not follow (a schema that combines others in ways not followed
//! here, or past [`MAX_NODES`]) has no node: a value read there is left to the whole-call check
//! at the end, so the outline only ever makes a stream refuse later, never wrongly.

use std::collections::HashMap;

use serde_json::{Map, Value};

/// The kinds of JSON value, as a set.
pub(crate) const OBJECT: u8 = 1;
pub(crate) const ARRAY: u8 = 2;
pub(crate) const STRING: u8 = 4;
pub(crate) const NUMBER: u8 = 8;
pub(crate) const INTEGER: u8 = 16;
pub(crate) const BOOLEAN: u8 = 32;
pub(crate) const NULL: u8 = 64;

/// The kinds a value is seen as when it starts: an integer is told from a number only once
/// it is whole.
const STARTS: [u8; 6] = [OBJECT, ARRAY, STRING, NUMBER, BOOLEAN, NULL];

/// How many schema locations an outline follows; the rest are left to the whole-call check.
const MAX_NODES: usize = 4096;

/// Objects with more properties than this look a key up in a table, not a list.
const INDEXED: usize = 8;

/// What the schema says at each location a value can be read at. Node 0 is the arguments.
#[derive(Debug)]
pub(crate) struct Outline {
    nodes: Vec<Node>,
}

/// One schema location.
#[derive(Debug, Default)]
pub(crate) struct Node {
    /// The kinds of value it takes; `None` when it does not say (or says in ways not followed).
    pub(crate) kinds: Option<u8>,
    /// Per kind of [`STARTS`]: the one location that describes a value of that kind.
    picks: [Option<u32>; 6],
    /// `properties`: each name with its location (`None` past the outline's size).
    properties: Vec<(String, Option<u32>)>,
    /// The properties' names to their place in `properties`, for a long list.
    index: Option<HashMap<String, usize, foldhash::fast::RandomState>>,
    /// `patternProperties` is present: another key's schema is not followed.
    patterns: bool,
    /// `additionalProperties: false` with no `patternProperties`: another key is refused.
    pub(crate) closed: bool,
    /// `additionalProperties`, when it is a schema.
    additional: Option<u32>,
    /// `required`, as bits of the first 64 `properties`: the keys a closed object must have
    /// had, told by their place in `properties`.
    pub(crate) required_mask: u64,
    /// The rest of `required`: keys past the first 64 properties, or not among them.
    pub(crate) required_rest: Box<[String]>,
    /// `items`, when it is a schema.
    pub(crate) items: Option<u32>,
    pub(crate) min_items: Option<u64>,
    pub(crate) max_items: Option<u64>,
    pub(crate) min_length: Option<u64>,
    pub(crate) max_length: Option<u64>,
    /// `enum` (when every value is a string) or a string `const`: the only strings taken.
    pub(crate) allowed: Option<Box<[String]>>,
    /// `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`, when numbers.
    pub(crate) bounds: [Option<Value>; 4],
}

impl Node {
    /// The one location describing a value of `kind` (one of [`STARTS`]) read here.
    pub(crate) fn pick(&self, kind: u8) -> Option<u32> {
        let at = STARTS.iter().position(|k| *k == kind)?;
        self.picks[at]
    }

    /// The location of the value of `key` in an object read here: its property's, else (with
    /// no `patternProperties`) `additionalProperties`.
    #[cfg(test)]
    fn property(&self, key: &str) -> Option<u32> {
        self.value_at(self.find(key))
    }

    /// The location of the value of a key found at `at` in `properties` ([`find`](Self::find)).
    pub(crate) fn value_at(&self, at: Option<usize>) -> Option<u32> {
        match at {
            Some(at) => self.properties[at].1,
            None if self.patterns => None,
            None => self.additional,
        }
    }

    /// Whether `key` is one of `properties`.
    #[cfg(test)]
    fn has_property(&self, key: &str) -> bool {
        self.find(key).is_some()
    }

    /// Where `key` is in `properties`.
    pub(crate) fn find(&self, key: &str) -> Option<usize> {
        match &self.index {
            Some(index) => index.get(key).copied(),
            None => self.properties.iter().position(|(name, _)| name == key),
        }
    }
}

impl Outline {
    /// Reads `root` (a tool's input schema) once.
    pub(crate) fn of(root: &Value) -> Self {
        let mut builder = Builder {
            root,
            ids: HashMap::new(),
            nodes: Vec::new(),
            queue: Vec::new(),
            kinds: HashMap::new(),
            #[cfg(test)]
            evaluated: 0,
        };
        builder.intern(String::new());
        while let Some((id, pointer)) = builder.queue.pop() {
            let node = builder.fill(&pointer);
            builder.nodes[id as usize] = node;
        }
        #[cfg(test)]
        EVALUATED.with(|n| n.set(builder.evaluated));
        Self {
            nodes: builder.nodes,
        }
    }

    /// The node at `id`.
    pub(crate) fn node(&self, id: u32) -> &Node {
        &self.nodes[id as usize]
    }

    /// How many locations it follows.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.nodes.len()
    }
}

struct Builder<'a> {
    root: &'a Value,
    ids: HashMap<String, u32>,
    nodes: Vec<Node>,
    /// Locations given an id whose node is still to be read.
    queue: Vec<(u32, String)>,
    /// The kinds each location (its `$ref`s followed) takes, once worked out: a schema whose
    /// `anyOf` branches refer to the same definitions is read in time in proportion to its
    /// size, not to the number of paths through it.
    kinds: HashMap<String, Option<u8>>,
    /// How many locations' kinds were worked out.
    #[cfg(test)]
    evaluated: usize,
}

#[cfg(test)]
thread_local! {
    /// The last outline's count of locations whose kinds were worked out.
    static EVALUATED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

impl Builder<'_> {
    /// The id of the location `pointer`, given one if it is new; `None` past [`MAX_NODES`].
    fn intern(&mut self, pointer: String) -> Option<u32> {
        if let Some(id) = self.ids.get(&pointer) {
            return Some(*id);
        }
        if self.nodes.len() >= MAX_NODES {
            return None;
        }
        let id = u32::try_from(self.nodes.len()).ok()?;
        self.nodes.push(Node::default());
        self.ids.insert(pointer.clone(), id);
        self.queue.push((id, pointer));
        Some(id)
    }

    /// What the schema at `pointer` says, its neighbours given ids.
    fn fill(&mut self, pointer: &str) -> Node {
        let mut node = Node {
            kinds: self.kinds(pointer, 0),
            ..Node::default()
        };
        for (at, kind) in STARTS.into_iter().enumerate() {
            node.picks[at] = self.select(pointer, kind, 0).and_then(|p| self.intern(p));
        }
        let Some(schema) = node_at(self.root, pointer).and_then(Value::as_object) else {
            return node;
        };
        if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
            for name in properties.keys() {
                let child = self.intern(format!("{pointer}/properties/{}", escape(name)));
                node.properties.push((name.clone(), child));
            }
            if node.properties.len() > INDEXED {
                node.index = Some(
                    node.properties
                        .iter()
                        .enumerate()
                        .map(|(i, (name, _))| (name.clone(), i))
                        .collect(),
                );
            }
        }
        node.patterns = schema.contains_key("patternProperties");
        node.closed =
            schema.get("additionalProperties") == Some(&Value::Bool(false)) && !node.patterns;
        if schema
            .get("additionalProperties")
            .is_some_and(Value::is_object)
        {
            node.additional = self.intern(format!("{pointer}/additionalProperties"));
        }
        let mut rest = Vec::new();
        for key in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            match node.find(key) {
                Some(at) if at < 64 => node.required_mask |= 1 << at,
                _ => rest.push(key.to_owned()),
            }
        }
        node.required_rest = rest.into();
        if schema.get("items").is_some_and(Value::is_object) {
            node.items = self.intern(format!("{pointer}/items"));
        }
        let count = |key: &str| schema.get(key).and_then(Value::as_u64);
        node.min_items = count("minItems");
        node.max_items = count("maxItems");
        node.min_length = count("minLength");
        node.max_length = count("maxLength");
        node.allowed = allowed(schema);
        for (at, key) in ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]
            .into_iter()
            .enumerate()
        {
            node.bounds[at] = schema.get(key).filter(|v| v.is_number()).cloned();
        }
        node
    }

    /// The kinds of value the schema at `pointer` may take; `None` when it does not say (or
    /// says in ways not followed here). Worked out once per location: a location first met
    /// deep in a chain of references may keep a `None` it would not have at the top, which
    /// only leaves a value to the whole-call check.
    fn kinds(&mut self, pointer: &str, depth: usize) -> Option<u8> {
        let at = deref(self.root, pointer, 0)?;
        if let Some(known) = self.kinds.get(&at) {
            return *known;
        }
        let kinds = self.kinds_at(&at, depth);
        self.kinds.insert(at, kinds);
        kinds
    }

    fn kinds_at(&mut self, at: &str, depth: usize) -> Option<u8> {
        #[cfg(test)]
        {
            self.evaluated += 1;
        }
        let node = node_at(self.root, at)?;
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
    fn select(&mut self, pointer: &str, kind: u8, depth: usize) -> Option<String> {
        let root = self.root;
        let at = deref(root, pointer, 0)?;
        let node = node_at(root, &at)?.as_object()?;
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
                let fitting: Vec<usize> = (0..branches.len())
                    .filter(|&i| {
                        self.kinds(&format!("{at}/{combinator}/{i}"), 0)
                            .is_none_or(|k| takes(k, kind))
                    })
                    .collect();
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
}

/// The strings an `enum` of strings or a string `const` allows.
fn allowed(schema: &Map<String, Value>) -> Option<Box<[String]>> {
    match (schema.get("enum"), schema.get("const")) {
        (Some(Value::Array(values)), _) => values
            .iter()
            .map(|v| v.as_str().map(str::to_owned))
            .collect(),
        (_, Some(Value::String(value))) => Some(Box::new([value.clone()])),
        _ => None,
    }
}

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn node_at<'v>(root: &'v Value, pointer: &str) -> Option<&'v Value> {
    if pointer.is_empty() {
        Some(root)
    } else {
        root.pointer(pointer)
    }
}

/// `pointer` with its `$ref`s followed (local ones).
fn deref(root: &Value, pointer: &str, depth: usize) -> Option<String> {
    let node = node_at(root, pointer)?;
    match node.get("$ref").and_then(Value::as_str) {
        Some(reference) if depth < 32 => {
            let target = reference.strip_prefix('#')?;
            deref(root, target, depth + 1)
        }
        Some(_) => None,
        None => Some(pointer.to_owned()),
    }
}

/// Whether a value of `kind` is one the kinds `takes` allow (a number may still be an integer).
pub(crate) fn takes(takes: u8, kind: u8) -> bool {
    if kind == NUMBER {
        takes & (NUMBER | INTEGER) != 0
    } else {
        takes & kind != 0
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_location_is_followed_through_refs_and_the_one_branch_that_takes_a_kind() {
        let schema = json!({
            "type": "object",
            "properties": {
                "stops": {"type": "array", "maxItems": 3, "items": {"$ref": "#/$defs/Stop"}},
                "when": {"anyOf": [{"type": "string", "maxLength": 10}, {"type": "null"}]}
            },
            "required": ["stops"],
            "additionalProperties": false,
            "$defs": {"Stop": {"type": "object", "properties": {"name": {"enum": ["a", "b"]}}}}
        });
        let outline = Outline::of(&schema);
        let root = outline.node(0);
        assert!(root.closed);
        assert_eq!(root.required_mask, 1 << root.find("stops").unwrap());
        assert!(root.required_rest.is_empty());
        assert!(root.has_property("when") && !root.has_property("other"));
        assert_eq!(root.property("other"), None);

        let stops = outline.node(
            root.property("stops")
                .and_then(|s| outline.node(s).pick(ARRAY))
                .unwrap(),
        );
        assert_eq!(stops.max_items, Some(3));
        let item = outline.node(stops.items.unwrap());
        assert_eq!(item.kinds, Some(OBJECT));
        assert_eq!(item.pick(STRING), Some(item.pick(OBJECT).unwrap()));
        let stop = outline.node(item.pick(OBJECT).unwrap());
        let name = outline.node(stop.property("name").unwrap());
        assert_eq!(
            name.allowed.as_deref(),
            Some(&["a".to_owned(), "b".to_owned()][..])
        );

        let when = outline.node(root.property("when").unwrap());
        assert_eq!(when.kinds, Some(STRING | NULL));
        assert_eq!(
            outline.node(when.pick(STRING).unwrap()).max_length,
            Some(10)
        );
        assert!(when.pick(NULL).is_some());
        assert_eq!(when.pick(NUMBER), None);
    }

    #[test]
    fn a_schema_that_refers_to_itself_is_read_in_a_bounded_number_of_nodes() {
        let schema = json!({
            "$ref": "#/$defs/Tree",
            "$defs": {"Tree": {"type": "object", "properties": {
                "children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}},
                "either": {"anyOf": [{"$ref": "#/$defs/Tree"}, {"$ref": "#/$defs/Tree"}]}
            }}}
        });
        let outline = Outline::of(&schema);
        assert!(outline.len() < 16, "{}", outline.len());
        // Two branches take an object: no one schema describes it.
        let root = outline.node(0);
        let tree = outline.node(root.pick(OBJECT).unwrap());
        let either = outline.node(tree.property("either").unwrap());
        assert_eq!(either.pick(OBJECT), None);
    }

    #[test]
    fn branches_that_share_definitions_are_read_once_each() {
        // Sixteen levels of three branches, each referring to the next level: 3^16 paths
        // through 17 definitions.
        let mut defs = Map::new();
        for level in 0..16 {
            let next = json!({"$ref": format!("#/$defs/L{}", level + 1)});
            defs.insert(format!("L{level}"), json!({"anyOf": [next, next, next]}));
        }
        defs.insert("L16".into(), json!({"type": "string", "maxLength": 3}));
        let schema = json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/L0"}},
            "$defs": defs});
        let outline = Outline::of(&schema);
        let evaluated = EVALUATED.with(std::cell::Cell::get);
        assert!(evaluated < 200, "{evaluated} locations worked out");
        let x = outline.node(outline.node(0).property("x").unwrap());
        assert_eq!(x.kinds, Some(STRING));
        // Three branches take a string at every level: no one schema describes it.
        assert_eq!(x.pick(STRING), None);
    }

    #[test]
    fn an_outline_follows_at_most_its_size_of_locations() {
        let properties: Map<String, Value> = (0..MAX_NODES + 10)
            .map(|i| (format!("p{i}"), json!({"type": "string"})))
            .collect();
        let schema =
            json!({"type": "object", "properties": properties, "additionalProperties": false});
        let outline = Outline::of(&schema);
        assert!(outline.len() <= MAX_NODES);
        let root = outline.node(0);
        // A property past the size is still known (not refused), its value not followed.
        let last = format!("p{}", MAX_NODES + 9);
        assert!(root.has_property(&last));
        assert_eq!(root.property(&last), None);
    }
}

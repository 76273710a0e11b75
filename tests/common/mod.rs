//! Tool shapes and a schema-driven document generator shared by the differential tests.
#![allow(dead_code)] // the shapes exist for their schemas; the tools do not read their fields

use std::collections::{BTreeMap, HashMap};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use toolsmith::{Toolbox, tool};

// ---------------------------------------------------------------------------------------------
// Shapes

/// Flat scalars.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub async fn flat(
    /// A string.
    name: String,
    /// An integer.
    count: i64,
    /// A flag.
    enabled: bool,
    /// A float.
    ratio: f64,
) {
    let _ = (name, count, enabled, ratio);
}

/// A recent time window.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[derive(serde::Serialize)]
pub enum Window {
    D1,
    W1,
    M1,
}

/// The README's search tool.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub async fn search(
    /// Keywords.
    #[arg(length(min = 2, max = 30))]
    query: String,
    /// How many.
    #[arg(range(min = 1, max = 10), default = 5)]
    num_results: u8,
    /// Window.
    date_restrict: Option<Window>,
) {
    let _ = (query, num_results, date_restrict.is_some());
}

/// Unit enum whose variants have docs (schemars writes `oneOf` of `const`).
#[derive(Deserialize, JsonSchema)]
pub enum Priority {
    /// Can wait.
    Low,
    /// Today.
    High,
}

/// Documented enum variants.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub async fn prioritize(
    /// The priority.
    priority: Priority,
    /// Optional second priority.
    fallback: Option<Priority>,
) {
    let _ = (priority, fallback);
}

/// A strict nested object.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Location {
    city: String,
    zip: Option<u32>,
}

/// Nested strict struct.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub async fn locate(
    /// Where.
    location: Location,
    /// Optional second place.
    other: Option<Location>,
) {
    let _ = (location, other);
}

/// A lenient nested object with defaults.
#[derive(Deserialize, JsonSchema)]
pub struct Options {
    #[serde(default)]
    verbose: bool,
    #[serde(default = "default_depth")]
    depth: u16,
    label: Option<String>,
}

pub fn default_depth() -> u16 {
    3
}

/// Nested lenient struct.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub async fn configure(
    /// The options.
    options: Options,
) {
    let _ = options;
}

/// A nested object whose fields carry schemars constraints serde does not enforce.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Ticket {
    #[schemars(length(min = 3, max = 12))]
    title: String,
    #[schemars(range(min = 1, max = 5))]
    severity: u8,
    #[schemars(regex(pattern = r"^[A-Z]{2}-\d+$"))]
    reference: Option<String>,
}

/// Constraints inside a user type.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub async fn file_ticket(
    /// The ticket.
    ticket: Ticket,
) {
    let _ = ticket;
}

/// Lists with bounds.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub async fn tag(
    /// Tags.
    #[arg(length(min = 1, max = 3))]
    tags: Vec<String>,
    /// Scores.
    scores: Vec<u8>,
) {
    let _ = (tags, scores);
}

/// A list of objects.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub async fn route(
    /// Stops.
    #[arg(length(max = 4))]
    stops: Vec<Location>,
) {
    let _ = stops;
}

/// A map.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub async fn count_words(
    /// Word counts.
    counts: HashMap<String, i64>,
    /// Labels.
    labels: BTreeMap<String, String>,
) {
    let _ = (counts, labels);
}

/// A tuple.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub async fn pair(
    /// A pair.
    pair: (i32, String),
    /// A fixed array.
    rgb: [u8; 3],
) {
    let _ = (pair, rgb);
}

/// Externally tagged data enum.
#[derive(Deserialize, JsonSchema)]
pub enum Shape {
    Empty,
    Circle(f64),
    Rect { w: u8, h: u8 },
}

/// Externally tagged enum.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub async fn draw(
    /// The shape.
    shape: Shape,
    /// More shapes.
    more: Vec<Shape>,
) {
    let _ = (shape, more);
}

/// Internally tagged enum.
#[derive(Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Action {
    Stop,
    Move { x: i32, y: i32 },
}

/// Internally tagged.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub async fn act(
    /// The action.
    action: Action,
) {
    let _ = action;
}

/// Untagged enum.
#[derive(Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum IdOrName {
    Id(u32),
    Name(String),
    Point(Location),
}

/// Untagged.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub async fn lookup(
    /// Who.
    who: IdOrName,
) {
    let _ = who;
}

/// Adjacently tagged enum.
#[derive(Deserialize, JsonSchema)]
#[serde(tag = "t", content = "c")]
pub enum Event {
    Ping,
    Data(String),
}

/// Adjacently tagged.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub async fn emit(
    /// The event.
    event: Event,
) {
    let _ = event;
}

/// A recursive type.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Tree {
    value: i32,
    children: Vec<Tree>,
}

/// Recursion.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub async fn walk(
    /// The tree.
    tree: Tree,
) {
    let _ = tree;
}

/// No arguments.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub async fn ping() -> &'static str {
    "pong"
}

/// Every integer width.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub fn widths(
    /// u8
    a: u8,
    /// i8
    b: i8,
    /// u16
    c: u16,
    /// i32
    d: i32,
    /// u32
    e: u32,
    /// i64
    f: i64,
    /// u64
    g: u64,
) {
    let _ = (a, b, c, d, e, f, g);
}

/// Text formats.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub async fn contact(
    /// A code.
    #[arg(pattern = r"^[a-z]{3}\d?$")]
    code: String,
    /// An email.
    #[arg(email)]
    email: Option<String>,
    /// A URL.
    #[arg(url)]
    homepage: Option<String>,
) {
    let _ = (code, email, homepage);
}

/// Optional values with constraints.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub async fn optional(
    /// A nickname.
    #[arg(length(min = 2, max = 5))]
    nickname: Option<String>,
    /// A level.
    #[arg(range(exclusive_min = 0, max = 9))]
    level: Option<u8>,
    /// A ratio.
    #[arg(range(exclusive_min = -1.5, exclusive_max = 2.5))]
    ratio: Option<f64>,
) {
    let _ = (nickname, level, ratio);
}

/// Renamed parameters and defaults.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub fn rename(
    /// The query.
    #[arg(rename = "q", length(max = 8))]
    query: String,
    /// The language.
    #[arg(default = "en", length(min = 2, max = 2))]
    lang: String,
    /// The page.
    #[arg(default = 1, range(min = 1))]
    page: u32,
) {
    let _ = (query, lang, page);
}

/// A newtype.
#[derive(Deserialize, JsonSchema)]
pub struct Meters(f64);

/// Boxes, chars and newtypes.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub async fn misc(
    /// A boxed location.
    boxed: Box<Location>,
    /// A character.
    initial: char,
    /// A distance.
    distance: Meters,
    /// Bytes.
    bytes: Option<Vec<u8>>,
) {
    let _ = (boxed, initial, distance.0, bytes);
}

/// Nested options and unit.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub async fn nested_options(
    /// Maybe a list of maybe numbers.
    values: Option<Vec<Option<i16>>>,
    /// Nothing.
    nothing: (),
) {
    let _ = (values, nothing);
}

/// A level written as an integer (what `serde_repr` produces), with a hand-written schema.
#[derive(Clone, Copy, Debug)]
pub enum Level {
    Low = 1,
    Mid = 2,
    High = 3,
}

impl<'de> Deserialize<'de> for Level {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match u8::deserialize(d)? {
            1 => Ok(Self::Low),
            2 => Ok(Self::Mid),
            3 => Ok(Self::High),
            n => Err(serde::de::Error::custom(format!("no level {n}"))),
        }
    }
}

impl JsonSchema for Level {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Level".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "integer", "enum": [1, 2, 3]})
    }
}

/// An integer enum.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub async fn set_level(
    /// The level.
    level: Level,
    /// An optional second level.
    backup: Option<Level>,
) {
    let _ = (level, backup);
}

/// A weather report.
#[derive(serde::Serialize, JsonSchema)]
pub struct Report {
    /// Degrees Celsius.
    pub celsius: f64,
    /// Sky.
    pub sky: Window,
}

/// Returns structured data.
#[tool(
    title = "Weather forecast",
    read_only,
    open_world = false,
    effect = "read",
    allow(description_scope, tool_name, unbounded_string)
)]
pub async fn forecast(
    /// The city.
    #[arg(length(min = 1, max = 50))]
    city: String,
) -> Result<Report, toolsmith::ToolError> {
    let _ = city;
    Ok(Report {
        celsius: 21.5,
        sky: Window::W1,
    })
}

pub fn toolbox() -> Toolbox {
    Toolbox::new()
        .with(Flat)
        .with(Search)
        .with(Prioritize)
        .with(Locate)
        .with(Configure)
        .with(FileTicket)
        .with(Tag)
        .with(Route)
        .with(CountWords)
        .with(Pair)
        .with(Draw)
        .with(Act)
        .with(Lookup)
        .with(Emit)
        .with(Walk)
        .with(Ping)
        .with(Widths)
        .with(Contact)
        .with(Optional)
        .with(Rename)
        .with(Misc)
        .with(NestedOptions)
        .with(SetLevel)
        .with(Forecast)
}

// ---------------------------------------------------------------------------------------------
// Generator

/// A small deterministic generator (splitmix64) seeded by proptest.
pub struct Gen<'s> {
    pub root: &'s Value,
    pub state: u64,
}

const ALPHABET: &[char] = &[
    'a', 'b', 'z', 'A', 'Z', '0', '7', '-', '_', ' ', '@', '.', '/', ':', 'é', '🙂', '٣', '"', '\\',
];

impl<'s> Gen<'s> {
    fn next(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    fn resolve(&self, schema: &'s Value) -> &'s Value {
        match schema.get("$ref").and_then(Value::as_str) {
            Some(r) => self
                .root
                .pointer(r.trim_start_matches('#'))
                .unwrap_or(schema),
            None => schema,
        }
    }

    fn string(&mut self, min: usize, max: usize) -> String {
        let len = min + self.below(max.saturating_sub(min) + 1);
        (0..len).map(|_| *self.pick(ALPHABET)).collect()
    }

    /// A document meant to be valid (patterns and formats are hit or miss).
    pub fn valid(&mut self, schema: &'s Value, depth: usize) -> Value {
        let schema = self.resolve(schema);
        if let Some(values) = schema.get("enum").and_then(Value::as_array) {
            return self.pick(values).clone();
        }
        if let Some(value) = schema.get("const") {
            return value.clone();
        }
        if schema.get("nullable") == Some(&Value::Bool(true)) && self.chance(15) {
            return Value::Null; // OpenAPI's (Gemini's) way of allowing null
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(branches) = schema.get(key).and_then(Value::as_array) {
                let branch = self.pick(branches);
                return self.valid(branch, depth + 1);
            }
        }
        let types: Vec<&str> = match schema.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ if schema.get("properties").is_some() => vec!["object"],
            _ if schema.get("items").is_some() || schema.get("prefixItems").is_some() => {
                vec!["array"]
            }
            _ => return self.random(depth),
        };
        let ty = *self.pick(&types);
        let num = |k: &str| schema.get(k).and_then(Value::as_f64);
        match ty {
            "null" => Value::Null,
            "boolean" => Value::Bool(self.chance(50)),
            "integer" => {
                let lo = num("minimum")
                    .or(num("exclusiveMinimum").map(|x| x.floor() + 1.0))
                    .unwrap_or(-1000.0)
                    .max(-1e15);
                let hi = num("maximum")
                    .or(num("exclusiveMaximum").map(|x| x.ceil() - 1.0))
                    .unwrap_or(1000.0)
                    .min(1e15);
                let candidates = [lo, hi, lo + 1.0, hi - 1.0];
                let n = if self.chance(40) {
                    *self.pick(&candidates)
                } else {
                    let span = (hi - lo).clamp(0.0, 2000.0) as usize;
                    lo + self.below(span + 1) as f64
                };
                let n = n.clamp(lo, hi);
                if self.chance(10) {
                    json!(n) // an integer written with a fraction, e.g. `5.0`
                } else if n < 0.0 {
                    json!(n as i64)
                } else {
                    json!(n as u64)
                }
            }
            "number" => {
                let lo = num("minimum")
                    .or(num("exclusiveMinimum").map(|x| x + 0.25))
                    .unwrap_or(-100.0);
                let hi = num("maximum")
                    .or(num("exclusiveMaximum").map(|x| x - 0.25))
                    .unwrap_or(100.0);
                let t = (self.next() % 1000) as f64 / 1000.0;
                json!(lo + (hi - lo) * t)
            }
            "string" => match schema.get("format").and_then(Value::as_str) {
                Some("email") => json!(format!("user{}@example.com", self.below(100))),
                Some("uri") => json!(format!("https://example.com/p{}", self.below(100))),
                _ => {
                    let min = num("minLength").unwrap_or(0.0) as usize;
                    let max = num("maxLength").map_or(min + 8, |m| m as usize);
                    if schema.get("pattern").is_some() {
                        let len = 2 + self.below(4);
                        let mut s: String = (0..len)
                            .map(|_| (b'a' + self.below(26) as u8) as char)
                            .collect();
                        if self.chance(30) {
                            s.push('5');
                        }
                        if self.chance(20) {
                            s = format!("AB-{}", self.below(99));
                        }
                        return json!(s);
                    }
                    json!(self.string(min, max))
                }
            },
            "array" => {
                if let Some(items) = schema.get("prefixItems").and_then(Value::as_array) {
                    return Value::Array(items.iter().map(|s| self.valid(s, depth + 1)).collect());
                }
                let min = num("minItems").unwrap_or(0.0) as usize;
                let max = if depth > 3 {
                    min
                } else {
                    num("maxItems").map_or(min + 3, |m| m as usize)
                };
                let len = min + self.below(max.saturating_sub(min).min(4) + 1);
                let items = schema.get("items").unwrap_or(&Value::Bool(true));
                Value::Array((0..len).map(|_| self.valid(items, depth + 1)).collect())
            }
            "object" => {
                let mut map = Map::new();
                let required: Vec<&str> = schema
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                    for (name, prop) in props {
                        if required.contains(&name.as_str()) || (depth < 4 && self.chance(50)) {
                            let v = self.valid(prop, depth + 1);
                            map.insert(name.clone(), v);
                        }
                    }
                }
                if let Some(extra @ Value::Object(_)) = schema.get("additionalProperties") {
                    for _ in 0..self.below(3) {
                        let key = self.string(0, 4);
                        let v = self.valid(extra, depth + 1);
                        map.insert(key, v);
                    }
                }
                Value::Object(map)
            }
            _ => self.random(depth),
        }
    }

    /// Any JSON at all.
    pub fn random(&mut self, depth: usize) -> Value {
        match self.below(if depth > 2 { 6 } else { 8 }) {
            0 => Value::Null,
            1 => Value::Bool(self.chance(50)),
            2 => json!(self.below(300) as i64 - 50),
            3 => json!(*self.pick(&[
                0.5,
                -1.0,
                5.0,
                1e20,
                -1e19,
                255.0,
                256.0,
                1.8446744073709552e19,
                65535.5
            ])),
            4 => json!(self.string(0, 6)),
            5 => json!(*self.pick(&[
                "d1",
                "w1",
                "Low",
                "High",
                "Empty",
                "Stop",
                "en",
                "https://x.io",
                "a@b.c",
                "abc5"
            ])),
            6 => Value::Array((0..self.below(4)).map(|_| self.random(depth + 1)).collect()),
            _ => {
                let keys = [
                    "query", "name", "city", "kind", "x", "y", "value", "children", "t", "c",
                    "Circle", "Rect", "w", "h", "zz",
                ];
                let mut map = Map::new();
                for _ in 0..self.below(4) {
                    let k = self.pick(&keys).to_string();
                    let v = self.random(depth + 1);
                    map.insert(k, v);
                }
                Value::Object(map)
            }
        }
    }

    /// Changes one random place of `doc`.
    pub fn mutate(&mut self, doc: &mut Value) {
        let mut paths = Vec::new();
        collect_paths(doc, String::new(), &mut paths);
        let path = self.pick(&paths).clone();
        let Some(node) = doc.pointer_mut(&path) else {
            return;
        };
        match self.below(9) {
            0 => {
                if let Value::Object(map) = node
                    && !map.is_empty()
                {
                    let i = self.below(map.len());
                    let key = map.keys().nth(i).cloned().unwrap_or_default();
                    map.remove(&key);
                }
            }
            1 => {
                if let Value::Object(map) = node {
                    let v = self.random(2);
                    map.insert("zz_extra".into(), v);
                }
            }
            2 => *node = Value::Null,
            3 => *node = self.random(1),
            4 => {
                if let Some(n) = node.as_f64() {
                    let delta = *self.pick(&[1.0, -1.0, 0.5, 1e20, -1e20]);
                    *node = json!(n + delta);
                }
            }
            5 => {
                if let Some(n) = node.as_i64() {
                    *node = json!(n.saturating_add(*self.pick(&[
                        1_i64,
                        -1,
                        255,
                        65536,
                        i64::from(i32::MAX)
                    ])));
                }
            }
            6 => {
                if let Value::String(s) = node {
                    if self.chance(50) {
                        s.push(*self.pick(ALPHABET));
                    } else {
                        s.pop();
                    }
                }
            }
            7 => {
                if let Value::Array(items) = node {
                    if self.chance(50) {
                        items.pop();
                    } else if let Some(first) = items.first().cloned() {
                        items.push(first);
                    }
                }
            }
            _ => {
                // Swap an object for an array of its values, or a string for a one-key object:
                // the shapes serde reads leniently.
                match node {
                    Value::Object(map) => *node = Value::Array(map.values().cloned().collect()),
                    Value::String(s) => *node = json!({ s.clone(): null }),
                    _ => {}
                }
            }
        }
    }
}

pub fn collect_paths(value: &Value, at: String, out: &mut Vec<String>) {
    out.push(at.clone());
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                collect_paths(
                    v,
                    format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                    out,
                );
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                collect_paths(v, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// Whether the canonical schema accepts `doc` as arguments. Arguments may arrive as a JSON
/// string holding the object's text (OpenAI's form), and empty text stands for `{}`: a string
/// is judged by the document it holds.
pub fn accepts(validator: &jsonschema::Validator, doc: &Value) -> bool {
    match doc {
        Value::String(inner) if inner.trim().is_empty() => validator.is_valid(&json!({})),
        Value::String(inner) => {
            serde_json::from_str::<Value>(inner).is_ok_and(|held| validator.is_valid(&held))
        }
        doc => validator.is_valid(doc),
    }
}

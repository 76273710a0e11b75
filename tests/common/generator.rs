//! A schema-driven document generator for the differential and provider tests: valid
//! documents, near misses and random JSON, from a seed.
#![allow(dead_code)] // each test binary uses part of it

use serde_json::{Map, Value, json};

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

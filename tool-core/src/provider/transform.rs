//! Schema rewrites shared by the dialects: inlining `$ref`s, turning constraints into words,
//! and reading a few facts off schema nodes.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::dialect::{Dialect, ExportError};
use crate::schema::{SUBSCHEMA_KEYS, SUBSCHEMA_LISTS, SUBSCHEMA_MAPS};

/// Who is being exported for which dialect: the context of every error.
#[derive(Clone, Copy)]
pub(super) struct Target<'a> {
    pub(super) tool: &'a str,
    pub(super) dialect: Dialect,
}

impl Target<'_> {
    pub(super) fn error(self, path: &str, reason: impl Into<String>) -> ExportError {
        ExportError::new(self.tool, self.dialect.name(), path, reason)
    }
}

/// The rules a dialect applies to each schema node.
pub(super) type NodeRule = fn(&mut Map<String, Value>, &str, Target<'_>) -> Result<(), ExportError>;

/// The canonical schema without `$schema`, and, for a strict dialect, with its `$ref`s inlined
/// (recursive ones kept when `keep_recursive`) and `rule` applied to every node.
pub(super) fn derive(
    def: &crate::definition::ToolDefinition,
    dialect: Dialect,
    strict: bool,
    keep_recursive: bool,
    rule: NodeRule,
) -> Result<Value, ExportError> {
    let schema = without_dialect(def.input_schema());
    if !strict {
        return Ok(schema);
    }
    let target = Target {
        tool: def.name(),
        dialect,
    };
    let mut schema = inline_refs(&schema, keep_recursive, target)?;
    crate::schema::visit_mut(&mut schema, "", &mut |node, path| rule(node, path, target))?;
    Ok(schema)
}

/// Replaces every `$ref` to `#/$defs/...` by the definition it names, with the referring node's
/// own keys (its description) laid over it. A type that contains itself cannot be inlined: with
/// `keep_recursive` its definition stays in `$defs` and is referred to by a bare `$ref`;
/// without, it is an error.
pub(super) fn inline_refs(
    root: &Value,
    keep_recursive: bool,
    target: Target<'_>,
) -> Result<Value, ExportError> {
    let defs = root
        .get("$defs")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut inliner = Inliner {
        defs: &defs,
        keep_recursive,
        target,
        stack: Vec::new(),
        kept: BTreeSet::new(),
    };
    let mut out = inliner.node(root, "")?;
    let Value::Object(map) = &mut out else {
        return Ok(out);
    };
    map.shift_remove("$defs");
    // Definitions kept for recursion are themselves inlined, but for their own recursion.
    let mut done = BTreeSet::new();
    let mut kept_defs = Map::new();
    while let Some(name) = inliner.kept.difference(&done).next().cloned() {
        done.insert(name.clone());
        if let Some(def) = defs.get(&name) {
            inliner.stack.push(name.clone());
            let inlined = inliner.node(def, &format!("/$defs/{name}"))?;
            inliner.stack.pop();
            kept_defs.insert(name, inlined);
        }
    }
    if !kept_defs.is_empty() {
        map.insert("$defs".into(), Value::Object(kept_defs));
    }
    Ok(out)
}

struct Inliner<'d, 't> {
    defs: &'d Map<String, Value>,
    keep_recursive: bool,
    target: Target<'t>,
    stack: Vec<String>,
    kept: BTreeSet<String>,
}

impl Inliner<'_, '_> {
    fn node(&mut self, node: &Value, path: &str) -> Result<Value, ExportError> {
        let Value::Object(map) = node else {
            return Ok(node.clone());
        };
        if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
            let Some(name) = reference.strip_prefix("#/$defs/") else {
                return Err(self.target.error(
                    path,
                    format!("the reference `{reference}` points outside the schema's `$defs`"),
                ));
            };
            let name = name.replace("~1", "/").replace("~0", "~");
            if self.stack.contains(&name) {
                if !self.keep_recursive {
                    return Err(self.target.error(
                        path,
                        format!(
                            "the type `{name}` contains itself, and {} does not support recursive schemas; bound the depth with a non-recursive type, or use another dialect",
                            self.target.dialect
                        ),
                    ));
                }
                self.kept.insert(name);
                // A recursive reference stays bare: OpenAI strict forbids siblings beside `$ref`.
                return Ok(Value::Object(Map::from_iter([(
                    "$ref".to_owned(),
                    Value::String(reference.to_owned()),
                )])));
            }
            let Some(def) = self.defs.get(&name) else {
                return Err(self.target.error(
                    path,
                    format!("the reference `{reference}` names no definition"),
                ));
            };
            self.stack.push(name);
            let inlined = self.node(def, path)?;
            self.stack.pop();
            let mut merged = match inlined {
                Value::Object(m) => m,
                other => return Ok(other),
            };
            for (key, value) in map {
                if key != "$ref" {
                    merged.insert(key.clone(), self.child(key, value, path)?);
                }
            }
            return Ok(Value::Object(merged));
        }
        let mut out = Map::new();
        for (key, value) in map {
            if key == "$defs" && path.is_empty() {
                continue;
            }
            out.insert(key.clone(), self.child(key, value, path)?);
        }
        Ok(Value::Object(out))
    }

    /// Recurses into the subschemas under `key`; other values are copied.
    fn child(&mut self, key: &str, value: &Value, path: &str) -> Result<Value, ExportError> {
        if SUBSCHEMA_KEYS.contains(&key) {
            return self.node(value, &format!("{path}/{key}"));
        }
        if SUBSCHEMA_LISTS.contains(&key)
            && let Value::Array(items) = value
        {
            return items
                .iter()
                .enumerate()
                .map(|(i, item)| self.node(item, &format!("{path}/{key}/{i}")))
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array);
        }
        if SUBSCHEMA_MAPS.contains(&key)
            && key != "$defs"
            && let Value::Object(children) = value
        {
            let mut out = Map::new();
            for (name, child) in children {
                out.insert(
                    name.clone(),
                    self.node(child, &format!("{path}/{key}/{name}"))?,
                );
            }
            return Ok(Value::Object(out));
        }
        Ok(value.clone())
    }
}

/// Plain words for a constraint keyword, or `None` for one that needs no words.
fn words(key: &str, value: &Value, node: &Map<String, Value>) -> Option<String> {
    let n = || value.to_string();
    Some(match key {
        "minLength" | "maxLength" => {
            let (lo, hi) = (node.get("minLength"), node.get("maxLength"));
            if key == "maxLength" && lo.is_some() {
                return None; // said together with minLength
            }
            match (lo, hi) {
                (Some(lo), Some(hi)) => format!("{lo} to {hi} characters"),
                (Some(lo), None) => format!("at least {lo} characters"),
                (None, Some(hi)) => format!("at most {hi} characters"),
                (None, None) => return None,
            }
        }
        "minItems" | "maxItems" => {
            let (lo, hi) = (node.get("minItems"), node.get("maxItems"));
            if key == "maxItems" && lo.is_some() {
                return None;
            }
            match (lo, hi) {
                (Some(lo), Some(hi)) => format!("{lo} to {hi} items"),
                (Some(lo), None) => format!("at least {lo} items"),
                (None, Some(hi)) => format!("at most {hi} items"),
                (None, None) => return None,
            }
        }
        "minimum" | "maximum" => {
            let (lo, hi) = (node.get("minimum"), node.get("maximum"));
            if key == "maximum" && lo.is_some() {
                return None;
            }
            match (lo, hi) {
                (Some(lo), Some(hi)) => format!("{lo} to {hi}"),
                (Some(lo), None) => format!("at least {lo}"),
                (None, Some(hi)) => format!("at most {hi}"),
                (None, None) => return None,
            }
        }
        "exclusiveMinimum" => format!("greater than {}", n()),
        "exclusiveMaximum" => format!("less than {}", n()),
        "multipleOf" => format!("a multiple of {}", n()),
        "uniqueItems" if value == &Value::Bool(true) => "no repeated items".to_owned(),
        "minProperties" => format!("at least {} keys", n()),
        "maxProperties" => format!("at most {} keys", n()),
        "pattern" => format!("matching the pattern {}", n()),
        "format" => match value.as_str()? {
            "email" => "an email address".to_owned(),
            "uri" => "an absolute URL".to_owned(),
            "date-time" => "an RFC 3339 date-time".to_owned(),
            "date" => "a date (YYYY-MM-DD)".to_owned(),
            "time" => "a time (HH:MM:SS)".to_owned(),
            "uuid" => "a UUID".to_owned(),
            "ipv4" => "an IPv4 address".to_owned(),
            "ipv6" => "an IPv6 address".to_owned(),
            "hostname" => "a host name".to_owned(),
            // Rust number formats (`uint8`, `double`): the bounds say what matters.
            _ => return None,
        },
        "enum" => {
            let values: Vec<String> = value.as_array()?.iter().map(Value::to_string).collect();
            format!("one of: {}", values.join(", "))
        }
        "default" => format!("default: {}", n()),
        "additionalProperties" => match value {
            Value::Object(schema) => match schema.get("type").and_then(Value::as_str) {
                Some(t) => format!("an object with any keys, each value of type {t}"),
                None => "an object with any keys".to_owned(),
            },
            _ => return None,
        },
        _ => return None,
    })
}

/// Removes `keys` from `node` and appends what they said to its description, e.g.
/// `"Search keywords. (2 to 300 characters)"`.
pub(super) fn downgrade(node: &mut Map<String, Value>, keys: &[&str]) {
    let present: Vec<&str> = keys
        .iter()
        .copied()
        .filter(|k| node.contains_key(*k))
        .collect();
    if present.is_empty() {
        return;
    }
    let said: Vec<String> = present
        .iter()
        .filter_map(|k| node.get(*k).and_then(|v| words(k, v, node)))
        .collect();
    for key in &present {
        node.shift_remove(*key);
    }
    describe(node, &said);
}

/// Appends `said` to the node's description, in parentheses.
pub(super) fn describe(node: &mut Map<String, Value>, said: &[String]) {
    if said.is_empty() {
        return;
    }
    let words = said.join("; ");
    let description = match node.get("description").and_then(Value::as_str) {
        Some(existing) if !existing.is_empty() => format!("{existing} ({words})"),
        _ => format!("({words})"),
    };
    node.insert("description".into(), Value::String(description));
}

/// Whether a schema node describes an object.
pub(super) fn is_object(node: &Map<String, Value>) -> bool {
    match node.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
        _ => node.contains_key("properties"),
    }
}

/// Whether a schema node is `{"type": "null"}` (with at most a description).
pub(super) fn is_null(node: &Value) -> bool {
    node.get("type").and_then(Value::as_str) == Some("null")
        && node
            .as_object()
            .is_some_and(|m| m.keys().all(|k| k == "type" || k == "description"))
}

/// Moves `oneOf` into `anyOf`: every dialect with a subset reads a union as `anyOf`, and the
/// variants of the enums serde writes exclude each other anyway.
pub(super) fn one_of_to_any_of(node: &mut Map<String, Value>) {
    if let Some(Value::Array(variants)) = node.shift_remove("oneOf") {
        match node.get_mut("anyOf") {
            Some(Value::Array(existing)) => existing.extend(variants),
            _ => {
                node.insert("anyOf".into(), Value::Array(variants));
            }
        }
    }
}

/// Merges a single-entry `allOf` into its node; more entries are an error.
pub(super) fn merge_all_of(
    node: &mut Map<String, Value>,
    path: &str,
    target: Target<'_>,
) -> Result<(), ExportError> {
    match node.shift_remove("allOf") {
        None => Ok(()),
        Some(Value::Array(mut entries)) if entries.len() == 1 => {
            if let Some(Value::Object(entry)) = entries.pop() {
                for (k, v) in entry {
                    node.entry(k).or_insert(v);
                }
            }
            Ok(())
        }
        Some(_) => Err(target.error(
            path,
            format!(
                "`allOf` with several schemas cannot be expressed in {}",
                target.dialect
            ),
        )),
    }
}

/// Keywords no subset dialect can express, with what to write instead.
pub(super) fn reject_unsupported(
    node: &Map<String, Value>,
    path: &str,
    target: Target<'_>,
) -> Result<(), ExportError> {
    const UNSUPPORTED: &[(&str, &str)] = &[
        (
            "prefixItems",
            "a tuple cannot be expressed; use a struct with named fields",
        ),
        ("not", "`not` cannot be expressed"),
        ("if", "`if`/`then`/`else` cannot be expressed"),
        (
            "dependentRequired",
            "`dependentRequired` cannot be expressed",
        ),
        ("dependentSchemas", "`dependentSchemas` cannot be expressed"),
        (
            "patternProperties",
            "`patternProperties` cannot be expressed; use named fields",
        ),
        (
            "unevaluatedProperties",
            "`unevaluatedProperties` cannot be expressed",
        ),
        ("contains", "`contains` cannot be expressed"),
    ];
    for (key, reason) in UNSUPPORTED {
        if node.contains_key(*key) {
            return Err(target.error(path, format!("{reason} in {}", target.dialect)));
        }
    }
    Ok(())
}

/// What the strict dialects (OpenAI strict, Anthropic strict) do to every node alike: refuse
/// what they cannot express, merge and rename unions, close every object (an open map is an
/// error), drop `default: null`, and describe formats outside `formats`. Returns whether the
/// node is an object, for the dialect's own rules.
pub(super) fn strict_common(
    node: &mut Map<String, Value>,
    path: &str,
    target: Target<'_>,
    formats: &[&str],
) -> Result<bool, ExportError> {
    reject_unsupported(node, path, target)?;
    merge_all_of(node, path, target)?;
    one_of_to_any_of(node);
    if node.contains_key("$ref") {
        return Ok(false); // a bare recursive reference: its definition gets the rules
    }
    if crate::schema::accepts_any_json(node) {
        return Err(target.error(
            path,
            format!(
                "any JSON (a `serde_json::Value` parameter) cannot be strict: {} needs a type on every value; give the parameter a type (a struct, an enum, a list), or use the non-strict dialect",
                target.dialect
            ),
        ));
    }
    let object = is_object(node);
    if object {
        if !matches!(
            node.get("additionalProperties"),
            None | Some(Value::Bool(false))
        ) {
            return Err(target.error(
                path,
                format!(
                    "an open map (`HashMap`, `BTreeMap`, a struct with `#[serde(flatten)]` of a map) cannot be strict: {} needs `additionalProperties: false` on every object; use a list of key/value structs, or the non-strict dialect",
                    target.dialect
                ),
            ));
        }
        node.insert("additionalProperties".into(), Value::Bool(false));
    }
    if node.get("default") == Some(&Value::Null) {
        node.shift_remove("default");
    }
    let format_ok = node
        .get("format")
        .and_then(Value::as_str)
        .is_none_or(|f| formats.contains(&f));
    if !format_ok {
        downgrade(node, &["format"]);
    }
    Ok(object)
}

/// The arguments of a tool's valid example calls.
pub(crate) fn valid_examples(def: &crate::definition::ToolDefinition) -> Vec<Value> {
    def.examples()
        .iter()
        .filter(|e| e.error.is_none())
        .map(|e| e.arguments.clone())
        .collect()
}

/// A schema without its `$schema` keyword.
pub(crate) fn without_dialect(schema: &Value) -> Value {
    let mut schema = schema.clone();
    if let Value::Object(map) = &mut schema {
        map.shift_remove("$schema");
    }
    schema
}

/// Moves a subschema that a strict export repeats into `$defs`, and refers to it by a bare
/// `$ref` (a reference with no siblings, as OpenAI strict takes it), when
/// that makes the schema shorter: the JSON's length, which tracks its tokens, decides. The
/// largest saving goes first, and again until none is left. The root, its own properties and
/// anything in `$defs` already stay where they are. Anthropic strict is left inlined: its
/// strict tool use is not documented to take `$ref` everywhere OpenAI's does.
pub(super) fn hoist(schema: &mut Value) {
    for round in 0..32 {
        let mut seen: Vec<(String, usize)> = Vec::new();
        collect(schema, 0, &mut seen);
        let name = loop_name(schema, round);
        let reference = format!(r##"{{"$ref":"#/$defs/{name}"}}"##);
        let best = seen
            .iter()
            .filter(|(_, count)| *count >= 2)
            .map(|(text, count)| {
                let saved = (count - 1) * text.len();
                let cost = count * reference.len() + name.len() + 16;
                (text, saved.saturating_sub(cost))
            })
            .filter(|(_, saving)| *saving > 0)
            .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(a.0)));
        let Some((text, _)) = best else {
            return;
        };
        let Ok(body) = serde_json::from_str::<Value>(text) else {
            return;
        };
        replace(schema, 0, &body, &name);
        if let Value::Object(root) = schema {
            let defs = root
                .entry("$defs")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(defs) = defs {
                defs.insert(name, body);
            }
        }
    }
}

/// A name for a hoisted definition that `$defs` does not have yet.
fn loop_name(schema: &Value, round: usize) -> String {
    let taken = schema.get("$defs").and_then(Value::as_object);
    (round + 1..)
        .map(|n| format!("Shared{n}"))
        .find(|name| taken.is_none_or(|defs| !defs.contains_key(name)))
        .unwrap_or_else(|| "Shared".to_owned())
}

/// Every object schema below the top level (and outside `$defs`), as its JSON, with how often
/// it occurs.
fn collect(node: &Value, depth: usize, seen: &mut Vec<(String, usize)>) {
    let Value::Object(map) = node else { return };
    if depth >= 2 && map.contains_key("properties") {
        let text = node.to_string();
        match seen.iter_mut().find(|(t, _)| *t == text) {
            Some((_, count)) => *count += 1,
            None => seen.push((text, 1)),
        }
    }
    for_children(map, |child| collect(child, depth + 1, seen));
}

/// Replaces every occurrence of `body` below the top level by a reference to `name`.
fn replace(node: &mut Value, depth: usize, body: &Value, name: &str) {
    if depth >= 2 && node.get("properties").is_some() && node == body {
        *node = serde_json::json!({ "$ref": format!("#/$defs/{name}") });
        return;
    }
    let Value::Object(map) = node else { return };
    for (key, value) in map.iter_mut() {
        if key == "$defs" {
            continue;
        }
        if SUBSCHEMA_KEYS.contains(&key.as_str()) {
            replace(value, depth + 1, body, name);
        } else if SUBSCHEMA_LISTS.contains(&key.as_str())
            && let Value::Array(items) = value
        {
            for item in items {
                replace(item, depth + 1, body, name);
            }
        } else if key == "properties"
            && let Value::Object(properties) = value
        {
            for property in properties.values_mut() {
                replace(property, depth + 1, body, name);
            }
        }
    }
}

/// Calls `f` on each subschema of a node (not those in `$defs`).
fn for_children(map: &Map<String, Value>, mut f: impl FnMut(&Value)) {
    for (key, value) in map {
        if key == "$defs" {
            continue;
        }
        if SUBSCHEMA_KEYS.contains(&key.as_str()) {
            f(value);
        } else if SUBSCHEMA_LISTS.contains(&key.as_str())
            && let Value::Array(items) = value
        {
            items.iter().for_each(&mut f);
        } else if key == "properties"
            && let Value::Object(properties) = value
        {
            properties.values().for_each(&mut f);
        }
    }
}

/// Makes a property's schema accept `null` as well, unless it does: `null` added to its
/// `type` (and its `enum`), a `null` branch added to its `anyOf`, or the schema wrapped in an
/// `anyOf` with `null` (its description kept outside, beside the `anyOf`).
pub(super) fn make_nullable(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    let typed_null = |m: &Map<String, Value>| match m.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(types)) => types.iter().any(|t| t == "null"),
        _ => false,
    };
    if typed_null(map) {
        return;
    }
    if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
        if !branches
            .iter()
            .any(|b| b.as_object().is_some_and(typed_null))
        {
            branches.push(serde_json::json!({"type": "null"}));
        }
        return;
    }
    match map.get_mut("type") {
        Some(Value::String(t)) => {
            let t = std::mem::take(t);
            map.insert("type".into(), serde_json::json!([t, "null"]));
        }
        Some(Value::Array(types)) => types.push(Value::String("null".into())),
        _ => {
            let mut inner = std::mem::take(map);
            let description = inner.shift_remove("description");
            map.insert(
                "anyOf".into(),
                serde_json::json!([Value::Object(inner), {"type": "null"}]),
            );
            if let Some(description) = description {
                map.insert("description".into(), description);
            }
            return;
        }
    }
    if let Some(Value::Array(values)) = map.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
}

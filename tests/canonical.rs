//! The canonical form of a call's arguments, held to what the tool reads: over generated
//! documents, two documents have one canonical form (and one hash, so one approval and one
//! idempotency key) exactly when the tool reads them as the same value.
//!
//! The mirror tools below return what they read, so "the tool reads the same value" is
//! observed, not assumed. Documents come from the schema-driven generator, then are moved by
//! rewrites a tool cannot tell apart (`null` for an optional parameter, a default spelled
//! out, keys in another order, integers written with a fraction) or by a change of one value.
//! The shapes of the differential tests add breadth: rewrites never change their canonical
//! form.

mod common;

use std::collections::BTreeMap;

use common::Gen;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolsmith::policy::arguments_hash;
use toolsmith::{ToolContext, ToolDefinition, Toolbox, tool};

/// A nested object with serde defaults.
#[derive(Deserialize, Serialize, JsonSchema, PartialEq, Debug)]
pub struct Prefs {
    #[serde(default)]
    verbose: bool,
    #[serde(default = "five")]
    depth: u8,
    label: Option<String>,
}

fn five() -> u8 {
    5
}

/// A place.
#[derive(Deserialize, Serialize, JsonSchema, PartialEq, Debug)]
#[serde(deny_unknown_fields)]
pub struct Place {
    city: String,
    zip: Option<u32>,
}

/// What the mirror tools read.
#[derive(Serialize, JsonSchema)]
pub struct Read {
    seen: Value,
}

/// Mirrors flat scalars with optional and defaulted ones. Read-only. Not for real work.
#[tool(effect = "read", allow(unbounded_string, description_scope))]
fn mirror_flat(
    /// A name.
    #[arg(length(max = 8))]
    name: String,
    /// An optional count.
    count: Option<i64>,
    /// A defaulted size.
    #[arg(default = 3, range(min = 0, max = 100))]
    size: u32,
    /// A defaulted ratio.
    #[arg(default = 0.5)]
    ratio: f64,
    /// An optional flag.
    flag: Option<bool>,
) -> Read {
    Read {
        seen: json!([name, count, size, ratio, flag]),
    }
}

/// Mirrors nested objects. Read-only. Not for real work.
#[tool(effect = "read", allow(unbounded_string, description_scope, open_map))]
fn mirror_nested(
    /// Preferences.
    prefs: Prefs,
    /// An optional place.
    place: Option<Place>,
    /// Places.
    #[arg(length(max = 4))]
    stops: Vec<Place>,
    /// Places by name.
    named: BTreeMap<String, Prefs>,
) -> Read {
    Read {
        seen: json!({"prefs": prefs, "place": place, "stops": stops, "named": named}),
    }
}

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    })
}

/// `schema` with local references followed.
fn resolve<'s>(root: &'s Value, schema: &'s Value) -> &'s Value {
    match schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| root.pointer(r.trim_start_matches('#')))
    {
        Some(target) => resolve(root, target),
        None => schema,
    }
}

/// Whether `schema` allows `null` (`Option<T>` and every `#[tool]` optional parameter do; a
/// `#[serde(default)]` field does not).
fn accepts_null(root: &Value, schema: &Value) -> bool {
    let schema = resolve(root, schema);
    let typed = match schema.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(types)) => types.iter().any(|t| t == "null"),
        _ => false,
    };
    typed
        || ["anyOf", "oneOf"].iter().any(|key| {
            schema[key]
                .as_array()
                .is_some_and(|branches| branches.iter().any(|b| accepts_null(root, b)))
        })
}

/// Rewrites `value` in ways no tool can tell apart: `null` for a left-out optional property
/// and the reverse, a default spelled out, keys reordered, integers written with a fraction.
fn rewrite(g: &mut Gen<'_>, root: &Value, schema: &Value, value: &mut Value) {
    let schema = resolve(root, schema);
    match value {
        Value::Object(map) => {
            let shape = schema.get("properties").map(|_| schema).or_else(|| {
                let branches = schema.get("anyOf")?.as_array()?;
                let objects: Vec<&Value> = branches
                    .iter()
                    .filter(|b| b.get("type").and_then(Value::as_str) != Some("null"))
                    .collect();
                (objects.len() == 1).then(|| resolve(root, objects[0]))
            });
            if let Some(shape) = shape
                && let Some(properties) = shape.get("properties").and_then(Value::as_object)
            {
                let required: Vec<&str> = shape["required"]
                    .as_array()
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                for (name, sub) in properties {
                    if required.contains(&name.as_str()) {
                        continue;
                    }
                    let default = sub
                        .get("default")
                        .or_else(|| resolve(root, sub).get("default"));
                    match map.get(name) {
                        Some(Value::Null) if g.chance(50) => {
                            map.shift_remove(name);
                        }
                        None if accepts_null(root, sub) && g.chance(40) => {
                            map.insert(name.clone(), Value::Null);
                        }
                        None if default.is_some() && g.chance(50) => {
                            map.insert(name.clone(), default.cloned().unwrap_or(Value::Null));
                        }
                        Some(v) if Some(v) == default && g.chance(50) => {
                            map.shift_remove(name);
                        }
                        _ => {}
                    }
                }
                for (name, item) in map.iter_mut() {
                    let sub = properties
                        .get(name)
                        .or_else(|| shape.get("additionalProperties"));
                    if let Some(sub) = sub {
                        rewrite(g, root, sub, item);
                    }
                }
            } else if let Some(extra) = schema.get("additionalProperties") {
                for item in map.values_mut() {
                    rewrite(g, root, extra, item);
                }
            }
            // Another key order.
            let mut entries: Vec<(String, Value)> = std::mem::take(map).into_iter().collect();
            for i in (1..entries.len()).rev() {
                entries.swap(i, g.below(i + 1));
            }
            map.extend(entries);
        }
        Value::Array(items) => {
            let item_schema = schema
                .get("items")
                .or_else(|| {
                    schema["anyOf"]
                        .as_array()?
                        .iter()
                        .find_map(|b| resolve(root, b).get("items"))
                })
                .cloned()
                .unwrap_or(json!({}));
            for item in items {
                rewrite(g, root, &item_schema, item);
            }
        }
        Value::Number(n) => {
            if let Some(i) = n.as_i64().filter(|i| i.unsigned_abs() < 1 << 53)
                && g.chance(30)
            {
                *value = json!(i as f64);
            }
        }
        _ => {}
    }
}

/// Changes one scalar somewhere in `value` (the tool may still read it the same: `null` and
/// absent, or a value equal to a default).
fn change(g: &mut Gen<'_>, value: &mut Value) {
    let mut scalars = Vec::new();
    common::collect_paths(value, String::new(), &mut scalars);
    let Some(path) = scalars.get(g.below(scalars.len().max(1))).cloned() else {
        return;
    };
    if let Some(target) = value.pointer_mut(&path) {
        let changed = match &*target {
            Value::Bool(b) => Value::Bool(!*b),
            Value::Number(n) => json!(n.as_f64().unwrap_or(0.0) + 1.0),
            Value::String(s) => Value::String(format!("{s}x")),
            Value::Null => json!(1),
            other => other.clone(),
        };
        *target = changed;
    }
}

/// Over documents the mirror tools accept: the same canonical form exactly when the tool
/// read the same value, and the hash follows the form.
#[test]
fn one_canonical_form_exactly_when_the_tool_reads_one_value() {
    let toolbox = Toolbox::new().with(MirrorFlat).with(MirrorNested);
    let defs: Vec<&ToolDefinition> = toolbox.definitions().collect();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ctx = ToolContext::new();
    let compared = std::cell::Cell::new([0usize; 2]);
    runner(2_000)
        .run(&any::<u64>(), |seed| {
            let def = defs[(seed % defs.len() as u64) as usize];
            let root = def.input_schema();
            let mut g = Gen { root, state: seed };
            let a = g.valid(root, 0);
            let mut b = a.clone();
            if g.chance(70) {
                rewrite(&mut g, root, root, &mut b);
            } else {
                change(&mut g, &mut b);
                rewrite(&mut g, root, root, &mut b);
            }
            let (Ok(ca), Ok(cb)) = (def.canonical_arguments(&a), def.canonical_arguments(&b))
            else {
                return Ok(());
            };
            let read = |doc: &Value| {
                let out = rt.block_on(toolbox.call(def.name(), doc.clone(), &ctx));
                prop_assert!(
                    out.is_success(),
                    "{} refused {doc}: {}",
                    def.name(),
                    out.to_json()
                );
                Ok(out.to_json())
            };
            let (ra, rb) = (read(&a)?, read(&b)?);
            // The tool reads its canonical form as it reads the document.
            prop_assert_eq!(&read(&ca)?, &ra);
            prop_assert_eq!(
                ca == cb,
                ra == rb,
                "{}: {} and {} read {} and {}",
                def.name(),
                a,
                b,
                ra,
                rb
            );
            prop_assert_eq!(ca == cb, arguments_hash(&ca) == arguments_hash(&cb));
            let mut counts = compared.get();
            counts[usize::from(ca == cb)] += 1;
            compared.set(counts);
            Ok(())
        })
        .unwrap();
    // Both sides of the property were exercised.
    let compared = compared.get();
    assert!(compared[0] > 100 && compared[1] > 100, "{compared:?}");
}

/// Over the differential tests' shapes: a rewrite no tool can tell apart never changes the
/// canonical form or its hash.
#[test]
fn rewrites_keep_the_canonical_form_of_every_shape() {
    let toolbox = common::toolbox();
    let defs: Vec<&ToolDefinition> = toolbox.definitions().collect();
    let kept = std::cell::Cell::new(0usize);
    runner(4_000)
        .run(&any::<u64>(), |seed| {
            let def = defs[(seed % defs.len() as u64) as usize];
            let root = def.input_schema();
            let mut g = Gen { root, state: seed };
            let a = g.valid(root, 0);
            let Ok(ca) = def.canonical_arguments(&a) else {
                return Ok(());
            };
            let mut b = a.clone();
            rewrite(&mut g, root, root, &mut b);
            let cb = def.canonical_arguments(&b).map_err(|e| {
                TestCaseError::fail(format!("{}: {b}: {}", def.name(), e.message()))
            })?;
            prop_assert_eq!(&ca, &cb, "{}: {} and {}", def.name(), a, b);
            prop_assert_eq!(arguments_hash(&ca), arguments_hash(&cb));
            kept.set(kept.get() + 1);
            Ok(())
        })
        .unwrap();
    let kept = kept.get();
    assert!(kept > 1_000, "{kept} documents compared");
}

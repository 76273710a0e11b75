//! Differential test: the runtime accepts a document exactly when an independent JSON Schema
//! validator (the `jsonschema` crate, 2020-12, formats asserted) accepts it under the tool's
//! advertised schema.
//!
//! The runtime decides with serde and typed checks on its success path; the validator here
//! sees only the exported schema. Documents come from a generator driven by the schema: valid
//! ones, near misses (valid ones with one to three mutations) and random JSON. proptest feeds
//! the seeds; a failure prints the shape and the document.

mod common;

use std::collections::HashMap;
use std::sync::Mutex;

use common::{Gen, toolbox};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use toolsmith::{Tool, ToolContext};

// ---------------------------------------------------------------------------------------------
// The property

/// A runner of `TOOLSMITH_DIFF_CASES` cases (10,000 unless set).
fn runner() -> (u32, TestRunner) {
    let cases = std::env::var("TOOLSMITH_DIFF_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    (cases, runner)
}

#[derive(Default)]
struct Tally {
    accepted: usize,
    rejected: usize,
}

#[test]
fn runtime_agrees_with_an_independent_validator() {
    let toolbox = toolbox();
    let defs: Vec<_> = toolbox.definitions().collect();
    assert!(defs.len() >= 20, "at least 20 schema shapes");
    let oracles: Vec<jsonschema::Validator> = defs
        .iter()
        .map(|d| {
            assert!(
                jsonschema::meta::is_valid(d.input_schema()),
                "{} is not a valid schema",
                d.name()
            );
            jsonschema::options()
                .with_draft(jsonschema::Draft::Draft202012)
                .should_validate_formats(true)
                .build(d.input_schema())
                .expect("the schema compiles")
        })
        .collect();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ctx = ToolContext::new();
    let tally: Mutex<HashMap<String, Tally>> = Mutex::default();
    let (cases, mut runner) = runner();
    runner
        .run(&any::<u64>(), |seed| {
            let index = (seed % defs.len() as u64) as usize;
            let def = defs[index];
            let mut g = Gen {
                root: def.input_schema(),
                state: seed,
            };
            let doc = match g.below(3) {
                0 => g.valid(def.input_schema(), 0),
                1 => {
                    let mut doc = g.valid(def.input_schema(), 0);
                    for _ in 0..=g.below(3) {
                        g.mutate(&mut doc);
                    }
                    doc
                }
                _ => g.random(0),
            };
            let expected = common::accepts(&oracles[index], &doc);
            let text = doc.to_string();
            for (form, outcome) in [
                (
                    "text",
                    rt.block_on(toolbox.call(def.name(), text.as_str(), &ctx)),
                ),
                ("value", rt.block_on(toolbox.call(def.name(), &doc, &ctx))),
            ] {
                prop_assert_eq!(
                    outcome.is_success(),
                    expected,
                    "tool `{}` ({} form) disagrees with the validator on {}: {}",
                    def.name(),
                    form,
                    text,
                    outcome
                );
                if let Some(err) = outcome.error() {
                    prop_assert_eq!(err.code().as_str(), "invalid_arguments");
                    prop_assert!(!err.fields().is_empty());
                }
            }
            let mut tally = tally.lock().unwrap();
            let entry = tally.entry(def.name().to_owned()).or_default();
            if expected {
                entry.accepted += 1;
            } else {
                entry.rejected += 1;
            }
            Ok(())
        })
        .unwrap();
    // The generator must exercise both sides of every shape, or the agreement means little.
    let tally = tally.into_inner().unwrap();
    if cases >= 10_000 {
        for def in &defs {
            let t = tally.get(def.name()).expect("every shape was generated");
            assert!(
                t.accepted >= 20,
                "`{}`: only {} valid documents",
                def.name(),
                t.accepted
            );
            assert!(
                t.rejected >= 20,
                "`{}`: only {} invalid documents",
                def.name(),
                t.rejected
            );
        }
    }
    for (name, t) in &tally {
        eprintln!("{name}: {} accepted, {} rejected", t.accepted, t.rejected);
    }
    let total: usize = tally.values().map(|t| t.accepted + t.rejected).sum();
    assert_eq!(total, cases as usize);
}

/// Tools whose schemas serde alone matches stay on the fast path; the others validate fully.
#[test]
fn fast_path_is_used_where_serde_is_exact() {
    use common::{Act, Draw, Emit, FileTicket, Flat, Locate, Lookup, Prioritize, Search, Widths};
    for fast in [
        Flat.definition(),
        Search.definition(),
        Prioritize.definition(),
        Locate.definition(),
        Draw.definition(),
        Widths.definition(),
    ] {
        assert!(
            !fast.validates_fully(),
            "`{}` should use the fast path",
            fast.name()
        );
    }
    for full in [
        FileTicket.definition(),
        Act.definition(),
        Lookup.definition(),
        Emit.definition(),
    ] {
        assert!(
            full.validates_fully(),
            "`{}` should validate fully",
            full.name()
        );
    }
}

/// On a refusal, the direct reporter (flat schemas) lists exactly the problems the full
/// validator lists, with the same pointers and messages.
#[test]
fn direct_report_lists_what_the_validator_lists() {
    let toolbox = toolbox();
    let defs: Vec<_> = toolbox.definitions().collect();
    let reported: Vec<_> = defs
        .iter()
        .copied()
        .filter(|d| {
            toolsmith::__private::explanations(d, &serde_json::json!({}))
                .0
                .is_some()
        })
        .collect();
    assert!(
        reported.len() >= 6,
        "only {} shapes have a direct reporter",
        reported.len()
    );
    let (cases, mut runner) = runner();
    let refused = Mutex::new(0_usize);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ctx = ToolContext::new();
    runner
        .run(&any::<u64>(), |seed| {
            let def = reported[(seed % reported.len() as u64) as usize];
            let mut g = Gen {
                root: def.input_schema(),
                state: seed,
            };
            let mut doc = g.valid(def.input_schema(), 0);
            for _ in 0..=g.below(4) {
                g.mutate(&mut doc);
            }
            if !doc.is_object() {
                return Ok(());
            }
            let (direct, full) = toolsmith::__private::explanations(def, &doc);
            let sorted = |mut fields: Vec<toolsmith::FieldError>| {
                fields.sort_by(|a, b| (&a.pointer, &a.message).cmp(&(&b.pointer, &b.message)));
                fields
            };
            let direct = sorted(direct.expect("a reporter"));
            let full = sorted(full.expect("the validator compiles"));
            if !full.is_empty() {
                *refused.lock().unwrap() += 1;
            }
            prop_assert_eq!(
                &direct,
                &full,
                "tool `{}` on {}",
                def.name(),
                doc.to_string()
            );
            // Through the toolbox, as text and as a value: numbers are read exactly, so an
            // integer written `5.0` is quoted back as `5`.
            let full = sorted(
                toolsmith::__private::explanations(def, &integral_as_integers(&doc))
                    .1
                    .expect("the validator compiles"),
            );
            if !full.is_empty() && full.len() <= 20 {
                let text = doc.to_string();
                for outcome in [
                    rt.block_on(toolbox.call(def.name(), text.as_str(), &ctx)),
                    rt.block_on(toolbox.call(def.name(), &doc, &ctx)),
                ] {
                    let err = outcome.error();
                    prop_assert!(err.is_some(), "`{}` accepted {}", def.name(), text);
                    let fields = sorted(err.map(|e| e.fields().to_vec()).unwrap_or_default());
                    prop_assert_eq!(&fields, &full, "tool `{}` on {}", def.name(), text);
                }
            }
            Ok(())
        })
        .unwrap();
    let refused = refused.into_inner().unwrap();
    eprintln!(
        "{} of {} shapes reported directly; {refused} of {cases} documents refused",
        reported.len(),
        defs.len()
    );
    assert!(
        refused * 4 >= cases as usize,
        "only {refused} of {cases} documents were refused"
    );
}

/// `value` with floats that hold an integer below 2^53 written as that integer, as the
/// runtime reads them.
fn integral_as_integers(value: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Number(n) if n.is_f64() => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 => {
                Value::from(f as i64)
            }
            _ => value.clone(),
        },
        Value::Array(items) => Value::Array(items.iter().map(integral_as_integers).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), integral_as_integers(v)))
                .collect(),
        ),
        _ => value.clone(),
    }
}

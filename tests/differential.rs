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
    let cases = std::env::var("TOOLSMITH_DIFF_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
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

//! Differential test: the runtime accepts a document exactly when an independent JSON Schema
//! validator (the `jsonschema` crate, 2020-12, formats asserted) accepts it under the tool's
//! advertised schema.
//!
//! The runtime decides with serde and typed checks on its success path; the validator here
//! sees only the exported schema. Documents come from a generator driven by the schema: valid
//! ones, near misses (valid ones with one to three mutations) and random JSON. proptest feeds
//! the random seeds; a failure prints the shape and the document.

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
            let as_text = rt.block_on(toolbox.call(def.name(), text.as_str(), &ctx));
            let as_value = rt.block_on(toolbox.call(def.name(), &doc, &ctx));
            // Text is explained while it is read, a parsed value from the value: the same
            // problems, in the same order, in the same words.
            prop_assert_eq!(
                as_text.to_json(),
                as_value.to_json(),
                "tool `{}` explains {} one way as text and another as a value",
                def.name(),
                text
            );
            for (form, outcome) in [("text", as_text), ("value", as_value)] {
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
            toolsmith::__private::explanations(d.validation(), &serde_json::json!({}))
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
            let (direct, full) = toolsmith::__private::explanations(def.validation(), &doc);
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
                toolsmith::__private::explanations(def.validation(), &integral_as_integers(&doc))
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

/// A call that serde reads and only its `#[arg]` checks refuse is explained from the typed
/// values, without reading the document again: every broken constraint, with the pointer and
/// the message the full validator gives for the same document, as text and as a value.
#[test]
fn arguments_refused_only_by_their_checks_are_explained_as_the_validator_explains_them() {
    use serde_json::json;
    let toolbox = toolbox();
    let cases = [
        ("search", json!({"query": "r", "num_results": 11})),
        ("search", json!({"query": "x".repeat(31), "num_results": 0})),
        (
            "optional",
            json!({"nickname": "abcdef", "level": 0, "ratio": 2.5}),
        ),
        (
            "optional",
            json!({"nickname": "a", "level": 10, "ratio": -1.5}),
        ),
        ("optional", json!({"ratio": 7.0, "level": 9})),
        ("optional", json!({"ratio": -2.75})),
        (
            "contact",
            json!({"code": "ABCD", "email": "not an email", "homepage": "nope"}),
        ),
        ("contact", json!({"code": "abc12"})),
        ("tag", json!({"tags": [], "scores": []})),
        ("tag", json!({"tags": ["a", "b", "c", "d"], "scores": [1]})),
        (
            "rename",
            json!({"q": "a very long query", "lang": "eng", "page": 0}),
        ),
        ("rename", json!({"q": "ok", "lang": "é"})),
    ];
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ctx = ToolContext::new();
    let sorted = |mut fields: Vec<toolsmith::FieldError>| {
        fields.sort_by(|a, b| (&a.pointer, &a.message).cmp(&(&b.pointer, &b.message)));
        fields
    };
    for (name, doc) in cases {
        let def = toolbox.definitions().find(|d| d.name() == name).unwrap();
        assert!(!def.validates_fully(), "`{name}` is read by serde");
        let full = sorted(
            toolsmith::__private::explanations(def.validation(), &integral_as_integers(&doc))
                .1
                .expect("the validator compiles"),
        );
        assert!(!full.is_empty(), "`{name}` accepts {doc}");
        let text = doc.to_string();
        for outcome in [
            rt.block_on(toolbox.call(name, text.as_str(), &ctx)),
            rt.block_on(toolbox.call(name, &doc, &ctx)),
        ] {
            let err = outcome.error().expect("refused");
            assert_eq!(err.code().as_str(), "invalid_arguments");
            assert_eq!(sorted(err.fields().to_vec()), full, "`{name}` on {text}");
            for field in err.fields() {
                assert!(
                    err.message()
                        .contains(&format!("{}: {}", field.pointer, field.message)),
                    "{}",
                    err.message()
                );
            }
        }
    }
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

// ---------------------------------------------------------------------------------------------
// Exact integers at the boundaries

/// Returns every argument as text, so a test sees exactly what reached the tool.
#[toolsmith::tool(
    effect = "read",
    inline,
    allow(description_scope, tool_name, unbounded_list)
)]
fn exact_widths(
    /// u8
    a: Option<u8>,
    /// i8
    b: Option<i8>,
    /// u16
    c: Option<u16>,
    /// i32
    d: Option<i32>,
    /// u32
    e: Option<u32>,
    /// i64
    f: Option<i64>,
    /// u64
    g: Option<u64>,
) -> Vec<String> {
    fn show<T: ToString>(v: Option<T>) -> Option<String> {
        v.map(|v| v.to_string())
    }
    [
        show(a),
        show(b),
        show(c),
        show(d),
        show(e),
        show(f),
        show(g),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// An integer parameter takes a number exactly when its exact value is an integer in the
/// type's range, whatever its form (`5`, `5.0`, `5e0`, `50e-1`), and the tool gets that
/// integer; every other number is refused with the parameter's pointer. As text, the exact
/// value is the literal's; as a parsed value, it is what the parser made of it (a float
/// beyond 2^53 stands for many integers and is refused).
#[test]
fn integers_are_exact_at_every_boundary() {
    const PARAMS: [(&str, i128, i128); 7] = [
        ("a", 0, u8::MAX as i128),
        ("b", i8::MIN as i128, i8::MAX as i128),
        ("c", 0, u16::MAX as i128),
        ("d", i32::MIN as i128, i32::MAX as i128),
        ("e", 0, u32::MAX as i128),
        ("f", i64::MIN as i128, i64::MAX as i128),
        ("g", 0, u64::MAX as i128),
    ];
    let toolbox = toolsmith::Toolbox::new().with(ExactWidths);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ctx = ToolContext::new();
    // Literals named in the contract, with the integer each stands for exactly.
    let named: [(&str, Option<i128>); 16] = [
        ("1e19", Some(10_000_000_000_000_000_000)),
        ("-1e19", Some(-10_000_000_000_000_000_000)),
        ("1E19", Some(10_000_000_000_000_000_000)),
        ("1.8446744073709551615e19", Some(u64::MAX as i128)),
        ("1.8446744073709551616e19", Some(u64::MAX as i128 + 1)),
        ("9.223372036854775807e18", Some(i64::MAX as i128)),
        ("-9.223372036854775808e18", Some(i64::MIN as i128)),
        ("-9.223372036854775809e18", Some(i64::MIN as i128 - 1)),
        ("9007199254740993.0", Some(9_007_199_254_740_993)),
        ("9007199254740991.0", Some(9_007_199_254_740_991)),
        ("-0", Some(0)),
        ("-0.0e-0", Some(0)),
        ("1.0000000000000002", None),
        ("0.9999999999999999", None),
        ("1e-1", None),
        (
            "12345678901234567890123456789012345678901234567890",
            Some(i128::MAX),
        ),
    ];
    for (literal, exact) in named {
        for (param, lo, hi) in PARAMS {
            let text = format!(r#"{{"{param}": {literal}}}"#);
            let expected = exact.filter(|n| (lo..=hi).contains(n) && *n != i128::MAX);
            let outcome = rt.block_on(toolbox.call("exact_widths", text.as_str(), &ctx));
            if let Err(failure) = check(&outcome, param, expected, &text) {
                panic!("{failure}");
            }
        }
    }
    let (_, mut runner) = runner();
    runner
        .run(&any::<u64>(), |seed| {
            let mut g = common::Gen {
                root: &serde_json::Value::Null,
                state: seed,
            };
            let (param, lo, hi) = PARAMS[g.below(PARAMS.len())];
            let bases: [i128; 12] = [
                0,
                1 << 7,
                1 << 8,
                1 << 15,
                1 << 16,
                1 << 31,
                1 << 32,
                1 << 53,
                1 << 63,
                1 << 64,
                lo,
                hi,
            ];
            let base = bases[g.below(bases.len())];
            let sign = if g.chance(50) { -1 } else { 1 };
            let n = sign * base + (g.below(3) as i128 - 1);
            // The literal, and the integer it stands for exactly (none for a fraction).
            let (literal, exact): (String, Option<i128>) = match g.below(9) {
                0 => (n.to_string(), Some(n)),
                1 => (format!("{n}.0"), Some(n)),
                2 => (format!("{n}.000"), Some(n)),
                3 => (format!("{n}e0"), Some(n)),
                4 if n % 10 == 0 && n != 0 => (format!("{}e1", n / 10), Some(n)),
                4 if n == 0 => ("0e1".to_owned(), Some(0)),
                4 => (format!("{n}0e-1"), Some(n)),
                5 => (format!("{n}.5"), None),
                6 => (format!("{n}.0000000000000000001"), None),
                7 if n % 10 != 0 => (format!("{n}e-1"), None),
                7 if n == 0 => ("0E+1".to_owned(), Some(0)),
                7 => (format!("{}E+1", n / 10), Some(n)),
                _ if n == 0 => ("-0".to_owned(), Some(0)),
                _ => (format!("{n}.0E0"), Some(n)),
            };
            let text = format!(r#"{{"{param}": {literal}}}"#);
            let expect = |exact: Option<i128>| exact.filter(|n| (lo..=hi).contains(n));
            // As text: the literal's exact value.
            let outcome = rt.block_on(toolbox.call("exact_widths", text.as_str(), &ctx));
            check(&outcome, param, expect(exact), &text)?;
            // As a parsed value: what serde_json made of it, which is exact only for an
            // integer it kept as one, or a float of an integer below 2^53.
            if let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) {
                let number = &value[param];
                let parsed = number
                    .as_i64()
                    .map(i128::from)
                    .or_else(|| number.as_u64().map(i128::from))
                    .or_else(|| {
                        number
                            .as_f64()
                            .filter(|f| f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0)
                            .map(|f| f as i128)
                    });
                let outcome = rt.block_on(toolbox.call("exact_widths", &value, &ctx));
                check(&outcome, param, expect(parsed), &value.to_string())?;
            }
            Ok(())
        })
        .unwrap();

    fn check(
        outcome: &toolsmith::ToolOutcome,
        param: &str,
        expected: Option<i128>,
        sent: &str,
    ) -> Result<(), TestCaseError> {
        match expected {
            Some(n) => {
                let got: Vec<String> = outcome
                    .clone()
                    .into_result()
                    .map_err(|e| TestCaseError::fail(format!("{sent} refused: {e}")))?;
                prop_assert_eq!(got, vec![n.to_string()], "{}", sent);
            }
            None => {
                let err = outcome.error();
                prop_assert!(err.is_some(), "{} accepted: {}", sent, outcome);
                let err = err.unwrap();
                prop_assert_eq!(err.code().as_str(), "invalid_arguments");
                let pointer = format!("/{param}");
                prop_assert!(
                    err.fields().iter().any(|f| f.pointer == pointer),
                    "{}: {}",
                    sent,
                    err
                );
            }
        }
        Ok(())
    }
}

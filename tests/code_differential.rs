//! A call from code is the same call: every ground-truth call of the BFCL corpus, and
//! mutations of each, get the same verdict and the same error code when a program makes
//! them as when they are made directly, and each call a program makes leaves one audit
//! record naming the program's call as its parent.
//!
//! The tools are the corpus's own definitions (tests/fixtures/bfcl/functions.jsonl); each
//! echoes its arguments. A program renders the arguments as a Python literal and calls the
//! tool with them as keywords, so they cross the interpreter's edge both ways.

#[path = "support/python.rs"]
mod python;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use toolsmith::audit::MemorySink;
use toolsmith::code::Signature;
use toolsmith::sandbox::Sandbox;
use toolsmith::tool::BoxFuture;
use toolsmith::{Arguments, Tool, ToolContext, ToolDefinition, ToolOutcome, Toolbox};

/// A corpus function as a tool that answers with its arguments.
struct Echo {
    definition: ToolDefinition,
}

impl Tool for Echo {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn call<'a>(
        &'a self,
        arguments: Arguments<'a>,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ToolOutcome> {
        let outcome = self
            .definition
            .validate(arguments)
            .and_then(|value| ToolOutcome::success(&value))
            .unwrap_or_else(ToolOutcome::Error);
        Box::pin(async move { outcome })
    }
}

fn lines(path: &str) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The value of another JSON type, for a mutation.
fn wrong_type(value: &Value) -> Value {
    match value {
        Value::String(_) => json!(12345),
        Value::Number(_) => json!("not a number"),
        Value::Bool(_) => json!("yes"),
        Value::Array(_) => json!({"item": 1}),
        Value::Object(_) => json!([1, 2]),
        Value::Null => json!(0),
    }
}

/// The ground-truth arguments and their mutations: each argument left out, each given a
/// value of another type, an unknown argument added, all of them left out.
fn cases(arguments: &Map<String, Value>) -> Vec<(bool, Value)> {
    let mut out = vec![(true, Value::Object(arguments.clone()))];
    for key in arguments.keys() {
        let mut without = arguments.clone();
        without.remove(key);
        out.push((false, Value::Object(without)));
        let mut wrong = arguments.clone();
        wrong.insert(key.clone(), wrong_type(&arguments[key]));
        out.push((false, Value::Object(wrong)));
    }
    let mut extra = arguments.clone();
    extra.insert("unexpected_argument".into(), json!(true));
    out.push((false, Value::Object(extra)));
    if !arguments.is_empty() {
        out.push((false, json!({})));
    }
    out
}

/// A direct call's verdict: `success` or the error code.
fn verdict(outcome: &ToolOutcome) -> String {
    match outcome.error() {
        None => "success".to_owned(),
        Some(err) => err.code().as_str().to_owned(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_from_code_gets_the_same_verdict_as_a_direct_call_over_the_bfcl_corpus() {
    let functions: BTreeMap<String, Value> = lines("tests/fixtures/bfcl/functions.jsonl")
        .into_iter()
        .map(|f| (f["name"].as_str().unwrap().to_owned(), f))
        .collect();
    let calls = lines("tests/fixtures/bfcl/calls.jsonl");
    let mut by_function: BTreeMap<&str, Vec<&Map<String, Value>>> = BTreeMap::new();
    for call in &calls {
        by_function
            .entry(call["name"].as_str().unwrap())
            .or_default()
            .push(call["arguments"].as_object().unwrap());
    }
    let (mut ground, mut mutations, mut refused, mut differ) = (0, 0, 0, Vec::new());
    let mut tally: BTreeMap<String, usize> = BTreeMap::new();
    for (name, list) in by_function {
        let f = &functions[name];
        let definition = ToolDefinition::new(
            name.to_owned(),
            f["description"].as_str().unwrap_or_default().to_owned(),
            f["parameters"].clone(),
        );
        let audit = Arc::new(MemorySink::default());
        let toolbox = Arc::new(
            Toolbox::new()
                .with(Echo { definition })
                .with_audit(Arc::clone(&audit)),
        );
        let sandbox = Sandbox::builder(Arc::clone(&toolbox)).build().unwrap();
        let python_name = Signature::python(toolbox.get(name).unwrap().definition())
            .name()
            .to_owned();
        for arguments in list {
            for (original, case) in cases(arguments) {
                if original {
                    ground += 1;
                } else {
                    mutations += 1;
                }
                let before = audit.records().len();
                let ctx = ToolContext::new();
                let direct = verdict(&toolbox.call(name, case.clone(), &ctx).await);
                let literal = python::literal(&case);
                let program = format!(
                    "try:\n    {python_name}(**{literal})\n    r = 'success'\nexcept Exception as e:\n    m = str(e)\n    r = m[1:m.index(']')] if m.startswith('[') else 'raised ' + m\nr"
                );
                let ctx = ToolContext::new().with_call_id("prog");
                let from_code = match sandbox.run(&program, &ctx).await {
                    Ok(answer) => answer.result.as_str().unwrap_or("?").to_owned(),
                    Err(err) => format!("program failed: {}", err.message()),
                };
                let records = audit.records();
                assert_eq!(
                    records.len(),
                    before + 2,
                    "{name}: one record each; {from_code}\n{program}"
                );
                assert_eq!(records[before + 1].parent_call_id.as_deref(), Some("prog"));
                assert_eq!(records[before + 1].call_id.as_deref(), Some("prog.1"));
                assert_eq!(records[before].status, records[before + 1].status);
                if direct != "success" {
                    refused += 1;
                }
                *tally.entry(direct.clone()).or_default() += 1;
                if direct != from_code {
                    differ.push(format!(
                        "{name} {case}: direct {direct}, from code {from_code}"
                    ));
                }
            }
        }
    }
    println!(
        "{ground} ground-truth calls and {mutations} mutations; {refused} refused; verdicts {tally:?}"
    );
    assert!(ground >= 2_000, "{ground}");
    assert!(mutations >= 5_000, "{mutations}");
    assert!(
        differ.is_empty(),
        "{} differ:\n{}",
        differ.len(),
        differ[..differ.len().min(20)].join("\n")
    );
}

//! Tools as typed Python signatures (`toolsmith::code::Signature`): the examples' `#[tool]`
//! functions, whose return types derive `JsonSchema`, are typed through and through (no
//! `Any`); over the 1,278 functions of the Berkeley Function Calling Leaderboard
//! (`tests/fixtures/bfcl/functions.jsonl`, Apache-2.0), `Any` is written only where the schema
//! gives a value no shape; and every signature is Python that Python runs (with the oracles'
//! interpreter, `TOOLSMITH_ORACLES`, which `scripts/test.sh` sets).

#[path = "../examples/tools/mod.rs"]
#[allow(dead_code)]
mod tools;

use serde_json::{Value, json};
use toolsmith::code::Signature;
use toolsmith::{Tool, ToolDefinition};

fn corpus() -> Vec<ToolDefinition> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/bfcl/functions.jsonl"
    );
    std::fs::read_to_string(path)
        .expect("the BFCL functions")
        .lines()
        .map(|line| {
            let f: Value = serde_json::from_str(line).expect("a function");
            ToolDefinition::new(
                f["name"].as_str().expect("a name").to_owned(),
                f["description"].as_str().unwrap_or_default().to_owned(),
                f["parameters"].clone(),
            )
        })
        .collect()
}

/// The schema node at `pointer` (`/properties/a/items`) of `root`.
fn node<'v>(root: &'v Value, pointer: &str) -> Option<&'v Value> {
    root.pointer(pointer)
}

/// Whether a schema gives a value no shape: no type, or an object without fields or value
/// type, or an array without items.
fn shapeless(schema: &Value) -> bool {
    let Some(object) = schema.as_object() else {
        return true;
    };
    let typed = [
        "type",
        "enum",
        "const",
        "anyOf",
        "oneOf",
        "$ref",
        "properties",
        "items",
    ]
    .iter()
    .any(|k| object.contains_key(*k));
    !typed
}

#[test]
fn the_examples_tools_are_typed_through_and_through() {
    let search = Signature::python(tools::SearchWeb.definition());
    assert!(
        search.is_typed(),
        "{:?}\n{}",
        search.untyped(),
        search.text()
    );
    assert!(
        search
            .text()
            .contains("class SearchWebResult(TypedDict):\n    \"\"\"What a search found.\"\"\"\n    hits: list[Hit]"),
        "{}",
        search.text()
    );
    assert!(
        search.text().contains("class Hit(TypedDict):"),
        "{}",
        search.text()
    );
    assert!(
        search.text().contains("-> SearchWebResult:"),
        "{}",
        search.text()
    );
    let add = Signature::python(tools::Add.definition());
    assert!(add.is_typed(), "{}", add.text());
    assert!(add.text().contains(") -> int:"), "{}", add.text());
    let create = Signature::python(tools::CreateEvent.definition());
    assert!(create.is_typed(), "{}", create.text());
    assert!(create.text().contains(") -> str:"), "{}", create.text());
}

#[test]
fn a_tool_without_an_output_schema_returns_any_and_says_where() {
    let def = ToolDefinition::new(
        "lookup.order-status",
        "Looks up an order.",
        json!({"type": "object", "properties": {
            "class": {"type": "string", "enum": ["a", "b", null]},
            "tags": {"type": "array"},
            "extra": {"type": "object"},
            "from": {"type": "integer", "description": "A \"\"\" quote"}
        }, "required": ["class"]}),
    );
    let signature = Signature::python(&def);
    assert_eq!(signature.name(), "lookup_order_status");
    assert_eq!(
        signature.untyped(),
        [
            "/properties/tags/items",
            "/properties/extra/additionalProperties",
            "output"
        ]
    );
    let text = signature.text();
    assert!(
        text.contains(
            "def lookup_order_status(*, class_: Literal[\"a\", \"b\"] | None, tags: list[Any] | None = None, extra: dict[str, Any] | None = None, from_: int | None = None) -> Any:"
        ),
        "{text}"
    );
    assert!(text.contains("from_: A \\\"\\\"\\\" quote"), "{text}");
}

#[test]
fn every_bfcl_function_is_typed_wherever_its_schema_gives_a_shape() {
    let corpus = corpus();
    assert_eq!(corpus.len(), 1_278);
    let mut untyped = 0;
    let mut typed_functions = 0;
    for def in &corpus {
        let signature = Signature::python(def);
        let mut inputs_typed = true;
        for pointer in signature.untyped() {
            if pointer == "output" {
                continue;
            }
            inputs_typed = false;
            untyped += 1;
            // `/properties/a/items`: the node whose shape is missing; for a map's values, the
            // map itself.
            let at = pointer
                .strip_suffix("/additionalProperties")
                .unwrap_or(pointer);
            let schema = node(def.input_schema(), at);
            let explained = match schema {
                Some(schema) if pointer.ends_with("/additionalProperties") => {
                    schema
                        .get("properties")
                        .is_none_or(|p| p.as_object().is_some_and(serde_json::Map::is_empty))
                        && !schema
                            .get("additionalProperties")
                            .is_some_and(Value::is_object)
                }
                Some(schema) => shapeless(schema),
                // `items` missing altogether.
                None => pointer.ends_with("/items"),
            };
            assert!(
                explained,
                "`{}`: `Any` at {pointer}, where the schema has a shape: {}",
                def.name(),
                signature.text()
            );
        }
        typed_functions += usize::from(inputs_typed);
    }
    println!(
        "{typed_functions} of {} BFCL functions have fully typed parameters; {untyped} values `Any`, each without a shape in its schema",
        corpus.len()
    );
}

#[test]
fn every_signature_is_python_that_runs() {
    let Some(python) = std::env::var_os("TOOLSMITH_ORACLES") else {
        eprintln!("TOOLSMITH_ORACLES is not set: skipping (scripts/test.sh sets it)");
        return;
    };
    let mut module = String::new();
    let mut names = Vec::new();
    let examples = [
        tools::SearchWeb.definition().clone(),
        tools::Add.definition().clone(),
        tools::CreateEvent.definition().clone(),
    ];
    for def in examples.iter().chain(corpus().iter()) {
        let signature = Signature::python(def);
        // Each in a namespace of its own, as a program that is offered one set of tools.
        let source = format!(
            "{}{}\n    ...\n",
            toolsmith::code::PRELUDE,
            signature.text()
        );
        // JSON's string escapes are Python's.
        module.push_str(&format!(
            "exec(compile({}, {}, 'exec'), {{}})\n",
            serde_json::to_string(&source).expect("text"),
            serde_json::to_string(def.name()).expect("text"),
        ));
        names.push(signature.name().to_owned());
    }
    module.push_str("print('ok')\n");
    let path = std::env::temp_dir().join(format!("toolsmith-signatures-{}.py", std::process::id()));
    std::fs::write(&path, module).expect("the module");
    let output = std::process::Command::new(python)
        .arg(&path)
        .output()
        .expect("python runs");
    let _ = std::fs::remove_file(&path);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "ok");
    assert_eq!(names.len(), 1_281);
}

#[test]
fn definitions_that_name_each_other_many_times_are_written_once() {
    // Each definition names the next twice: 2^30 paths, 31 definitions.
    let mut defs = serde_json::Map::new();
    for i in 0..30 {
        let next = format!("#/$defs/d{}", i + 1);
        defs.insert(
            format!("d{i}"),
            json!({"anyOf": [{"$ref": next}, {"type": "array", "items": {"$ref": next}}]}),
        );
    }
    defs.insert("d30".into(), json!({"type": "string"}));
    let def = ToolDefinition::new(
        "deep",
        "Takes a deep value.",
        json!({"type": "object", "properties": {"v": {"$ref": "#/$defs/d0"}},
            "required": ["v"], "$defs": defs}),
    );
    let signature = Signature::python(&def);
    assert!(
        signature.text().len() < 64 * 1024,
        "{}",
        signature.text().len()
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 256, ..Default::default() })]

    /// Whatever schema a tool declares (a remote server's listing, say), its signature is
    /// written without a panic, and within a bound of the schema's size.
    #[test]
    fn any_schema_gets_a_signature(schema in schema_strategy()) {
        let text = schema.to_string();
        let def = ToolDefinition::new("t", "Does t.", json!({"type": "object",
            "properties": {"a": schema.clone()}, "$defs": {"x": schema}}))
            .with_output_schema(serde_json::from_str(&text).unwrap());
        let signature = Signature::python(&def);
        proptest::prop_assert!(signature.text().len() < 64 * (text.len() + 64) * 4);
    }
}

fn schema_strategy() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    let leaf = prop_oneof![
        Just(json!({"type": "string"})),
        Just(json!({"type": ["integer", "null"]})),
        Just(json!({"$ref": "#/$defs/x"})),
        Just(json!({"$ref": "#/$defs/missing"})),
        Just(json!({"enum": ["a", 1, null, true]})),
        Just(json!({"type": "unknown"})),
        Just(json!(true)),
        Just(json!(false)),
        Just(json!(null)),
        ".{0,12}".prop_map(|k| json!({"const": k})),
    ];
    leaf.prop_recursive(6, 64, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(|v| json!({"anyOf": v})),
            proptest::collection::vec(inner.clone(), 0..4)
                .prop_map(|v| json!({"type": "array", "prefixItems": v})),
            inner
                .clone()
                .prop_map(|v| json!({"type": "array", "items": v})),
            inner
                .clone()
                .prop_map(|v| json!({"type": "object", "additionalProperties": v})),
            proptest::collection::btree_map("[a-z \"\\\\.-]{0,6}", inner, 0..4).prop_map(|m| {
                let names: Vec<&String> = m.keys().collect();
                json!({"type": "object", "properties": m, "required": names})
            }),
        ]
    })
}

//! The tool registry: examples, the files per tool, the drift check, change classification
//! and versions, tool-selection evals and golden call sequences.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolsmith::registry::diff::{self, bump, check_version};
use toolsmith::registry::eval::{self, EvalCase, Evaluator, Recorder};
use toolsmith::registry::{
    ChangeKind, Mode, Registry, ToolRecord, Verdict, assert_registry, assert_registry_with, check,
};
use toolsmith::{Dialect, ToolContext, ToolError, Toolbox, tool};

/// Where a table is.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Seating {
    Inside,
    Outside,
}

/// A booking, as confirmed.
#[derive(Serialize, JsonSchema)]
struct Booking {
    /// The booking's id.
    id: String,
    /// How many guests.
    guests: u8,
}

/// Books a table for a party. Writes data. Not for takeaway orders.
#[tool(
    effect = "write",
    idempotent,
    version = "1.2.0",
    example = r#"{"guests": 2, "name": "Ada Lovelace"}"#,
    example = r#"{"guests": 4, "name": "Grace Hopper", "seating": "outside"}"#,
    invalid_example(arguments = r#"{"guests": 0, "name": "Ada"}"#, error = "/guests")
)]
fn book_table(
    /// How many guests.
    #[arg(range(min = 1, max = 12))]
    guests: u8,
    /// The name the table is under.
    #[arg(length(min = 1, max = 60), pattern = "^[A-Za-z ]+$")]
    name: String,
    /// Inside or outside.
    seating: Option<Seating>,
    /// Anything the restaurant should know.
    #[arg(length(max = 200))]
    notes: Option<String>,
) -> Booking {
    let _ = (name, seating, notes);
    Booking {
        id: "b-1".to_owned(),
        guests,
    }
}

/// Finds a customer by name. Read-only. Not for invoices.
#[tool(effect = "read", version = "0.3.1", allow(unbounded_list))]
fn search_customer(
    /// Part of the customer's name.
    #[arg(length(min = 1, max = 80))]
    name: String,
) -> Vec<String> {
    vec![name]
}

/// Lists a customer's invoices. Read-only. Not for payments.
#[tool(effect = "read", version = "2.0.0")]
fn search_invoices(
    /// The customer's id, as `search_customer` gives it.
    #[arg(length(min = 1, max = 40), pattern = "^cus_[a-z0-9]+$")]
    customer_id: String,
    /// At most this many.
    #[arg(range(min = 1, max = 50))]
    limit: u8,
) -> Result<Vec<String>, ToolError> {
    Ok(vec![customer_id; usize::from(limit.min(1))])
}

fn toolbox() -> Toolbox {
    Toolbox::new()
        .with(BookTable)
        .with(SearchCustomer)
        .with(SearchInvoices)
}

/// A folder of its own under the system's temporary directory, removed first.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir =
        std::env::temp_dir().join(format!("toolsmith-registry-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn fixtures() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

// ---------------------------------------------------------------------------------------------
// Examples

#[test]
fn declared_examples_are_checked_and_exported() {
    let toolbox = toolbox();
    let def = toolbox.get("book_table").unwrap().definition();
    assert_eq!(def.examples().len(), 3);
    assert!(
        toolbox.lint().iter().all(|f| f.lint != "invalid_example"),
        "{:#?}",
        toolbox.lint()
    );

    // Anthropic takes the valid ones as `input_examples`; MCP as the schema's `examples`.
    let anthropic = def.export(Dialect::Anthropic { strict: false }).unwrap();
    assert_eq!(
        anthropic["input_examples"],
        json!([{"guests": 2, "name": "Ada Lovelace"},
               {"guests": 4, "name": "Grace Hopper", "seating": "outside"}])
    );
    let mcp = def.export(Dialect::Mcp).unwrap();
    assert_eq!(mcp["inputSchema"]["examples"], anthropic["input_examples"]);
    // No other dialect has a place for them.
    let openai = def.export(Dialect::OpenAiChat { strict: true }).unwrap();
    assert!(!openai.to_string().contains("Grace Hopper"));
}

#[test]
fn an_example_that_contradicts_the_schema_is_a_lint_error() {
    let schema = json!({"type": "object", "properties": {"days": {"type": "integer",
        "minimum": 1, "maximum": 7}}, "required": ["days"], "additionalProperties": false});
    let def = toolsmith::ToolDefinition::new(
        "forecast",
        "The weather for the next days. Read-only. Not for history.",
        schema,
    )
    .with_effect(toolsmith::Effect::Read)
    .with_example(toolsmith::ToolExample::valid(json!({"days": 9})))
    .with_example(toolsmith::ToolExample::invalid(json!({"days": 3}), "/days"))
    .with_example(toolsmith::ToolExample::invalid(
        json!({"days": 3, "x": 1}),
        "/days",
    ))
    .with_example(toolsmith::ToolExample::valid(json!({"days": 2})));
    let findings: Vec<_> = Toolbox::new()
        .with(Defined(def))
        .lint()
        .into_iter()
        .filter(|f| f.lint == "invalid_example")
        .collect();
    assert_eq!(findings.len(), 3, "{findings:#?}");
    assert_eq!(findings[0].level, toolsmith::lint::LintLevel::Deny);
    assert!(
        findings[0].message.contains("example 1"),
        "{}",
        findings[0].message
    );
    assert!(
        findings[1].message.contains("is accepted"),
        "{}",
        findings[1].message
    );
    assert!(
        findings[2].message.contains("not at `/days`") || findings[2].message.contains("/x"),
        "{}",
        findings[2].message
    );
}

#[path = "support/defined.rs"]
mod defined;
use defined::Defined;

// ---------------------------------------------------------------------------------------------
// The files

#[test]
fn the_registry_is_written_the_same_every_time_and_reads_back() {
    let registry = Registry::of(&toolbox());
    let (a, b) = (scratch("write-a"), scratch("write-b"));
    registry.write(&a).unwrap();
    registry.write(&b).unwrap();
    let files = registry.files();
    assert_eq!(
        files.keys().map(String::as_str).collect::<Vec<_>>(),
        [
            "book_table/examples.jsonl",
            "book_table/input.schema.json",
            "book_table/output.schema.json",
            "book_table/tool.json",
            "search_customer/input.schema.json",
            "search_customer/output.schema.json",
            "search_customer/tool.json",
            "search_invoices/input.schema.json",
            "search_invoices/output.schema.json",
            "search_invoices/tool.json",
        ]
    );
    for (file, text) in &files {
        assert_eq!(&std::fs::read_to_string(a.join(file)).unwrap(), text);
        assert_eq!(&std::fs::read_to_string(b.join(file)).unwrap(), text);
        assert!(text.ends_with('\n'));
        assert!(!text.contains("time"), "no timestamps: {file}");
    }
    // Keys sorted at every level.
    let tool = &files["book_table/tool.json"];
    assert!(tool.find("\"annotations\"") < tool.find("\"description\""));
    assert!(tool.find("\"policy\"") < tool.find("\"risk\""));
    let meta: Value = serde_json::from_str(tool).unwrap();
    assert_eq!(meta["risk"]["effect"], "write");
    assert_eq!(meta["version"], "1.2.0");
    assert_eq!(meta["policy"]["idempotent"], true);
    assert_eq!(Registry::read(&a).unwrap(), registry);

    // A tool that is gone loses its folder on the next write.
    let fewer = Registry::of(&Toolbox::new().with(SearchCustomer));
    fewer.write(&a).unwrap();
    assert!(!a.join("book_table").exists());
    assert_eq!(Registry::read(&a).unwrap(), fewer);
}

#[test]
fn the_committed_registry_matches_the_tools() {
    assert_registry(&toolbox(), fixtures().join("registry"));
}

#[test]
fn a_change_fails_the_check_until_the_version_rises_and_the_registry_is_rewritten() {
    let dir = scratch("drift");
    Registry::of(&toolbox()).write(&dir).unwrap();
    assert!(check(&toolbox(), &dir).unwrap().is_clean());

    // The committed schema allowed names of 100 characters; the code allows 60.
    let input = dir.join("book_table/input.schema.json");
    let text = std::fs::read_to_string(&input).unwrap();
    std::fs::write(
        &input,
        text.replace("\"maxLength\": 60", "\"maxLength\": 100"),
    )
    .unwrap();
    let report = check(&toolbox(), &dir).unwrap();
    assert_eq!(report.changes.len(), 1, "{report}");
    let change = &report.changes[0];
    assert_eq!(
        (change.kind, change.verdict),
        (ChangeKind::BoundTightened, Verdict::Major)
    );
    assert_eq!(change.path, "input:/properties/name");
    assert_eq!(report.version_problems.len(), 1, "{report}");
    let shown = report.to_string();
    assert!(shown.contains("tool `book_table`:"), "{shown}");
    assert!(shown.contains("maxLength 100 → 60"), "{shown}");
    assert!(
        shown.contains("needs a major release, but the version went 1.2.0 → 1.2.0"),
        "{shown}"
    );

    // Neither mode lets it through while the version says otherwise.
    for mode in [Mode::Check, Mode::Overwrite] {
        let failed = std::panic::catch_unwind(|| assert_registry_with(&toolbox(), &dir, mode));
        let message = *failed.unwrap_err().downcast::<String>().unwrap();
        assert!(message.contains("raise the versions"), "{message}");
    }

    // Committed as 0.9.0, the tool's 1.2.0 is a major release: overwriting writes it.
    let meta = dir.join("book_table/tool.json");
    let text = std::fs::read_to_string(&meta).unwrap();
    std::fs::write(&meta, text.replace("1.2.0", "0.9.0")).unwrap();
    let failed = std::panic::catch_unwind(|| assert_registry_with(&toolbox(), &dir, Mode::Check));
    let message = *failed.unwrap_err().downcast::<String>().unwrap();
    assert!(
        message.contains("TOOLSMITH_REGISTRY=overwrite"),
        "{message}"
    );
    assert_registry_with(&toolbox(), &dir, Mode::Overwrite);
    assert!(check(&toolbox(), &dir).unwrap().is_clean());

    // A file edited by hand without changing its content is reported too.
    let text = std::fs::read_to_string(&meta).unwrap();
    std::fs::write(&meta, text.replace("  ", "    ")).unwrap();
    let report = check(&toolbox(), &dir).unwrap();
    assert_eq!(report.unformatted, ["book_table/tool.json"], "{report}");
}

// ---------------------------------------------------------------------------------------------
// Change classification

type Edit = fn(&mut ToolRecord);

fn none(_: &mut ToolRecord) {}

fn input<'r>(record: &'r mut ToolRecord, pointer: &str) -> &'r mut Value {
    record.input_schema.pointer_mut(pointer).unwrap()
}

fn output<'r>(record: &'r mut ToolRecord, pointer: &str) -> &'r mut Value {
    record
        .output_schema
        .as_mut()
        .unwrap()
        .pointer_mut(pointer)
        .unwrap()
}

fn remove(value: &mut Value, key: &str) {
    value.as_object_mut().unwrap().shift_remove(key);
}

fn set(value: &mut Value, key: &str, to: Value) {
    value.as_object_mut().unwrap().insert(key.to_owned(), to);
}

fn required(record: &mut ToolRecord, name: &str, on: bool) {
    let list = record.input_schema["required"].as_array_mut().unwrap();
    list.retain(|v| v != name);
    if on {
        list.push(json!(name));
    }
}

/// Each kind of change to `book_table`'s record: the old record is the tool's with the first
/// edit, the new one the tool's with the second; and the verdict the change must get.
const CHANGES: &[(&str, Edit, Edit, ChangeKind, Verdict)] = &[
    (
        "parameter removed",
        none,
        |r| remove(input(r, "/properties"), "notes"),
        ChangeKind::PropertyRemoved,
        Verdict::Major,
    ),
    (
        "required parameter added",
        none,
        |r| {
            set(input(r, "/properties"), "date", json!({"type": "string"}));
            required(r, "date", true);
        },
        ChangeKind::RequiredPropertyAdded,
        Verdict::Major,
    ),
    (
        "optional parameter added",
        none,
        |r| set(input(r, "/properties"), "date", json!({"type": "string"})),
        ChangeKind::PropertyAdded,
        Verdict::Minor,
    ),
    (
        "optional parameter made required",
        none,
        |r| required(r, "notes", true),
        ChangeKind::BecameRequired,
        Verdict::Major,
    ),
    (
        "required parameter made optional",
        none,
        |r| required(r, "name", false),
        ChangeKind::BecameOptional,
        Verdict::Minor,
    ),
    (
        "integer widened to number",
        none,
        |r| set(input(r, "/properties/guests"), "type", json!("number")),
        ChangeKind::TypeWidened,
        Verdict::Minor,
    ),
    (
        "number narrowed to integer",
        |r| set(input(r, "/properties/guests"), "type", json!("number")),
        none,
        ChangeKind::TypeNarrowed,
        Verdict::Major,
    ),
    (
        "integer changed to string",
        none,
        |r| set(input(r, "/properties/guests"), "type", json!("string")),
        ChangeKind::TypeChanged,
        Verdict::Major,
    ),
    (
        "null refused",
        none,
        |r| set(input(r, "/properties/notes"), "type", json!("string")),
        ChangeKind::NullRefused,
        Verdict::Major,
    ),
    (
        "null accepted",
        none,
        |r| {
            set(
                input(r, "/properties/name"),
                "type",
                json!(["string", "null"]),
            )
        },
        ChangeKind::NullAllowed,
        Verdict::Minor,
    ),
    (
        "enum value removed",
        none,
        |r| set(input(r, "/$defs/Seating"), "enum", json!(["inside"])),
        ChangeKind::EnumNarrowed,
        Verdict::Major,
    ),
    (
        "enum value added",
        none,
        |r| {
            set(
                input(r, "/$defs/Seating"),
                "enum",
                json!(["inside", "outside", "bar"]),
            )
        },
        ChangeKind::EnumWidened,
        Verdict::Minor,
    ),
    (
        "minimum raised",
        none,
        |r| set(input(r, "/properties/guests"), "minimum", json!(2)),
        ChangeKind::BoundTightened,
        Verdict::Major,
    ),
    (
        "minimum lowered",
        none,
        |r| set(input(r, "/properties/guests"), "minimum", json!(0)),
        ChangeKind::BoundLoosened,
        Verdict::Minor,
    ),
    (
        "maximum lowered",
        none,
        |r| set(input(r, "/properties/guests"), "maximum", json!(8)),
        ChangeKind::BoundTightened,
        Verdict::Major,
    ),
    (
        "maximum raised",
        none,
        |r| set(input(r, "/properties/guests"), "maximum", json!(20)),
        ChangeKind::BoundLoosened,
        Verdict::Minor,
    ),
    (
        "exclusive maximum added",
        none,
        |r| {
            set(
                input(r, "/properties/guests"),
                "exclusiveMaximum",
                json!(10),
            )
        },
        ChangeKind::BoundTightened,
        Verdict::Major,
    ),
    (
        "maximum length lowered",
        none,
        |r| set(input(r, "/properties/name"), "maxLength", json!(30)),
        ChangeKind::BoundTightened,
        Verdict::Major,
    ),
    (
        "maximum length raised",
        none,
        |r| set(input(r, "/properties/name"), "maxLength", json!(90)),
        ChangeKind::BoundLoosened,
        Verdict::Minor,
    ),
    (
        "minimum length raised",
        none,
        |r| set(input(r, "/properties/name"), "minLength", json!(3)),
        ChangeKind::BoundTightened,
        Verdict::Major,
    ),
    (
        "maximum length removed",
        none,
        |r| remove(input(r, "/properties/notes"), "maxLength"),
        ChangeKind::BoundLoosened,
        Verdict::Minor,
    ),
    (
        "pattern added",
        none,
        |r| set(input(r, "/properties/notes"), "pattern", json!("^[a-z ]*$")),
        ChangeKind::PatternAdded,
        Verdict::Major,
    ),
    (
        "pattern removed",
        none,
        |r| remove(input(r, "/properties/name"), "pattern"),
        ChangeKind::PatternRemoved,
        Verdict::Minor,
    ),
    (
        "pattern changed",
        none,
        |r| {
            set(
                input(r, "/properties/name"),
                "pattern",
                json!("^[A-Za-z .]+$"),
            )
        },
        ChangeKind::PatternChanged,
        Verdict::Major,
    ),
    (
        "format added",
        none,
        |r| set(input(r, "/properties/name"), "format", json!("email")),
        ChangeKind::FormatTightened,
        Verdict::Major,
    ),
    (
        "format removed",
        none,
        |r| remove(input(r, "/properties/guests"), "format"),
        ChangeKind::FormatRemoved,
        Verdict::Minor,
    ),
    (
        "constant changed",
        |r| set(input(r, "/properties/name"), "const", json!("Ada")),
        |r| set(input(r, "/properties/name"), "const", json!("Bob")),
        ChangeKind::ConstChanged,
        Verdict::Major,
    ),
    (
        "default changed",
        none,
        |r| set(input(r, "/properties/notes"), "default", json!("none")),
        ChangeKind::DefaultChanged,
        Verdict::Minor,
    ),
    (
        "parameter description reworded",
        none,
        |r| {
            set(
                input(r, "/properties/guests"),
                "description",
                json!("Party size."),
            )
        },
        ChangeKind::DocumentationChanged,
        Verdict::Patch,
    ),
    (
        "unknown keys accepted",
        none,
        |r| set(input(r, ""), "additionalProperties", json!(true)),
        ChangeKind::OpenedObject,
        Verdict::Minor,
    ),
    (
        "unknown keys refused",
        |r| set(input(r, ""), "additionalProperties", json!(true)),
        none,
        ChangeKind::ClosedObject,
        Verdict::Major,
    ),
    (
        "tool description reworded",
        none,
        |r| r.description = "Reserves a table. Writes data. Not for takeaway.".into(),
        ChangeKind::DescriptionChanged,
        Verdict::Patch,
    ),
    (
        "title added",
        none,
        |r| r.title = Some("Book a table".into()),
        ChangeKind::TitleChanged,
        Verdict::Patch,
    ),
    (
        "effect changed",
        none,
        |r| r.risk.effect = Some("destructive".into()),
        ChangeKind::EffectChanged,
        Verdict::Major,
    ),
    (
        "approval required",
        none,
        |r| r.risk.requires_approval = true,
        ChangeKind::ApprovalChanged,
        Verdict::Major,
    ),
    (
        "approval dropped",
        |r| r.risk.requires_approval = true,
        none,
        ChangeKind::ApprovalChanged,
        Verdict::Major,
    ),
    (
        "scope added",
        none,
        |r| r.risk.scopes.push("tables:write".into()),
        ChangeKind::ScopeAdded,
        Verdict::Major,
    ),
    (
        "scope removed",
        |r| r.risk.scopes.push("tables:write".into()),
        none,
        ChangeKind::ScopeRemoved,
        Verdict::Minor,
    ),
    (
        "data classification changed",
        none,
        |r| r.risk.data_classification = Some("personal".into()),
        ChangeKind::DataClassificationChanged,
        Verdict::Major,
    ),
    (
        "reaches outside systems",
        none,
        |r| r.risk.open_world = true,
        ChangeKind::OpenWorldChanged,
        Verdict::Major,
    ),
    (
        "no longer idempotent",
        none,
        |r| r.policy.idempotent = false,
        ChangeKind::IdempotencyChanged,
        Verdict::Major,
    ),
    (
        "now idempotent",
        |r| r.policy.idempotent = false,
        none,
        ChangeKind::IdempotencyChanged,
        Verdict::Minor,
    ),
    (
        "read-only hint changed",
        none,
        |r| {
            r.annotations.insert("readOnlyHint".into(), json!(true));
        },
        ChangeKind::AnnotationChanged,
        Verdict::Minor,
    ),
    (
        "timeout changed",
        none,
        |r| r.policy.timeout_ms = Some(5_000),
        ChangeKind::PolicyChanged,
        Verdict::Patch,
    ),
    (
        "examples changed",
        none,
        |r| {
            r.examples.pop();
        },
        ChangeKind::ExamplesChanged,
        Verdict::Patch,
    ),
    (
        "output field removed",
        none,
        |r| remove(output(r, "/properties"), "id"),
        ChangeKind::PropertyRemoved,
        Verdict::Major,
    ),
    (
        "output field added",
        none,
        |r| {
            set(
                output(r, "/properties"),
                "table",
                json!({"type": "integer"}),
            )
        },
        ChangeKind::PropertyAdded,
        Verdict::Minor,
    ),
    (
        "output field no longer always there",
        none,
        |r| set(output(r, ""), "required", json!(["id"])),
        ChangeKind::BecameOptional,
        Verdict::Major,
    ),
    (
        "output range widened",
        none,
        |r| set(output(r, "/properties/guests"), "maximum", json!(1000)),
        ChangeKind::BoundLoosened,
        Verdict::Major,
    ),
    (
        "output range narrowed",
        none,
        |r| set(output(r, "/properties/guests"), "maximum", json!(12)),
        ChangeKind::BoundTightened,
        Verdict::Minor,
    ),
    (
        "output type changed",
        none,
        |r| set(output(r, "/properties/id"), "type", json!("integer")),
        ChangeKind::TypeChanged,
        Verdict::Major,
    ),
    (
        "output schema dropped",
        none,
        |r| r.output_schema = None,
        ChangeKind::OutputSchemaRemoved,
        Verdict::Major,
    ),
    (
        "output schema declared",
        |r| r.output_schema = None,
        none,
        ChangeKind::OutputSchemaAdded,
        Verdict::Minor,
    ),
];

#[test]
fn every_kind_of_change_gets_its_verdict() {
    let base = Registry::of(&toolbox());
    let mut failures = Vec::new();
    for (what, before, after, kind, verdict) in CHANGES {
        let (mut old, mut new) = (base.clone(), base.clone());
        before(old.tools.get_mut("book_table").unwrap());
        after(new.tools.get_mut("book_table").unwrap());
        let changes = diff::diff(&old, &new);
        let found = changes
            .iter()
            .any(|c| c.kind == *kind && c.verdict == *verdict);
        if !found || diff::required_bump(&changes) != Some(*verdict) {
            failures.push(format!(
                "{what}: expected {kind:?} {verdict:?}, got {changes:#?}"
            ));
        }
    }
    assert!(CHANGES.len() >= 30);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn tools_added_and_removed() {
    let all = Registry::of(&toolbox());
    let fewer = Registry::of(&Toolbox::new().with(BookTable));
    let removed = diff::diff(&all, &fewer);
    assert_eq!(removed.len(), 2);
    assert!(
        removed
            .iter()
            .all(|c| c.kind == ChangeKind::ToolRemoved && c.verdict == Verdict::Major)
    );
    let added = diff::diff(&fewer, &all);
    assert!(
        added
            .iter()
            .all(|c| c.kind == ChangeKind::ToolAdded && c.verdict == Verdict::Minor)
    );
    assert!(diff::diff(&all, &all).is_empty());
}

fn one(record: ToolRecord) -> Registry {
    let mut registry = Registry::default();
    registry.tools.insert(record.name.clone(), record);
    registry
}

#[test]
fn versions_must_rise_as_far_as_the_changes_require() {
    assert_eq!(bump("1.2.0", "2.0.0"), Some(Verdict::Major));
    assert_eq!(bump("1.2.0", "1.3.0"), Some(Verdict::Minor));
    assert_eq!(bump("1.2.0", "1.2.1"), Some(Verdict::Patch));
    assert_eq!(bump("0.3.1", "0.4.0"), Some(Verdict::Major));
    assert_eq!(bump("0.3.1", "0.3.2"), Some(Verdict::Minor));
    assert_eq!(bump("0.0.3", "0.0.4"), Some(Verdict::Major));
    assert_eq!(bump("1.2.0", "1.1.9"), None);
    assert_eq!(bump("1.2.0", "one"), None);

    let base = Registry::of(&toolbox()).tools["book_table"].clone();
    let verdict_of = |edit: Edit, version: Option<&str>| {
        let (old, mut new) = (base.clone(), base.clone());
        edit(&mut new);
        new.version = version.map(str::to_owned);
        let changes = diff::diff(&one(old.clone()), &one(new.clone()));
        check_version(&old, &new, &changes.iter().collect::<Vec<_>>())
    };
    let breaking: Edit = |r| r.risk.requires_approval = true;
    let minor: Edit = |r| set(input(r, "/properties"), "date", json!({"type": "string"}));
    let patch: Edit = |r| r.description = "Reserves a table. Writes data. Not for takeaway.".into();
    assert!(verdict_of(breaking, Some("2.0.0")).is_ok());
    assert!(
        verdict_of(breaking, Some("1.3.0"))
            .unwrap_err()
            .contains("needs a major release")
    );
    assert!(verdict_of(minor, Some("1.3.0")).is_ok());
    assert!(
        verdict_of(minor, Some("1.2.1"))
            .unwrap_err()
            .contains("needs a minor release")
    );
    assert!(verdict_of(patch, Some("1.2.1")).is_ok());
    assert!(verdict_of(patch, Some("1.2.0")).is_err());
    assert!(verdict_of(none, Some("1.2.0")).is_ok());
    assert!(
        verdict_of(minor, None)
            .unwrap_err()
            .contains("declares no version")
    );
}

// ---------------------------------------------------------------------------------------------
// Evaluations

#[test]
fn recorded_answers_of_every_dialect_are_scored_per_tool() {
    let cases = EvalCase::parse_lines(
        &std::fs::read_to_string(fixtures().join("evals/cases.jsonl")).unwrap(),
    )
    .unwrap();
    assert_eq!(cases.len(), 5);
    let recorded = std::fs::read_to_string(fixtures().join("evals/recorded.jsonl")).unwrap();
    let toolbox = toolbox();
    let report = Evaluator::new(&toolbox).run(&cases, &recorded).unwrap();
    assert_eq!(report.totals(), (5, 2), "{report}");
    let book = report.tools["book_table"];
    assert_eq!(
        (
            book.cases,
            book.right_tool,
            book.valid_arguments,
            book.clean,
            book.passed
        ),
        (2, 2, 1, 1, 0)
    );
    let search = report.tools["search_customer"];
    assert_eq!((search.cases, search.passed), (2, 1));
    assert_eq!(report.tools["search_invoices"].passed, 1);
    let shown = report.to_string();
    assert!(
        shown.contains("| book_table | 2 | 2 | 1 | 1 | 0 |"),
        "{shown}"
    );
    assert!(
        shown.contains("book_for_two: sent the forbidden argument `seating`"),
        "{shown}"
    );
    assert!(
        shown.contains("book_for_a_crowd: invalid arguments"),
        "{shown}"
    );
    assert!(shown.contains("find_bob: no recorded answer"), "{shown}");
}

#[test]
fn a_wrong_first_tool_and_a_guessed_argument_fail_their_case() {
    let cases = EvalCase::parse_lines(
        r#"{"id": "c", "request": "Acme's invoices", "tools": ["search_customer", "search_invoices"], "expected": {"first_tool": "search_customer", "forbidden_arguments": ["customer_id=cus_acme"]}}"#,
    )
    .unwrap();
    let response = json!({"content": [{"type": "tool_use", "id": "t", "name": "search_invoices",
        "input": {"customer_id": "cus_acme", "limit": 5}}]});
    let toolbox = toolbox();
    let score =
        Evaluator::new(&toolbox).score(&cases[0], Dialect::Anthropic { strict: false }, &response);
    assert!(!score.passed());
    assert!(!score.right_tool);
    assert!(score.valid_arguments);
    assert_eq!(score.forbidden, ["customer_id=cus_acme"]);
    assert_eq!(score.called_tool.as_deref(), Some("search_invoices"));

    // No tool called, or a response of another shape, fail with the reason.
    let text_only = json!({"content": [{"type": "text", "text": "Which customer?"}]});
    let score =
        Evaluator::new(&toolbox).score(&cases[0], Dialect::Anthropic { strict: false }, &text_only);
    assert_eq!(score.problems, ["the model called no tool"]);
    let score = Evaluator::new(&toolbox).score(&cases[0], Dialect::Gemini, &json!([1]));
    assert!(
        score.problems[0].contains("does not read as gemini"),
        "{:?}",
        score.problems
    );

    // Malformed files say where.
    let err = EvalCase::parse_lines("{\"id\": 1}").unwrap_err();
    assert_eq!(err.line, 1);
    let twice = "{\"id\": \"a\", \"request\": \"r\", \"expected\": {\"first_tool\": \"t\"}}\n";
    assert!(
        EvalCase::parse_lines(&twice.repeat(2))
            .unwrap_err()
            .message
            .contains("used twice")
    );
}

#[tokio::test]
async fn a_runs_calls_are_compared_with_its_golden_sequence() {
    let recorder = Recorder::new();
    let toolbox = toolbox().with_audit(recorder.clone());
    let ctx = ToolContext::new();
    toolbox
        .call("search_customer", json!({"name": "Acme"}), &ctx)
        .await;
    toolbox
        .call(
            "search_invoices",
            json!({"customer_id": "cus_1", "limit": 3}),
            &ctx,
        )
        .await;
    let golden = recorder.calls();
    assert_eq!(golden.len(), 2);
    let lines = eval::to_lines(&golden);
    assert_eq!(eval::from_lines(&lines).unwrap(), golden);
    assert!(eval::compare(&golden, &golden).is_empty());

    let later = Recorder::new();
    let toolbox = self::toolbox().with_audit(later.clone());
    toolbox
        .call(
            "search_invoices",
            json!({"customer_id": "cus_1", "limit": 3}),
            &ctx,
        )
        .await;
    toolbox
        .call("search_customer", json!({"name": "Acme"}), &ctx)
        .await;
    toolbox
        .call("search_customer", json!({"name": "Bob"}), &ctx)
        .await;
    let differences = eval::compare(&golden, &later.calls());
    assert_eq!(
        differences,
        [
            "call 1: `search_invoices` instead of `search_customer`",
            "call 2: `search_customer` instead of `search_invoices`",
            "call 3: `search_customer` was not in the golden run",
        ]
    );
}

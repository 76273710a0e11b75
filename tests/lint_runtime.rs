//! `Toolbox::lint` on resolved schemas: what tokens cannot show, with the compile-time lints'
//! names, messages and levels (crate config, `#[tool(allow)]`, `#[arg(allow)]`).

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use toolsmith::lint::LintLevel;
use toolsmith::{Dialect, Effect, Tool, ToolDefinition, Toolbox, tool};

#[path = "support/defined.rs"]
mod defined;
use defined::Defined;

/// A note's filter.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Filter {
    /// Free text; nothing bounds it.
    pub text: String,
    /// Where to send the results.
    pub webhook_url: Option<String>,
    /// Whether the caller is an administrator.
    pub is_admin: bool,
}

/// Searches notes. Read-only. Not for shared drives.
#[tool(effect = "read")]
fn search_notes(
    /// The filter.
    filter: Filter,
) -> usize {
    filter.text.len() + usize::from(filter.is_admin) + filter.webhook_url.map_or(0, |u| u.len())
}

#[doc = include_str!("fixtures/injected_description.md")]
#[tool(effect = "read")]
fn get_notes(
    /// The notebook.
    #[arg(length(max = 40))]
    notebook: String,
) -> usize {
    notebook.len()
}

/// Counts words. Pure, no side effects. Not for binary files.
#[tool(effect = "read")]
fn count_words(
    /// Counts per word.
    counts: HashMap<String, u32>,
) -> usize {
    counts.len()
}

#[test]
fn nested_types_are_linted_with_the_same_names() {
    let findings = Toolbox::new().with(SearchNotes).lint();
    let found: Vec<(&str, &str, LintLevel)> = findings
        .iter()
        .map(|f| (f.lint, f.path.as_str(), f.level))
        .collect();
    assert_eq!(
        found,
        [
            (
                "unbounded_string",
                "/$defs/Filter/properties/text",
                LintLevel::Warn
            ),
            (
                "unbounded_string",
                "/$defs/Filter/properties/webhook_url",
                LintLevel::Warn
            ),
            (
                "unrestricted_destination",
                "/$defs/Filter/properties/webhook_url",
                LintLevel::Warn
            ),
            (
                "self_declared_permission",
                "/$defs/Filter/properties/is_admin",
                LintLevel::Deny
            ),
        ],
        "{findings:#?}"
    );
    let text = findings[3].to_string();
    assert!(text.starts_with("deny: tool `search_notes` at /$defs/Filter/properties/is_admin: parameter `is_admin` lets the model declare its own rights"), "{text}");
    assert!(
        text.ends_with("allow it with `#[tool(allow(self_declared_permission))]`"),
        "{text}"
    );
}

#[test]
fn include_str_descriptions_are_linted_at_run_time() {
    let findings = Toolbox::new().with(GetNotes).lint();
    let lints: Vec<&str> = findings.iter().map(|f| f.lint).collect();
    assert_eq!(lints, ["description_injection"], "{findings:#?}");
    assert!(findings[0].message.contains("ignore previous"));
}

#[test]
fn crate_config_sets_levels_for_every_tool() {
    // This package's Cargo.toml says `open_map = "allow"`: the tool compiled without a warning
    // (CI builds tests with `-D warnings`), and the runtime lint agrees.
    let def = CountWords.definition();
    assert_eq!(def.lint_level("open_map", None), LintLevel::Allow);
    let findings = Toolbox::new().with(CountWords).lint();
    assert!(
        findings.iter().all(|f| f.lint != "open_map"),
        "{findings:#?}"
    );
    // What the providers cannot express is a warning of its own.
    let incompatible: Vec<&str> = findings
        .iter()
        .filter(|f| f.lint == "provider_incompatible")
        .map(|f| f.message.as_str())
        .collect();
    assert_eq!(incompatible.len(), 2, "{findings:#?}");
    assert!(
        incompatible[0].starts_with("openai-strict cannot express `count_words`"),
        "{incompatible:?}"
    );
}

#[test]
fn hand_written_definitions_are_linted_too() {
    struct Manual(ToolDefinition);
    impl Tool for Manual {
        fn definition(&self) -> &ToolDefinition {
            &self.0
        }
        fn call<'a>(
            &'a self,
            _: toolsmith::Arguments<'a>,
            _: &'a toolsmith::ToolContext,
        ) -> toolsmith::tool::BoxFuture<'a, toolsmith::ToolOutcome> {
            Box::pin(async {
                toolsmith::ToolOutcome::success(&()).unwrap_or_else(toolsmith::ToolOutcome::Error)
            })
        }
    }
    let def = ToolDefinition::new(
        "do_stuff",
        "",
        json!({"type": "object", "properties": {"sql": {"type": "string"}}}),
    );
    let findings = Toolbox::new().with(Manual(def)).lint();
    let lints: Vec<&str> = findings.iter().map(|f| f.lint).collect();
    assert_eq!(
        lints,
        [
            "tool_name",
            "missing_docs",
            "missing_effect",
            "missing_docs",
            "unbounded_string",
            "dangerous_parameter"
        ],
        "{findings:#?}"
    );
    let clean = ToolDefinition::new(
        "get_time",
        "Gets the time in a zone. Read-only. Not for dates in the past.",
        json!({"type": "object", "properties": {"zone": {"type": "string", "description": "The zone.", "maxLength": 40}}, "additionalProperties": false}),
    )
    .with_effect(Effect::Read);
    Toolbox::new().with(Manual(clean)).assert_lint_clean();
}

#[test]
#[should_panic(expected = "lint findings")]
fn the_test_helper_fails_on_findings() {
    Toolbox::new().with(SearchNotes).assert_lint_clean();
}

#[test]
fn provider_names_are_portable() {
    assert_eq!(
        Dialect::OpenAiChat { strict: true }.tool_name("search_notes"),
        "search_notes"
    );
}

#[test]
fn a_hand_written_tool_returning_an_unbounded_list_is_found() {
    use toolsmith::tool::BoxFuture;
    use toolsmith::{Arguments, Tool, ToolContext, ToolDefinition, ToolOutcome, Toolbox};
    struct Lister(ToolDefinition);
    impl Tool for Lister {
        fn definition(&self) -> &ToolDefinition {
            &self.0
        }
        fn call<'a>(&'a self, _: Arguments<'a>, _: &'a ToolContext) -> BoxFuture<'a, ToolOutcome> {
            Box::pin(async { ToolOutcome::success(&[1]).unwrap_or_else(ToolOutcome::Error) })
        }
    }
    let schema =
        serde_json::json!({"type": "object", "properties": {}, "additionalProperties": false});
    let def = |output: serde_json::Value, input: serde_json::Value| {
        ToolDefinition::new(
            "list_rows",
            "Lists rows. Read-only. Not for one row.",
            input,
        )
        .with_effect(toolsmith::Effect::Read)
        .with_output_schema(output)
    };
    let unbounded = Toolbox::new().with(Lister(def(
        serde_json::json!({"type": "array", "items": {"type": "integer"}}),
        schema.clone(),
    )));
    assert!(unbounded.lint().iter().any(|f| f.lint == "unbounded_list"));
    let limited = Toolbox::new().with(Lister(def(
        serde_json::json!({"type": "array", "items": {"type": "integer"}}),
        serde_json::json!({"type": "object", "properties": {"limit": {"type": "integer", "maximum": 100, "description": "At most this many rows."}}, "additionalProperties": false}),
    )));
    assert!(limited.lint().iter().all(|f| f.lint != "unbounded_list"));
    let capped = Toolbox::new().with(Lister(def(
        serde_json::json!({"type": "array", "maxItems": 20, "items": {"type": "integer"}}),
        schema,
    )));
    assert!(capped.lint().iter().all(|f| f.lint != "unbounded_list"));
}

/// Looks a flight up. Read-only. Not for bookings.
///
/// An example id: `AF0006-2026-12-01`, departing at 10:30.
#[tool(effect = "read")]
fn look_up_flight(
    /// The flight's id, as `AF0006-2026-12-01`.
    #[arg(length(max = 40))]
    id: String,
) -> String {
    id
}

#[test]
fn volatile_description_is_for_text_built_at_run_time() {
    // A doc comment is the same on every request, dates and all.
    let findings = Toolbox::new().with(LookUpFlight).lint();
    assert!(
        !findings.iter().any(|f| f.lint == "volatile_description"),
        "{findings:?}"
    );
    // A description formatted in when the toolbox is built is not.
    let built = ToolDefinition::new(
        "todays_flights",
        "Lists the flights of 2026-11-27. Read-only. Not for bookings.",
        json!({"type": "object", "properties": {}}),
    )
    .with_effect(Effect::Read);
    let findings = Toolbox::new().with(Defined(built)).lint();
    assert!(
        findings.iter().any(|f| f.lint == "volatile_description"),
        "{findings:?}"
    );
}

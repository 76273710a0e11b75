//! The name and description lints measured on real tool sets: the 1,425 distinct functions of
//! the Berkeley Function Calling Leaderboard v4 (`tests/fixtures/bfcl/`, Apache-2.0), their names
//! and descriptions as their authors wrote them. The numbers are in docs/lints.md.

use serde_json::{Value, json};
use toolsmith::lint::LintFinding;
use toolsmith::{ToolDefinition, Toolbox};

#[path = "support/defined.rs"]
mod defined;
use defined::Defined;

/// The findings for one tool with this name, description and declared effect.
fn lint(name: &str, description: &str, effect: toolsmith::Effect) -> Vec<LintFinding> {
    let def = ToolDefinition::new(
        name.to_owned(),
        description.to_owned(),
        json!({"type": "object"}),
    )
    .with_effect(effect);
    let mut toolbox = Toolbox::new();
    match toolbox.register(Defined(def)) {
        Ok(_) => toolbox.lint(),
        Err(err) => panic!("`{name}` does not register: {err}"),
    }
}

fn corpus() -> Vec<(String, String)> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/bfcl/names_and_descriptions.jsonl"
    );
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line).unwrap();
            (
                v["name"].as_str().unwrap().to_owned(),
                v["description"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

/// The names `tool_name` flags.
fn flagged_names(corpus: &[(String, String)]) -> Vec<String> {
    corpus
        .iter()
        .filter(|(name, _)| {
            lint(
                name,
                "Looks something up. Read-only. Not for writes.",
                toolsmith::Effect::Read,
            )
            .iter()
            .any(|f| f.lint == "tool_name")
        })
        .map(|(name, _)| name.clone())
        .collect()
}

#[test]
fn tool_name_flags_only_vague_names() {
    let corpus = corpus();
    assert_eq!(corpus.len(), 1425);
    let flagged = flagged_names(&corpus);
    // Every flagged name is either not snake_case or vague; none is a clear name refused
    // for its vocabulary.
    // Four names, each made only of generic words: what they act on is not said.
    assert_eq!(
        flagged,
        [
            "get_items",
            "performDataFetch",
            "process_data",
            "requests.get"
        ]
    );
    // The names the old verb list refused pass now.
    for clear in [
        "solve_quadratic_equation",
        "draw_circle",
        "determine_body_mass_index",
        "math.gcd",
        "currency_converter",
        "calculate_triangle_area",
        "CalculateTax",
        "basketball.game_stats.get",
    ] {
        assert!(!flagged.contains(&clear.to_owned()), "{clear}");
    }
    println!(
        "tool_name flags {} of {} BFCL names",
        flagged.len(),
        corpus.len()
    );
}

#[test]
fn description_scope_reads_effect_words_and_suggests_what_fits() {
    use toolsmith::Effect;
    let scope = |description: &str, effect: Effect| -> Option<String> {
        lint("archive_note", description, effect)
            .into_iter()
            .find(|f| f.lint == "description_scope")
            .map(|f| f.message)
    };
    for (description, effect) in [
        (
            "Deletes a note. Destructive: it cannot be undone. Not for archiving.",
            Effect::Destructive,
        ),
        (
            "Removes a note for good. This cannot be undone. Not for drafts.",
            Effect::Destructive,
        ),
        ("Sends the invoice by email. Not for quotes.", Effect::Write),
        (
            "Creates a ticket in the tracker. Not for incidents.",
            Effect::Write,
        ),
        (
            "Looks up a city's weather. Read-only. Not for forecasts.",
            Effect::Read,
        ),
    ] {
        assert_eq!(scope(description, effect), None, "{description}");
    }
    let destructive = scope("Wipes the note. Not for drafts.", Effect::Destructive).unwrap();
    assert!(
        destructive.contains("\"Destructive: it cannot be undone.\""),
        "{destructive}"
    );
    let write = scope("Files the report. Not for drafts.", Effect::Write).unwrap();
    assert!(write.contains("\"Writes data.\""), "{write}");
    let read = scope("Finds the weather.", Effect::Read).unwrap();
    assert!(
        read.contains("\"Read-only. Not for private documents.\""),
        "{read}"
    );

    // Measured on BFCL's descriptions (written for benchmarks, not for agents): most say what
    // the function does but neither its effect nor when not to use it.
    let corpus = corpus();
    let flagged = corpus
        .iter()
        .filter(|(name, description)| {
            !description.trim().is_empty()
                && lint(name, description, Effect::Read)
                    .iter()
                    .any(|f| f.lint == "description_scope")
        })
        .count();
    println!(
        "description_scope warns on {flagged} of {} BFCL descriptions",
        corpus.len()
    );
    assert!(flagged > 0);
}

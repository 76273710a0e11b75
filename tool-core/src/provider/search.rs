//! The toolbox's own tool search, for providers without one (OpenAI Chat, Gemini): a function
//! tool the model calls with words, answered by the toolbox with the tools that match best
//! (BM25 over each tool's name parts, description and parameters; ties in the toolbox's
//! order), so that deferred tools reach the model only when it looks for them.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::{Value, json};

use crate::definition::ToolDefinition;

/// The name of the toolbox's own search tool, as every provider sees it.
pub const LOCAL_SEARCH_TOOL: &str = "tool_search";

/// The most tools one search returns, and how many by default.
const MAX_RESULTS: u64 = 10;
const DEFAULT_RESULTS: u64 = 5;

/// BM25's constants (the usual ones).
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// The search tool's definition: `query` (words, 1 to 200 characters) and `max_results`
/// (1 to 10, default 5).
pub(crate) fn definition() -> &'static ToolDefinition {
    static DEFINITION: OnceLock<ToolDefinition> = OnceLock::new();
    DEFINITION.get_or_init(|| {
        ToolDefinition::new(
            LOCAL_SEARCH_TOOL,
            "Finds tools by what they do: give a few words, get the names and descriptions of the tools that match best. Their full definitions are sent with the next request. Read-only. Not for calling the tools themselves.",
            json!({
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "description": "Words for what the tool should do, such as \"refund an order\".",
                        "minLength": 1,
                        "maxLength": 200
                    },
                    "max_results": {
                        "type": "integer",
                        "description": "How many tools to return, at most.",
                        "minimum": 1,
                        "maximum": MAX_RESULTS,
                        "default": DEFAULT_RESULTS
                    }
                },
                "required": ["query"],
                "additionalProperties": false
            }),
        )
        .with_effect(crate::spec::Effect::Read)
    })
}

/// The words of a text for the search: its runs of letters, digits and `_ - .` split as tool
/// names are (at `_`, `-`, `.` and where a lowercase letter meets an uppercase one),
/// lowercased and stemmed.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.')))
        .flat_map(toolsmith_lint_rules::name_words)
        .map(|word| stem(word.to_lowercase()))
        .collect()
}

/// English plurals and third persons to their stem, so that "refund" finds "refunds" and
/// "archive" finds "archives": `-ies` to `-y`, and a final `-s` (not `-ss`) dropped from words
/// longer than three letters.
fn stem(word: String) -> String {
    if word.len() > 4 && word.ends_with("ies") {
        return format!("{}y", &word[..word.len() - 3]);
    }
    if word.len() > 3 && word.ends_with('s') && !word.ends_with("ss") {
        return word[..word.len() - 1].to_owned();
    }
    word
}

/// What a tool is found by: its name, description, and each parameter's name and description.
fn document(def: &ToolDefinition) -> Vec<String> {
    let mut text = format!("{} {}", def.name(), def.description());
    if let Some(properties) = def
        .input_schema()
        .get("properties")
        .and_then(Value::as_object)
    {
        for (name, schema) in properties {
            text.push(' ');
            text.push_str(name);
            if let Some(description) = schema.get("description").and_then(Value::as_str) {
                text.push(' ');
                text.push_str(description);
            }
        }
    }
    words(&text)
}

/// The tools among `defs` that match `query` best, best first: BM25 scores, ties in the order
/// of `defs`; tools that share no word with the query are left out.
pub(crate) fn rank<'d>(
    defs: &[&'d ToolDefinition],
    query: &str,
    max: usize,
) -> Vec<&'d ToolDefinition> {
    let docs: Vec<Vec<String>> = defs.iter().map(|d| document(d)).collect();
    let n = docs.len() as f64;
    let average = docs.iter().map(Vec::len).sum::<usize>() as f64 / n.max(1.0);
    let mut frequency: HashMap<&str, usize> = HashMap::new();
    for doc in &docs {
        let mut seen: Vec<&str> = doc.iter().map(String::as_str).collect();
        seen.sort_unstable();
        seen.dedup();
        for word in seen {
            *frequency.entry(word).or_default() += 1;
        }
    }
    let mut terms = words(query);
    terms.sort_unstable();
    terms.dedup();
    let mut scored: Vec<(usize, f64)> = docs
        .iter()
        .enumerate()
        .map(|(i, doc)| {
            let len = doc.len() as f64;
            let score = terms
                .iter()
                .map(|term| {
                    let tf = doc.iter().filter(|w| *w == term).count() as f64;
                    if tf == 0.0 {
                        return 0.0;
                    }
                    let df = frequency.get(term.as_str()).copied().unwrap_or(0) as f64;
                    let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
                    idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len / average.max(1.0)))
                })
                .sum::<f64>();
            (i, score)
        })
        .filter(|(_, score)| *score > 0.0)
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored.truncate(max);
    scored.into_iter().map(|(i, _)| defs[i]).collect()
}

/// The answer to a call of the search tool with `arguments` (already validated): the tools
/// found, in the provider's spelling of their names (`spell`), with their descriptions.
pub(crate) fn answer(
    defs: &[&ToolDefinition],
    arguments: &Value,
    spell: impl Fn(&str) -> String,
) -> Value {
    let query = arguments.get("query").and_then(Value::as_str).unwrap_or("");
    let max = arguments
        .get("max_results")
        .and_then(Value::as_u64)
        .unwrap_or(DEFAULT_RESULTS)
        .clamp(1, MAX_RESULTS);
    let found: Vec<Value> = rank(defs, query, usize::try_from(max).unwrap_or(5))
        .into_iter()
        .map(|def| json!({"name": spell(def.name()), "description": def.description()}))
        .collect();
    json!({ "tools": found })
}

/// The tools a search's answer named (`{"tools": [{"name": ...}]}`), in its order.
pub(crate) fn found_names(data: &Value) -> Vec<String> {
    data.get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| t.get("name").and_then(Value::as_str).map(str::to_owned))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_search_tool_exports_everywhere_and_lints_clean() {
        for dialect in crate::dialect::Dialect::ALL {
            assert!(definition().export(dialect).is_ok(), "{dialect}");
        }
        let findings = crate::lint::tool(definition());
        assert!(
            findings
                .iter()
                .all(|f| f.level == crate::lint::LintLevel::Allow),
            "{findings:#?}"
        );
    }

    #[test]
    fn names_split_into_words() {
        assert_eq!(
            words("calendar.createEvent"),
            ["calendar", "create", "event"]
        );
        assert_eq!(words("refund_order v2"), ["refund", "order", "v2"]);
        assert_eq!(words("Refunds queries class"), ["refund", "query", "class"]);
    }

    #[test]
    fn the_best_match_comes_first_and_ties_keep_their_order() {
        let refund = ToolDefinition::new(
            "refund_order",
            "Refunds an order to the customer.",
            json!({"type": "object"}),
        );
        let weather = ToolDefinition::new(
            "get_weather",
            "Gets the weather.",
            json!({"type": "object", "properties": {"city": {"type": "string", "description": "The city."}}}),
        );
        let cancel = ToolDefinition::new(
            "cancel_order",
            "Cancels an order.",
            json!({"type": "object"}),
        );
        let defs = [&refund, &weather, &cancel];
        let found = rank(&defs, "refund my order", 5);
        assert_eq!(found[0].name(), "refund_order");
        assert_eq!(found[1].name(), "cancel_order");
        assert_eq!(found.len(), 2, "the weather shares no word");
        let tie = rank(&defs, "order", 5);
        assert_eq!(
            tie[0].name(),
            "cancel_order",
            "the shorter document scores higher"
        );
        assert!(rank(&defs, "", 5).is_empty());
        assert_eq!(rank(&defs, "city", 1)[0].name(), "get_weather");
    }
}

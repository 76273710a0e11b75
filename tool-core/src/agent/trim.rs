//! Old tool results shown short: a policy on what the model sees of a long run's results,
//! which never separates a call from its result and keeps the cached prefix of the
//! conversation.
//!
//! Trimming works on the model's view only. The run's state keeps every result whole; the
//! request sent to the model shows the older ones as a preview. Three rules keep it safe:
//!
//! - **Pairs stay whole.** A result is never removed, only its content shortened, so every
//!   call keeps its result and every result its call, in every provider's shape.
//! - **The prefix stays.** A result once trimmed stays trimmed, the same way, on every later
//!   turn (the run's state records which), so the bytes before the first result trimmed on a
//!   turn are those the previous turn sent, and a provider's prompt cache still holds them.
//! - **Trims pay for themselves.** Results are trimmed together, only once doing so saves at
//!   least [`Trim::with_at_least`] characters: each trim costs one rewrite of the cache from
//!   the first result it touches.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use crate::dialect::Dialect;

/// How a run shows the model its older tool results ([`Agent::with_trim`](super::Agent::with_trim)).
///
/// ```
/// use toolsmith::agent::Trim;
///
/// // The last 3 results whole; older ones as their first 200 characters, trimmed in steps
/// // that save at least 20,000 characters; `read_contract`'s results never trimmed.
/// let trim = Trim::keep_last(3)
///     .with_preview(200)
///     .with_at_least(20_000)
///     .except(["read_contract"]);
/// # let _ = trim;
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trim {
    keep_last: usize,
    preview: usize,
    at_least: usize,
    except: BTreeSet<String>,
    on_provider: bool,
}

impl Trim {
    /// The last `keep` results shown whole; older ones as a preview of 200 characters,
    /// trimmed in steps that save at least 16,000 characters (about 4,000 tokens).
    #[must_use]
    pub fn keep_last(keep: usize) -> Self {
        Self {
            keep_last: keep,
            preview: 200,
            at_least: 16_000,
            except: BTreeSet::new(),
            on_provider: false,
        }
    }

    /// How many characters of an older result its preview shows.
    #[must_use]
    pub fn with_preview(mut self, chars: usize) -> Self {
        self.preview = chars;
        self
    }

    /// The fewest characters a trim must save: results wait, whole, until trimming them
    /// together saves this much.
    #[must_use]
    pub fn with_at_least(mut self, chars: usize) -> Self {
        self.at_least = chars;
        self
    }

    /// Tools whose results are never trimmed.
    #[must_use]
    pub fn except<S: Into<String>>(mut self, tools: impl IntoIterator<Item = S>) -> Self {
        self.except.extend(tools.into_iter().map(Into::into));
        self
    }

    /// For Anthropic: sent as the provider's own context edit (`clear_tool_uses_20250919`,
    /// with `keep`, `clear_at_least` in tokens at 4 characters each, and `exclude_tools`),
    /// which clears old results on the provider's side; the conversation is sent whole.
    /// Other providers trim here, as without it.
    #[must_use]
    pub fn on_provider(mut self) -> Self {
        self.on_provider = true;
        self
    }

    /// Whether the provider of `dialect` trims, as asked ([`on_provider`](Self::on_provider)).
    pub(crate) fn by_provider(&self, dialect: Dialect) -> bool {
        self.on_provider && matches!(dialect, Dialect::Anthropic { .. })
    }

    /// The provider's context edit and the beta header it needs (Anthropic).
    pub(crate) fn context_edit(&self) -> (Value, (String, String)) {
        let mut edit = json!({
            "type": "clear_tool_uses_20250919",
            "keep": {"type": "tool_uses", "value": self.keep_last},
            "clear_at_least": {"type": "input_tokens", "value": self.at_least / 4},
        });
        if !self.except.is_empty() {
            edit["exclude_tools"] = json!(self.except);
        }
        (
            json!({"edits": [edit]}),
            (
                "anthropic-beta".to_owned(),
                "context-management-2025-06-27".to_owned(),
            ),
        )
    }

    /// The conversation as the model is shown it: `messages` with the results marked in
    /// `trimmed` (a message's index and a result's index in it) as previews, after marking
    /// the results this turn trims.
    pub(crate) fn view(
        &self,
        dialect: Dialect,
        messages: &[Value],
        trimmed: &mut Vec<(usize, usize)>,
    ) -> Vec<Value> {
        let results = results(dialect, messages);
        let old = results.len().saturating_sub(self.keep_last);
        // The results this turn may trim, with the characters each would save (counted only
        // for these: the ones trimmed before are not measured again).
        let fresh: Vec<((usize, usize), usize)> = results[..old]
            .iter()
            .filter(|found| trimmed.binary_search(&found.at).is_err())
            .filter(|found| !found.tool.is_some_and(|t| self.except.contains(t)))
            .filter_map(|found| {
                let saves = chars(found.content).checked_sub(self.preview)?;
                (saves > 0).then_some((found.at, saves))
            })
            .collect();
        let saving: usize = fresh.iter().map(|(_, saves)| saves).sum();
        if !fresh.is_empty() && saving >= self.at_least {
            trimmed.extend(fresh.iter().map(|(at, _)| *at));
            trimmed.sort_unstable();
        }
        let mut view = messages.to_vec();
        for &(m, part) in trimmed.iter() {
            if let Some(message) = view.get_mut(m) {
                shorten(dialect, message, (m, part), self.preview);
            }
        }
        view
    }
}

/// The whole text of each result in `trimmed`, by the reference its preview gives
/// (`"<message>.<part>"`): what [`READ_EARLIER`](super::earlier::READ_EARLIER) reads.
pub(crate) fn whole(
    dialect: Dialect,
    messages: &[Value],
    trimmed: &[(usize, usize)],
) -> BTreeMap<String, String> {
    results(dialect, messages)
        .into_iter()
        .filter(|found| trimmed.binary_search(&found.at).is_ok())
        .map(|found| {
            (
                format!("{}.{}", found.at.0, found.at.1),
                text_of(found.content),
            )
        })
        .collect()
}

/// A tool result in a conversation: where it is, its tool, its content.
struct Found<'a> {
    at: (usize, usize),
    tool: Option<&'a str>,
    content: &'a Value,
}

/// The tool results of `messages`, in order.
fn results(dialect: Dialect, messages: &[Value]) -> Vec<Found<'_>> {
    let mut names: BTreeMap<&str, &str> = BTreeMap::new();
    let mut found = Vec::new();
    for (m, message) in messages.iter().enumerate() {
        match dialect {
            Dialect::OpenAiChat { .. } => {
                for call in message["tool_calls"].as_array().into_iter().flatten() {
                    if let (Some(id), Some(name)) =
                        (call["id"].as_str(), call["function"]["name"].as_str())
                    {
                        names.insert(id, name);
                    }
                }
                if message["role"] == "tool" {
                    let tool = message["tool_call_id"]
                        .as_str()
                        .and_then(|id| names.get(id).copied());
                    found.push(Found {
                        at: (m, 0),
                        tool,
                        content: &message["content"],
                    });
                }
            }
            Dialect::OpenAiResponses { .. } => {
                if message["type"] == "function_call"
                    && let (Some(id), Some(name)) =
                        (message["call_id"].as_str(), message["name"].as_str())
                {
                    names.insert(id, name);
                }
                if message["type"] == "function_call_output" {
                    let tool = message["call_id"]
                        .as_str()
                        .and_then(|id| names.get(id).copied());
                    found.push(Found {
                        at: (m, 0),
                        tool,
                        content: &message["output"],
                    });
                }
            }
            Dialect::Anthropic { .. } => {
                for (p, block) in message["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .enumerate()
                {
                    if block["type"] == "tool_use"
                        && let (Some(id), Some(name)) =
                            (block["id"].as_str(), block["name"].as_str())
                    {
                        names.insert(id, name);
                    }
                    if block["type"] == "tool_result" {
                        let tool = block["tool_use_id"]
                            .as_str()
                            .and_then(|id| names.get(id).copied());
                        found.push(Found {
                            at: (m, p),
                            tool,
                            content: &block["content"],
                        });
                    }
                }
            }
            Dialect::Gemini => {
                for (p, part) in message["parts"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .enumerate()
                {
                    if let Some(response) = part.get("functionResponse") {
                        found.push(Found {
                            at: (m, p),
                            tool: response["name"].as_str(),
                            content: &response["response"],
                        });
                    }
                }
            }
            Dialect::Mcp => {}
        }
    }
    found
}

/// The characters of a result's content as the model reads it.
fn chars(content: &Value) -> usize {
    match content {
        Value::String(text) => text.chars().count(),
        Value::Null => 0,
        other => other.to_string().chars().count(),
    }
}

/// A result's content as text: a string as it is, Anthropic's text blocks joined, anything
/// else as JSON.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        // Anthropic's blocks: their text.
        Value::Array(blocks) if blocks.iter().all(|b| b["type"] == "text") => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    }
}

/// The preview of `content`, the result at `at`: its first `keep` characters, what was left
/// out, and how to read the rest.
fn preview(content: &Value, keep: usize, at: (usize, usize)) -> String {
    let text = text_of(content);
    let total = text.chars().count();
    let shown: String = text.chars().take(keep).collect();
    format!(
        "{shown}\n[trimmed: the first {keep} of {total} characters of this earlier result are shown; read the rest with {} {{\"result\": \"{}.{}\", \"offset\": {keep}}}]",
        super::earlier::READ_EARLIER,
        at.0,
        at.1
    )
}

/// The result at `at` (`message` is the conversation's `at.0`th) shown as its preview.
fn shorten(dialect: Dialect, message: &mut Value, at: (usize, usize), keep: usize) {
    let part = at.1;
    match dialect {
        Dialect::OpenAiChat { .. } => {
            let short = preview(&message["content"], keep, at);
            message["content"] = Value::String(short);
        }
        Dialect::OpenAiResponses { .. } => {
            let short = preview(&message["output"], keep, at);
            message["output"] = Value::String(short);
        }
        Dialect::Anthropic { .. } => {
            if let Some(block) = message["content"].get_mut(part) {
                let short = preview(&block["content"], keep, at);
                block["content"] = Value::String(short);
            }
        }
        Dialect::Gemini => {
            if let Some(response) = message["parts"]
                .get_mut(part)
                .and_then(|p| p.get_mut("functionResponse"))
            {
                let short = preview(&response["response"], keep, at);
                let mut shown = Map::new();
                shown.insert("output".to_owned(), Value::String(short));
                response["response"] = Value::Object(shown);
            }
        }
        Dialect::Mcp => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const DIALECTS: [Dialect; 4] = [
        Dialect::OpenAiChat { strict: true },
        Dialect::OpenAiResponses { strict: true },
        Dialect::Anthropic { strict: false },
        Dialect::Gemini,
    ];
    const TOOLS: [&str; 3] = ["search", "read_page", "read_contract"];

    /// One turn of a conversation in `dialect`: the model's calls (tool index, result length)
    /// and their results, ids made from `turn`.
    fn turn(dialect: Dialect, turn: usize, calls: &[(usize, usize)]) -> Vec<Value> {
        let id = |i: usize| format!("call_{turn}_{i}");
        let result = |len: usize| "r".repeat(len);
        match dialect {
            Dialect::OpenAiChat { .. } => {
                let mut out = vec![json!({"role": "assistant", "content": null, "tool_calls":
                    calls.iter().enumerate().map(|(i, (t, _))| json!({"id": id(i), "type": "function",
                        "function": {"name": TOOLS[*t], "arguments": "{}"}})).collect::<Vec<_>>()})];
                out.extend(calls.iter().enumerate().map(|(i, (_, len))| {
                    json!({"role": "tool", "tool_call_id": id(i), "content": result(*len)})
                }));
                out
            }
            Dialect::OpenAiResponses { .. } => {
                let mut out: Vec<Value> = calls
                    .iter()
                    .enumerate()
                    .map(|(i, (t, _))| json!({"type": "function_call", "call_id": id(i), "name": TOOLS[*t], "arguments": "{}"}))
                    .collect();
                out.extend(calls.iter().enumerate().map(|(i, (_, len))| {
                    json!({"type": "function_call_output", "call_id": id(i), "output": result(*len)})
                }));
                out
            }
            Dialect::Anthropic { .. } => vec![
                json!({"role": "assistant", "content": calls.iter().enumerate().map(|(i, (t, _))|
                    json!({"type": "tool_use", "id": id(i), "name": TOOLS[*t], "input": {}})).collect::<Vec<_>>()}),
                json!({"role": "user", "content": calls.iter().enumerate().map(|(i, (_, len))|
                    json!({"type": "tool_result", "tool_use_id": id(i), "content": result(*len)})).collect::<Vec<_>>()}),
            ],
            _ => vec![
                json!({"role": "model", "parts": calls.iter().map(|(t, _)|
                    json!({"functionCall": {"name": TOOLS[*t], "args": {}}})).collect::<Vec<_>>()}),
                json!({"role": "user", "parts": calls.iter().map(|(t, len)|
                    json!({"functionResponse": {"name": TOOLS[*t], "response": {"output": result(*len)}}})).collect::<Vec<_>>()}),
            ],
        }
    }

    /// The call ids and the result ids of a conversation (Gemini pairs by position: each
    /// message's calls and the next one's responses, by name).
    fn pairs(dialect: Dialect, messages: &[Value]) -> (Vec<String>, Vec<String>) {
        let (mut calls, mut results) = (Vec::new(), Vec::new());
        for message in messages {
            match dialect {
                Dialect::OpenAiChat { .. } => {
                    for call in message["tool_calls"].as_array().into_iter().flatten() {
                        calls.push(call["id"].as_str().unwrap_or_default().to_owned());
                    }
                    if message["role"] == "tool" {
                        results.push(
                            message["tool_call_id"]
                                .as_str()
                                .unwrap_or_default()
                                .to_owned(),
                        );
                    }
                }
                Dialect::OpenAiResponses { .. } => match message["type"].as_str() {
                    Some("function_call") => calls.push(message["call_id"].to_string()),
                    Some("function_call_output") => results.push(message["call_id"].to_string()),
                    _ => {}
                },
                Dialect::Anthropic { .. } => {
                    for block in message["content"].as_array().into_iter().flatten() {
                        match block["type"].as_str() {
                            Some("tool_use") => calls.push(block["id"].to_string()),
                            Some("tool_result") => results.push(block["tool_use_id"].to_string()),
                            _ => {}
                        }
                    }
                }
                _ => {
                    for part in message["parts"].as_array().into_iter().flatten() {
                        if let Some(call) = part.get("functionCall") {
                            calls.push(call["name"].to_string());
                        }
                        if let Some(response) = part.get("functionResponse") {
                            results.push(response["name"].to_string());
                        }
                    }
                }
            }
        }
        (calls, results)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        /// Over generated runs in each dialect, turn after turn: no call loses its result,
        /// the bytes before the first result trimmed on a turn are the previous turn's, a trim
        /// saves at least its minimum, the last results and the excepted tool's stay whole,
        /// and the run's own messages are never changed.
        #[test]
        fn trimming_keeps_pairs_and_the_cached_prefix(
            d in 0..4usize,
            keep in 0..4usize,
            preview in 0..300usize,
            at_least in 0..20_000usize,
            turns in proptest::collection::vec(
                proptest::collection::vec((0..3usize, 0..6_000usize), 1..4), 1..12),
        ) {
            let dialect = DIALECTS[d];
            let trim = Trim::keep_last(keep).with_preview(preview).with_at_least(at_least).except(["read_contract"]);
            let mut messages: Vec<Value> = Vec::new();
            let mut trimmed = Vec::new();
            let mut previous: Vec<Value> = Vec::new();
            for (t, calls) in turns.iter().enumerate() {
                messages.extend(turn(dialect, t, calls));
                let kept = messages.clone();
                let before = trimmed.clone();
                let view = trim.view(dialect, &messages, &mut trimmed);
                prop_assert_eq!(&messages, &kept);
                // Pairs: the view has every message, every call and every result.
                prop_assert_eq!(view.len(), messages.len());
                prop_assert_eq!(pairs(dialect, &view), pairs(dialect, &messages));
                // Marks only grow.
                prop_assert!(before.iter().all(|at| trimmed.contains(at)));
                let new: Vec<(usize, usize)> = trimmed.iter().copied().filter(|at| !before.contains(at)).collect();
                // The prefix: every message before the first newly trimmed one is as sent.
                let first = new.first().map_or(previous.len(), |(m, _)| *m).min(previous.len());
                prop_assert_eq!(&view[..first], &previous[..first]);
                // A trim saves its minimum.
                let found = results(dialect, &messages);
                if !new.is_empty() {
                    let saving: usize = found.iter().filter(|f| new.contains(&f.at)).map(|f| chars(f.content) - preview).sum();
                    prop_assert!(saving >= at_least, "saved {} < {}", saving, at_least);
                }
                // The last results, and the excepted tool's, are whole.
                for f in found.iter().rev().take(keep) {
                    prop_assert!(!trimmed.contains(&f.at));
                }
                for f in found.iter().filter(|f| f.tool == Some("read_contract")) {
                    prop_assert!(!trimmed.contains(&f.at));
                }
                previous = view;
            }
        }
    }

    #[test]
    fn a_trimmed_result_shows_its_start_and_says_how_much_is_left_out() {
        let dialect = Dialect::OpenAiChat { strict: true };
        let mut messages = turn(dialect, 0, &[(0, 1000)]);
        messages.extend(turn(dialect, 1, &[(1, 10)]));
        let mut trimmed = Vec::new();
        let view = Trim::keep_last(1).with_preview(5).with_at_least(100).view(
            dialect,
            &messages,
            &mut trimmed,
        );
        assert_eq!(trimmed, [(1, 0)]);
        let shown = view[1]["content"].as_str().unwrap();
        assert!(
            shown.starts_with("rrrrr\n[trimmed: the first 5 of 1000 characters"),
            "{shown}"
        );
        assert_eq!(view[3], messages[3]);
        // Anthropic's own edit, when the provider is to trim.
        let (edit, header) = Trim::keep_last(3)
            .with_at_least(40_000)
            .except(["read_contract"])
            .on_provider()
            .context_edit();
        assert_eq!(edit["edits"][0]["type"], "clear_tool_uses_20250919");
        assert_eq!(edit["edits"][0]["keep"]["value"], 3);
        assert_eq!(edit["edits"][0]["clear_at_least"]["value"], 10_000);
        assert_eq!(edit["edits"][0]["exclude_tools"], json!(["read_contract"]));
        assert_eq!(header.1, "context-management-2025-06-27");
    }
}

//! Model Context Protocol 2025-11-25 `Tool`: the canonical schema is already what MCP takes
//! (JSON Schema 2020-12 with an object root).

use serde_json::{Map, Value, json};

use super::call::{CallParseError, Reader, ToolCall};
use crate::dialect::Dialect;

use crate::definition::ToolDefinition;
use crate::outcome::{OutputNotes, ToolOutcome};

pub(super) fn tool(def: &ToolDefinition) -> Value {
    let mut tool = Map::new();
    tool.insert("name".into(), def.name().into());
    if let Some(title) = def.title() {
        tool.insert("title".into(), title.into());
    }
    tool.insert("description".into(), def.description().into());
    let mut input_schema = def.input_schema().clone();
    // MCP has no field for examples; JSON Schema 2020-12 has the `examples` annotation.
    let examples = super::transform::valid_examples(def);
    if let (false, Value::Object(schema)) = (examples.is_empty(), &mut input_schema) {
        schema.insert("examples".into(), Value::Array(examples));
    }
    tool.insert("inputSchema".into(), input_schema);
    // A tool that returns rich content answers in content blocks, not structured content.
    if let Some(output) = def
        .output_schema()
        .filter(|s| is_object_root(s) && !crate::output::is_content_tool(def))
    {
        tool.insert("outputSchema".into(), output.clone());
    }
    let annotations = def.annotations().to_mcp();
    if !annotations.is_empty() {
        tool.insert("annotations".into(), Value::Object(annotations));
    }
    Value::Object(tool)
}

/// MCP restricts `outputSchema` (and `structuredContent`) to objects.
pub(super) fn is_object_root(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object")
}

/// The `_meta` key saying a result is a replay: the first call's result, returned again
/// for a duplicate, the tool not run (the envelope's `"replayed": true`).
pub const REPLAYED_META: &str = "toolsmith/replayed";

/// The `_meta` key of a tool result whose output the checks rewrote or marked: what was
/// neutralized or redacted and, for untrusted data, its provenance (docs/output.md).
pub const OUTPUT_META: &str = "toolsmith/output";

/// A `CallToolResult`'s parts: one text block, the structured content (the data itself, when
/// the tool advertises an object output schema), whether it is an error, and its `_meta`.
pub(crate) struct CallResult {
    /// For a stored result: its URI, size and summary, given as a `resource_link`.
    pub(crate) link: Option<(String, usize, String)>,
    /// With structured content: what the output checks said, as its own text block.
    pub(crate) notes: Option<String>,
    pub(crate) text: String,
    pub(crate) structured: Option<Value>,
    /// The structured content as the data's own JSON text, in place of `structured`, when the
    /// result was made for an answer written as text (`CallResult::new_as_text`). Only the
    /// MCP server writes such answers.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) structured_text: Option<String>,
    pub(crate) is_error: bool,
    /// `{"toolsmith/replayed": true}` for a replay, else nothing.
    pub(crate) meta: Option<Map<String, Value>>,
}

impl CallResult {
    pub(crate) fn new(outcome: &ToolOutcome, def: Option<&ToolDefinition>) -> Self {
        Self::build(outcome, def, false)
    }

    /// As [`new`](Self::new), for an answer written as text: structured content that needs no
    /// rewriting is left as the data's JSON text (`structured_text`), not read into a value
    /// only to be written out again.
    #[cfg(feature = "mcp")]
    pub(crate) fn new_as_text(outcome: &ToolOutcome, def: Option<&ToolDefinition>) -> Self {
        Self::build(outcome, def, true)
    }

    fn build(outcome: &ToolOutcome, def: Option<&ToolDefinition>, as_text: bool) -> Self {
        let mut meta = outcome.is_replay().then(|| {
            let mut meta = Map::new();
            meta.insert(REPLAYED_META.into(), Value::Bool(true));
            meta
        });
        // The model reads the view of a result that has one; the program's typed value goes
        // to `structuredContent`.
        let model = outcome.for_model();
        let viewed = matches!(outcome, ToolOutcome::Viewed(_));
        // What the output checks did is said in the text the model reads (the envelope) and
        // in `_meta` for the client.
        let mut notes = match model {
            ToolOutcome::Checked(_, notes) => Some((**notes).clone()),
            ToolOutcome::Stored(_, stored) if stored.notes != OutputNotes::default() => {
                Some(stored.notes.clone())
            }
            _ => None,
        };
        let link = match model {
            ToolOutcome::Stored(_, stored) => {
                Some((stored.uri.clone(), stored.bytes, stored.summary.clone()))
            }
            _ => None,
        };
        let structured = def
            .and_then(ToolDefinition::output_schema)
            .is_some_and(is_object_root);
        let data = structured.then(|| outcome.data()).flatten();
        // A view's value may be rewritten below, so it is read as a value.
        let as_text = as_text && !viewed;
        let structured_text = data
            .filter(|data| as_text && data.get().trim_start().starts_with('{'))
            .map(|data| data.get().to_owned());
        let value = data
            .filter(|_| !as_text)
            .and_then(|data| serde_json::from_str::<Value>(data.get()).ok())
            .filter(Value::is_object);
        // A view's value did not pass the checks the view did; clients show structured
        // content to models too, so it leaves rewritten as the model's data is.
        let value = if viewed {
            value.map(|mut value| {
                if let Some(found) = crate::output::sanitize(&mut value) {
                    let notes = notes.get_or_insert_with(OutputNotes::default);
                    for (have, more) in [
                        (&mut notes.neutralized, found.neutralized),
                        (&mut notes.redacted, found.redacted),
                    ] {
                        have.extend(more);
                        have.sort();
                        have.dedup();
                    }
                }
                value
            })
        } else {
            value
        };
        let notes = notes.and_then(|notes| serde_json::to_value(notes).ok());
        if let Some(notes) = &notes {
            meta.get_or_insert_with(Map::new)
                .insert(OUTPUT_META.into(), notes.clone());
        }
        if viewed {
            let text = match model {
                ToolOutcome::Success(data) | ToolOutcome::Replayed(data) => {
                    serde_json::from_str::<String>(data.get()).ok()
                }
                _ => None,
            };
            return Self {
                link,
                // An envelope says what the checks did itself.
                notes: notes
                    .as_ref()
                    .filter(|_| text.is_some())
                    .map(Value::to_string),
                // A text view is given as text; any other view as the envelope the model
                // reads from every provider.
                text: text.unwrap_or_else(|| model.to_json()),
                structured: value,
                structured_text: None,
                is_error: false,
                meta,
            };
        }
        if (value.is_some() || structured_text.is_some())
            && let Some(data) = outcome.data()
        {
            // Structured content is the data itself; the text block carries the same JSON
            // (the whole envelope when the checks have something to say).
            // A stored result still has its structured content: a tool with an output schema
            // must give it (MCP 2025-11-25, "Output Schema"); the text has the reference.
            // The text block is the structured content serialized (MCP asks for it, for
            // clients that read only text); what the output checks said follows it in a text
            // block of its own.
            return Self {
                link,
                notes: notes.as_ref().map(Value::to_string),
                text: if matches!(outcome, ToolOutcome::Stored(..)) {
                    outcome.to_json()
                } else {
                    data.get().to_owned()
                },
                structured: value,
                structured_text,
                is_error: !outcome.is_success(),
                meta,
            };
        }
        Self {
            link,
            notes: None,
            text: outcome.to_json(),
            structured: None,
            structured_text: None,
            is_error: !outcome.is_success(),
            meta,
        }
    }
}

pub(crate) fn parse(request: &Value) -> Result<Vec<ToolCall>, CallParseError> {
    let r = Reader {
        dialect: Dialect::Mcp,
    };
    let (path, params, id) = match request.get("method") {
        Some(method) => {
            if method != "tools/call" {
                return Err(r.error("/method", "\"tools/call\""));
            }
            let params = request
                .get("params")
                .ok_or_else(|| r.error("/params", "an object"))?;
            let id = request.get("id").map(|id| match id {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            });
            ("/params", params, id)
        }
        None => ("", request, None),
    };
    r.object(params, path)?;
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => json!({}),
        Some(args @ Value::Object(_)) => args.clone(),
        Some(_) => return Err(r.error(&format!("{path}/arguments"), "an object")),
    };
    Ok(vec![ToolCall {
        id,
        name: r.string(params, "name", path)?,
        arguments,
    }])
}

/// A `CallToolResult`: the envelope as text, `structuredContent` for an object output
/// schema, `isError` for failed calls, `_meta` marking a replay.
pub(crate) fn encode(outcome: &ToolOutcome, def: Option<&ToolDefinition>) -> Value {
    if let Some(parts) = crate::output::content_parts(outcome, def) {
        let call = ToolCall {
            id: None,
            name: String::new(),
            arguments: Value::Null,
        };
        return super::rich::rich(Dialect::Mcp, &call, outcome, &parts);
    }
    let parts = CallResult::new(outcome, def);
    let mut content = vec![json!({"type": "text", "text": parts.text})];
    if let Some(notes) = parts.notes {
        content.push(json!({"type": "text", "text": notes}));
    }
    if let Some((uri, bytes, summary)) = parts.link {
        content.push(json!({
            "type": "resource_link",
            "uri": uri,
            "name": "result",
            "description": summary,
            "mimeType": "application/json",
            "size": bytes,
        }));
    }
    let mut result = json!({
        "content": content,
        "isError": parts.is_error,
    });
    if let Some(structured) = parts.structured {
        result["structuredContent"] = structured;
    }
    if let Some(meta) = parts.meta {
        result["_meta"] = Value::Object(meta);
    }
    result
}

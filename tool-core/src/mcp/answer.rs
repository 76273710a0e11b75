//! What a `tools/call` is answered with: a finished call's result (rich content, structured
//! content, the envelope as text), and a call the door turned away with a tool error.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::Value;

use crate::error::Refusal;
use crate::provider::Dialect;
use crate::provider::mcp::CallResult;

/// Whether a call the door turned away is answered with a tool error, not as an unknown
/// tool: busy (the client may retry in a moment), or not allowed by its grant (it needs a
/// wider authorization). The tool is there in both.
pub(super) fn answered(refused: &crate::error::ToolError) -> bool {
    matches!(
        refused.refusal(),
        Some(Refusal::Busy | Refusal::Unauthorized)
    )
}

/// The answer to a call the door turned away with a tool error ([`answered`]).
pub(super) fn refused_result(refused: crate::error::ToolError) -> CallToolResult {
    let outcome = crate::outcome::ToolOutcome::Error(refused);
    let parts = CallResult::new(&outcome, None);
    CallToolResult::error(vec![ContentBlock::text(parts.text)])
}

/// The `tools/call` result of a finished call of the tool `name`.
pub(super) fn complete(
    name: &str,
    definition: &crate::definition::ToolDefinition,
    outcome: &crate::outcome::ToolOutcome,
) -> CallToolResult {
    complete_parts(name, definition, outcome, false).0
}

/// As [`complete`], for an answer written as text: the structured content, when it needs no
/// rewriting, comes beside the result as its JSON text, for the writer to put in as it is.
pub(super) fn complete_as_text(
    name: &str,
    definition: &crate::definition::ToolDefinition,
    outcome: &crate::outcome::ToolOutcome,
) -> (CallToolResult, Option<String>) {
    complete_parts(name, definition, outcome, true)
}

fn complete_parts(
    name: &str,
    definition: &crate::definition::ToolDefinition,
    outcome: &crate::outcome::ToolOutcome,
    as_text: bool,
) -> (CallToolResult, Option<String>) {
    if crate::output::is_content_tool(definition) && outcome.is_success() {
        // Rich content: its parts are MCP content blocks already.
        let call = crate::provider::ToolCall {
            id: None,
            name: name.to_owned(),
            arguments: Value::Null,
        };
        let encoded =
            crate::provider::encode_result(Dialect::Mcp, &call, outcome, Some(definition));
        let content: Vec<ContentBlock> = encoded["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|block| serde_json::from_value(block.clone()).ok())
            .collect();
        return (CallToolResult::success(content), None);
    }
    let parts = if as_text {
        CallResult::new_as_text(outcome, Some(definition))
    } else {
        CallResult::new(outcome, Some(definition))
    };
    let mut content = vec![ContentBlock::text(parts.text)];
    if let Some(notes) = parts.notes {
        content.push(ContentBlock::text(notes));
    }
    if let Some((uri, bytes, summary)) = parts.link {
        content.push(ContentBlock::resource_link(
            rmcp::model::Resource::new(uri, format!("result of {name}"))
                .with_description(summary)
                .with_mime_type("application/json")
                .with_size(u64::try_from(bytes).unwrap_or(u64::MAX)),
        ));
    }
    let mut result = if parts.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    result.structured_content = parts.structured;
    result.meta = parts.meta.map(rmcp::model::MetaObject);
    (result, parts.structured_text)
}

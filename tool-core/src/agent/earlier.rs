//! The model's way back to a result it is shown short ([`Trim`](super::Trim)): a tool that
//! reads the whole result from the run, a page at a time.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::arguments::Arguments;
use crate::context::ToolContext;
use crate::definition::ToolDefinition;
use crate::error::{ErrorCode, ToolError};
use crate::outcome::ToolOutcome;
use crate::spec::Effect;
use crate::tool::{BoxFuture, Tool};

/// The tool's name.
pub(crate) const READ_EARLIER: &str = "read_earlier_result";
/// Characters per page.
const PAGE: usize = 4_000;

/// The whole text of each result the model is shown short, by its reference (`"<message>.<part>"`
/// in the conversation): in each call's context, for [`ReadEarlier`].
#[derive(Clone, Default)]
pub(super) struct Earlier(pub(super) Arc<BTreeMap<String, String>>);

/// Reads a result shown short, a page at a time, from the run's own copy.
pub(super) struct ReadEarlier {
    definition: ToolDefinition,
}

impl ReadEarlier {
    pub(super) fn new() -> Self {
        let schema = json!({
            "type": "object",
            "properties": {
                "result": {
                    "type": "string",
                    "maxLength": 32,
                    "description": "The result's reference, as its shortened text names it (e.g. \"12.0\")."
                },
                "offset": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": 1_000_000_000,
                    "description": "The first character to read (0 for the start). Default 0."
                }
            },
            "required": ["result"],
            "additionalProperties": false
        });
        Self {
            definition: ToolDefinition::new(
                READ_EARLIER,
                "Reads an earlier tool result that this conversation shows shortened (its text ends with \"[trimmed: ...]\"), 4,000 characters at a time. Read-only. Not for results shown whole.",
                schema,
            )
            .with_effect(Effect::Read),
        }
    }

    fn read(&self, arguments: &Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let reference = arguments["result"].as_str().unwrap_or_default();
        let offset = arguments["offset"]
            .as_u64()
            .and_then(|o| usize::try_from(o).ok())
            .unwrap_or(0);
        let earlier = ctx.get::<Earlier>().map(|e| Arc::clone(&e.0));
        let Some(text) = earlier.as_ref().and_then(|e| e.get(reference)) else {
            let known: Vec<&str> = earlier
                .as_ref()
                .map(|e| e.keys().map(String::as_str).take(20).collect())
                .unwrap_or_default();
            return Err(ToolError::new(
                ErrorCode::InvalidArguments,
                format!(
                    "no earlier result `{}` is shown shortened in this conversation; the shortened ones are {}",
                    crate::echo::echo(reference),
                    if known.is_empty() {
                        "none".to_owned()
                    } else {
                        format!("`{}`", known.join("`, `"))
                    }
                ),
            ));
        };
        let total = text.chars().count();
        let page: String = text.chars().skip(offset).take(PAGE).collect();
        let next = offset.saturating_add(PAGE);
        Ok(json!({
            "text": page,
            "offset": offset,
            "total": total,
            "next_offset": (next < total).then_some(next),
        }))
    }
}

impl Tool for ReadEarlier {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn call<'a>(
        &'a self,
        arguments: Arguments<'a>,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ToolOutcome> {
        let outcome = self
            .definition
            .validate(arguments)
            .and_then(|arguments| self.read(&arguments, ctx))
            .and_then(|page| ToolOutcome::success(&page));
        let outcome = outcome.unwrap_or_else(ToolOutcome::Error);
        Box::pin(async move { outcome })
    }
}

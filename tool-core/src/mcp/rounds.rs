//! The state a call carries from one round to the next on MCP 2026-07-28, sealed and bound to its
//! caller, tool and arguments.

use std::sync::Arc;

use serde_json::Value;

/// rmcp's sealing of request state, with a 32-byte key (its minimum length).
pub(super) fn state_codec(key: [u8; 32]) -> Arc<rmcp::model::RequestStateCodec> {
    Arc::new(
        rmcp::model::RequestStateCodec::try_new(key.to_vec())
            .unwrap_or_else(|_| rmcp::model::RequestStateCodec::new_unchecked(key.to_vec())),
    )
}

/// What a call on MCP 2026-07-28 carries from one round to the next, sealed (rmcp's
/// `RequestStateCodec`: authenticated, so a changed state is refused, and bound to the caller,
/// the tool and the call's canonical arguments, with an expiry): the tool, what the server
/// asked, the answers so far, and a nonce that makes the state good for one round.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct SealedState {
    pub(super) tool: String,
    /// The keys of the input requests this round asked.
    pub(super) asked: Vec<String>,
    pub(super) nonce: String,
    pub(super) answers: std::collections::BTreeMap<String, Value>,
}

/// At most this many answered rounds are remembered at once (each until its state expires);
/// past it, a state is refused as used, and the caller starts over.
pub(super) const MAX_USED_STATES: usize = 100_000;

/// How long a round's state can be answered with.
pub(super) const STATE_TTL: std::time::Duration = std::time::Duration::from_secs(600);

/// What a round's sealed state is bound to (its associated data): the principal, the tool and
/// the call's canonical arguments (as the toolbox reads them, so that a call sent in another
/// dialect still matches), each length-prefixed.
pub(super) fn state_binding(
    principal: Option<&str>,
    tool: &str,
    definition: &crate::definition::ToolDefinition,
    arguments: &Value,
) -> String {
    let canonical = definition
        .canonical_arguments(arguments)
        .unwrap_or_else(|_| arguments.clone());
    let arguments = crate::json::canonical::canonical_json(&canonical);
    let principal = principal.unwrap_or("");
    format!(
        "toolsmith/round/v1\n{}:{principal}\n{}:{tool}\n{}:{arguments}",
        principal.len(),
        tool.len(),
        arguments.len()
    )
}

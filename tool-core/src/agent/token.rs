//! Decision tokens: a waiting call signed for a person's decision made elsewhere.

use super::error::AgentError;
use super::state::{Owner, PendingCall};

/// What a decision token signs for.
const DECISION: &str = "toolsmith decision on a run's call";

/// The call a decision token names.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct Signed {
    pub(crate) principal: Option<String>,
    pub(crate) run: String,
    pub(crate) path: Vec<String>,
    pub(crate) tool: String,
    pub(crate) hash: String,
}

/// `pending`, waiting in `owner`'s run, signed under `key` for a decision made elsewhere.
pub(super) fn decision_token(key: &[u8; 32], owner: &Owner, pending: &PendingCall) -> String {
    let signed = Signed {
        principal: owner.principal.clone(),
        run: owner.run_id.clone(),
        path: pending.path.clone(),
        tool: pending.registered.clone(),
        hash: pending.arguments_hash.clone(),
    };
    crate::keys::sign(
        key,
        DECISION,
        serde_json::to_string(&signed)
            .unwrap_or_default()
            .as_bytes(),
    )
}

/// The call `token` names, its signature checked under `key`.
pub(super) fn read_token(key: &[u8; 32], token: &str) -> Result<Signed, AgentError> {
    crate::keys::verify(key, DECISION, token)
        .and_then(|payload| serde_json::from_slice(&payload).ok())
        .ok_or_else(|| {
            AgentError::Sealed(
                "the decision's token is not one this agent signed (forged, altered, or signed with another key); decide on the call as the run lists it".to_owned(),
            )
        })
}

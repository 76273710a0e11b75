//! A run's state: plain data, serialized to be stored and resumed in another process.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::dialect::Dialect;
use crate::provider::{ToolCall, ToolRequest};

use super::error::AgentError;

/// Everything a run has done and has still to do: the conversation, the tool block's
/// request (a forced choice, the tools search revealed), what was counted against the
/// limits, and a turn waiting for a person. Serialize it to store a paused run; deserialize it
/// in any process that has the same toolbox and run it again to resume.
///
/// ```
/// use toolsmith::agent::{Agent, RunState, ScriptedModel};
/// use toolsmith::{Dialect, Toolbox};
/// let agent = Agent::new(Toolbox::new(), Dialect::Anthropic { strict: false }, ScriptedModel::default());
/// let state = agent.start("Hello");
/// let text = toolsmith::serde_json::to_string(&state).unwrap();
/// let back: RunState = toolsmith::serde_json::from_str(&text).unwrap();
/// assert_eq!(back, state);
/// assert_eq!(back.messages().len(), 1);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunState {
    pub(crate) dialect: Dialect,
    pub(crate) messages: Vec<Value>,
    pub(crate) request: ToolRequest,
    pub(crate) turns: u32,
    pub(crate) calls: u32,
    pub(crate) usage: Usage,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) awaiting: Option<Awaiting>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) answer: Option<String>,
}

/// Tokens the provider reported, summed over a run's model requests (a child agent's
/// included).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Input (prompt) tokens, cached ones included.
    pub input_tokens: u64,
    /// Output (completion) tokens, reasoning ones included.
    pub output_tokens: u64,
}

impl Usage {
    /// Both together.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    pub(crate) fn add(&mut self, other: Self) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
    }
}

/// A model turn whose calls are not all answered yet.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Awaiting {
    pub(crate) calls: Vec<ToolCall>,
    /// Each call's id for the run: the provider's, or one the run gave it.
    pub(crate) ids: Vec<String>,
    /// Each call's result as the provider takes it, once it has one.
    pub(crate) results: Vec<Option<Value>>,
    /// The tools the toolbox's search found in this turn.
    pub(crate) found: Vec<String>,
    /// The calls waiting for a person, with their paths.
    pub(crate) pending: Vec<PendingCall>,
    /// What a person decided, to be recorded before the calls run again.
    pub(crate) decisions: Vec<Decision>,
    /// The state of each delegated agent that is waiting, by the parent call's id.
    pub(crate) children: BTreeMap<String, RunState>,
}

/// A call waiting for a person's decision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PendingCall {
    /// The call ids from this run down to the call: one id for a call of this run's model,
    /// `[parent call, child call]` for a call a delegated agent made, and so on.
    pub path: Vec<String>,
    /// The tool, as the model that called it names it.
    pub tool: String,
    /// The arguments as the model sent them.
    pub arguments: Value,
    /// What the call was answered with while it waits.
    pub message: String,
}

/// A person's decision on a [`PendingCall`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Decision {
    pub(crate) call_id: String,
    /// `None`: approved; the reason it was declined otherwise.
    pub(crate) denied: Option<String>,
}

impl RunState {
    pub(crate) fn new(dialect: Dialect, messages: Vec<Value>, request: ToolRequest) -> Self {
        Self {
            dialect,
            messages,
            request,
            turns: 0,
            calls: 0,
            usage: Usage::default(),
            awaiting: None,
            answer: None,
        }
    }

    /// The conversation so far, in the provider's shape.
    #[must_use]
    pub fn messages(&self) -> &[Value] {
        &self.messages
    }

    /// The dialect the run speaks.
    #[must_use]
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// Model requests made.
    #[must_use]
    pub fn turns(&self) -> u32 {
        self.turns
    }

    /// Tool calls answered.
    #[must_use]
    pub fn calls(&self) -> u32 {
        self.calls
    }

    /// Tokens reported.
    #[must_use]
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// The model's answer, once it gave one.
    #[must_use]
    pub fn answer(&self) -> Option<&str> {
        self.answer.as_deref()
    }

    /// The calls waiting for a person.
    #[must_use]
    pub fn pending(&self) -> &[PendingCall] {
        self.awaiting
            .as_ref()
            .map_or(&[][..], |awaiting| &awaiting.pending)
    }

    /// Approves the waiting call at `path` (a [`PendingCall::path`]); the approval is
    /// recorded with the toolbox's approver when the run goes on.
    ///
    /// # Errors
    ///
    /// [`AgentError::NotPending`] when no call waits at `path`.
    pub fn approve(&mut self, path: &[String]) -> Result<(), AgentError> {
        self.decide(path, None)
    }

    /// Declines the waiting call at `path` for `reason`: the model is told, and the call never
    /// runs.
    ///
    /// # Errors
    ///
    /// [`AgentError::NotPending`] when no call waits at `path`.
    pub fn deny(&mut self, path: &[String], reason: impl Into<String>) -> Result<(), AgentError> {
        self.decide(path, Some(reason.into()))
    }

    fn decide(&mut self, path: &[String], denied: Option<String>) -> Result<(), AgentError> {
        let not_pending = || AgentError::NotPending(path.join("/"));
        let awaiting = self.awaiting.as_mut().ok_or_else(not_pending)?;
        if !awaiting.pending.iter().any(|p| p.path == path) {
            return Err(not_pending());
        }
        match path {
            [id] => {
                awaiting.decisions.retain(|d| d.call_id != *id);
                awaiting.decisions.push(Decision {
                    call_id: id.clone(),
                    denied,
                });
                Ok(())
            }
            [parent, rest @ ..] => awaiting
                .children
                .get_mut(parent)
                .ok_or_else(not_pending)?
                .decide(rest, denied),
            [] => Err(not_pending()),
        }
    }
}

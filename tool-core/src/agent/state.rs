//! A run's state: plain data, serialized to be stored and resumed in another process.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::dialect::Dialect;
use crate::provider::{ToolCall, ToolRequest};

use super::error::AgentError;
use crate::policy::Verdict;

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
    /// The tool results the model is shown as previews ([`Trim`](super::Trim)): a message's
    /// index and a result's index in it. Kept so that a result once trimmed stays trimmed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) trimmed: Vec<(usize, usize)>,
    /// Whose run it is, and which run: set when it first runs, and checked on every resume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) owner: Option<Owner>,
    /// The provider's container the run's programs run in (Anthropic's `container.id`):
    /// sent with each later request, since a program's pending calls are answered there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) container: Option<String>,
    /// How many times the run was kept in a checkpoint store: a kept run newer than the one
    /// in a worker's hands is the one it goes on with.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) version: u64,
    /// The lease of the worker running it now (never stored).
    #[serde(skip)]
    pub(crate) held: Option<super::checkpoints::Held>,
    /// An HMAC-SHA256, under the toolbox state's key, of everything above: a state edited
    /// outside the API, or sealed by a toolbox with another key, is refused.
    #[serde(default)]
    pub(crate) seal: String,
}

/// The principal a run belongs to and its run id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Owner {
    pub(crate) principal: Option<String>,
    pub(crate) run_id: String,
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
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Awaiting {
    pub(crate) calls: Vec<ToolCall>,
    /// What the request these calls answer offered the model.
    pub(crate) offer: crate::provider::Offer,
    /// The step of that request.
    pub(crate) step: RunStep,
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
    /// The task each long-running call runs as, by the call's id, until its result is taken.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) tasks: BTreeMap<String, String>,
    /// The `caller` of each call a program the provider ran made, by the call's id: those
    /// are answered into the program.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) programs: BTreeMap<String, Value>,
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
    /// The arguments the call will run with, as the approval gate read them (after any
    /// repair and input guard; parameters marked `#[arg(sensitive)]` shown as
    /// `"[redacted]"`): what a person approves is what runs.
    pub arguments: Value,
    /// The hash the decision binds (`sha256:` + hex of the canonical arguments).
    #[serde(default)]
    pub arguments_hash: String,
    /// What was changed in the model's arguments before they were read (a repair, an input
    /// guard's rewrite); empty when nothing was.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repairs: Vec<String>,
    /// What the call was answered with while it waits.
    pub message: String,
    /// The call signed for a person's decision made elsewhere: a UI shows the call and
    /// sends this back with the decision ([`Agent::decide_signed`](super::Agent::decide_signed)),
    /// which refuses a token forged, altered or signed with another key. It names the run,
    /// its principal, the call's path, the tool and the arguments' hash.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub token: String,
    /// The tool's registered name, which the decision binds.
    #[serde(default)]
    pub(crate) registered: String,
}

/// A person's decision on a [`PendingCall`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Decision {
    pub(crate) call_id: String,
    /// `None`: approved; the reason it was declined otherwise.
    pub(crate) denied: Option<String>,
    /// Who decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) approver: Option<String>,
    /// Why an approval was given (a denial's reason is `denied`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reason: Option<String>,
}

impl Decision {
    /// `verdict` on the call `call_id`.
    pub(crate) fn of(verdict: &Verdict, call_id: String) -> Self {
        Self {
            call_id,
            denied: verdict.denied.clone(),
            approver: verdict.approver.clone(),
            reason: verdict.reason.clone(),
        }
    }
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
            container: None,
            trimmed: Vec::new(),
            owner: None,
            version: 0,
            held: None,
            seal: String::new(),
        }
    }

    /// An HMAC-SHA256 under `key` of the state's content (everything but the seal).
    fn keyed(&self, key: &[u8; 32]) -> Option<hmac::Hmac<sha2::Sha256>> {
        keyed_content(key, &self.content()?)
    }

    /// The state's content (everything but the seal), as canonical JSON.
    fn content(&self) -> Option<String> {
        serde_json::to_value(self).ok().map(without_seal)
    }

    /// [`check_seal`](Self::check_seal) for a state read from `raw`, the value a store kept:
    /// the seal must hold, and `raw` must hold nothing but the state (no field the state does
    /// not have, which reading would drop and the seal would not see).
    pub(crate) fn check_stored(&self, key: &[u8; 32], raw: Value) -> Result<(), AgentError> {
        let content = self.content();
        self.check_seal_of(key, content.as_deref())?;
        match content {
            Some(content) if content == without_seal(raw) => Ok(()),
            _ => Err(AgentError::Sealed(
                "the run's checkpoint cannot be resumed: it holds fields a run state does not have (it was changed in the store)"
                    .to_owned(),
            )),
        }
    }

    /// Seals the state as it is under `key`.
    pub(crate) fn seal_with(&mut self, key: &[u8; 32]) {
        use hmac::Mac;
        self.seal.clear();
        if let Some(mac) = self.keyed(key) {
            crate::json::canonical::push_hex(&mut self.seal, &mac.finalize().into_bytes());
        }
    }

    /// Whether the seal holds under `key`, compared in constant time.
    pub(crate) fn check_seal(&self, key: &[u8; 32]) -> Result<(), AgentError> {
        self.check_seal_of(key, self.content().as_deref())
    }

    /// [`check_seal`](Self::check_seal) with the state's `content`, made once by the caller.
    fn check_seal_of(&self, key: &[u8; 32], content: Option<&str>) -> Result<(), AgentError> {
        use hmac::Mac;
        let refused = |why: &str| {
            Err(AgentError::Sealed(format!(
                "the run's state cannot be resumed: {why}. A state is sealed by the agent that ran it; it cannot be edited, and a process that resumes it needs the same key (give every process `State::with_key` with one secret)"
            )))
        };
        if self.seal.is_empty() {
            return refused("it carries no seal");
        }
        let Some(seal) = crate::keys::decode_hex(&self.seal, 64) else {
            return refused("its seal is not one this library writes");
        };
        let Some(mac) = content.and_then(|content| keyed_content(key, content)) else {
            return refused("its content cannot be read");
        };
        if mac.verify_slice(&seal).is_err() {
            return refused(
                "its seal does not match its content (it was changed since it was sealed, or sealed with another key)",
            );
        }
        Ok(())
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

    /// Whose run it is, once it has run: the principal it belongs to (`None`: anonymous or
    /// not run yet). [`run_id`](Self::run_id) is its run.
    ///
    /// ```
    /// use toolsmith::agent::{Agent, ScriptedModel};
    /// use toolsmith::serde_json::json;
    /// use toolsmith::{Dialect, ToolContext, Toolbox};
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let model = ScriptedModel::new([json!({"role": "assistant", "stop_reason": "end_turn",
    ///     "content": [{"type": "text", "text": "Hi."}]})]);
    /// let agent = Agent::new(Toolbox::new(), Dialect::Anthropic { strict: false }, model);
    /// let mut state = agent.start("Hello");
    /// assert_eq!(state.run_id(), None);
    /// agent.run(&mut state, &ToolContext::new().with_principal("ada")).await.unwrap();
    /// assert_eq!(state.principal(), Some("ada"));
    /// assert!(state.run_id().unwrap().starts_with("run_"));
    /// # });
    /// ```
    #[must_use]
    pub fn principal(&self) -> Option<&str> {
        self.owner.as_ref().and_then(|o| o.principal.as_deref())
    }

    /// The run's id, once it has run: the context's, or one the run made for itself.
    #[must_use]
    pub fn run_id(&self) -> Option<&str> {
        self.owner.as_ref().map(|o| o.run_id.as_str())
    }

    /// Records a decision on the waiting call at `path` (sealed by the agent that records it).
    pub(crate) fn decide(&mut self, path: &[String], verdict: &Verdict) -> Result<(), AgentError> {
        let not_pending = || AgentError::NotPending(path.join("/"));
        let awaiting = self.awaiting.as_mut().ok_or_else(not_pending)?;
        if !awaiting.pending.iter().any(|p| p.path == path) {
            return Err(not_pending());
        }
        match path {
            [id] => {
                awaiting.decisions.retain(|d| d.call_id != *id);
                awaiting.decisions.push(Decision::of(verdict, id.clone()));
                Ok(())
            }
            [parent, rest @ ..] => match awaiting.children.get_mut(parent) {
                Some(child) => child.decide(rest, verdict),
                // A call a program made: the decision goes with the program's call, which
                // hands it to the call when the program runs again.
                None => {
                    awaiting.decisions.retain(|d| d.call_id != *parent);
                    awaiting
                        .decisions
                        .push(Decision::of(verdict, parent.clone()));
                    Ok(())
                }
            },
            [] => Err(not_pending()),
        }
    }
}

/// Which turn of a run a request or a call belongs to: in the context of each, for a
/// [`Prepare`](crate::toolset::Prepare) step that offers tools by turn. The calls answering
/// a request carry that request's step (the turn the model was offered the tools in), also
/// when they run after a pause.
///
/// ```
/// use toolsmith::agent::RunStep;
/// use toolsmith::ToolContext;
///
/// // A context as the loop gives the calls of a run's second request, for a prepare step's tests.
/// let ctx = ToolContext::new().with_extension(RunStep::new(1, 2));
/// assert_eq!(ctx.get::<RunStep>().unwrap().turn, 1);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RunStep {
    /// Model requests made before this one.
    pub turn: u32,
    /// Tool calls answered before this turn.
    pub calls: u32,
}

impl RunStep {
    /// The step of a run's request `turn` (0 for the first), after `calls` answered calls.
    #[must_use]
    pub fn new(turn: u32, calls: u32) -> Self {
        Self { turn, calls }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl PendingCall {
    /// What a decision on this call binds: the tool's registered name and the arguments'
    /// hash, or (for a call the approval gate did not read) the name the model called.
    pub(crate) fn binding(&self) -> (&str, &str) {
        if self.registered.is_empty() {
            (&self.tool, &self.arguments_hash)
        } else {
            (&self.registered, &self.arguments_hash)
        }
    }
}

impl RunState {
    /// The decision the state carries on the call at `path`, if any.
    fn decision_at(&self, path: &[String]) -> Option<&Decision> {
        let awaiting = self.awaiting.as_ref()?;
        match path {
            [id] => awaiting.decisions.iter().find(|d| d.call_id == *id),
            [parent, rest @ ..] => match awaiting.children.get(parent) {
                Some(child) => child.decision_at(rest),
                None => awaiting.decisions.iter().find(|d| d.call_id == *parent),
            },
            [] => None,
        }
    }

    /// Whether a kept decision (`verdict` on the call at `path`, bound to `tool` and `hash`)
    /// is one this state should take: the call waits here with that binding, and the state
    /// does not carry that very decision already.
    pub(crate) fn takes_decision(
        &self,
        path: &[String],
        tool: &str,
        hash: &str,
        verdict: &Verdict,
    ) -> bool {
        let waits = self
            .pending()
            .iter()
            .any(|p| p.path == path && p.binding() == (tool, hash));
        let carried = self.decision_at(path).is_some_and(|d| {
            d.denied == verdict.denied
                && d.approver == verdict.approver
                && d.reason == verdict.reason
        });
        waits && !carried
    }

    /// The top-level decisions of `mine` (a state in a worker's hands) on calls that still
    /// wait in this one (the run as kept, newer) with the same binding.
    pub(crate) fn carry_decisions(&mut self, mine: &RunState) {
        let Some(theirs) = mine.awaiting.as_ref() else {
            return;
        };
        for decision in &theirs.decisions {
            let path = [decision.call_id.clone()];
            let Some(binding) = theirs
                .pending
                .iter()
                .find(|p| p.path == path)
                .map(|p| (p.binding().0.to_owned(), p.binding().1.to_owned()))
            else {
                continue;
            };
            let verdict = Verdict::of_parts(
                decision.denied.clone(),
                decision.approver.clone(),
                decision.reason.clone(),
            );
            if self.takes_decision(&path, &binding.0, &binding.1, &verdict) {
                let _ = self.decide(&path, &verdict);
            }
        }
    }
}

/// `value` without its `seal`, as canonical JSON.
fn without_seal(mut value: Value) -> String {
    if let Value::Object(map) = &mut value {
        map.remove("seal");
    }
    crate::json::canonical::canonical_json(&value)
}

/// An HMAC-SHA256 under `key` of a state's `content`.
fn keyed_content(key: &[u8; 32], content: &str) -> Option<hmac::Hmac<sha2::Sha256>> {
    use hmac::Mac;
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(key).ok()?;
    mac.update(b"toolsmith run state\n");
    mac.update(content.as_bytes());
    Some(mac)
}

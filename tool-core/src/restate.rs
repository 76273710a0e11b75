//! The agent loop on [Restate](https://restate.dev), a durable execution engine: each run is
//! a Restate workflow whose model requests and tool calls are durable steps
//! (`ctx.run`), and whose decisions are durable promises. When the service process dies,
//! Restate calls the run again on a live one, which reads every kept step back and goes on
//! from the first step that was not kept: the model is not asked again for a turn it
//! answered, and a tool does not run again for a call that finished (one that died inside
//! runs again, with the same idempotency key).
//!
//! [`AgentWorkflow`] is the service; bind it to restate-sdk's endpoint (re-exported as
//! [`sdk`]) and register the endpoint with the Restate server. Its handlers, over Restate's
//! HTTP ingress:
//!
//! | handler | context | input | output |
//! |---|---|---|---|
//! | `run` | the workflow's own, once per run id (the workflow key) | [`RunRequest`] | [`RunOutcome`] |
//! | `pending` | shared | none | the [`PendingCall`]s the run waits on, each with its `token` |
//! | `decide` | shared | [`Decision`] | none; a forged, altered or stale token is refused |
//!
//! The run's principal comes from its [`RunRequest`]: Restate's ingress must only be
//! reachable by callers you trust to name it (Restate's own advice is an authenticating proxy
//! in front of the ingress). A decision needs the call's token, which is signed with the
//! toolbox state's key, bound to the run, the call and its arguments' hash, and good for one
//! decision.
//!
//! ```no_run
//! use toolsmith::agent::{Agent, ScriptedModel};
//! use toolsmith::restate::{sdk, AgentWorkflow};
//! use toolsmith::state::State;
//! use toolsmith::{Dialect, Toolbox};
//!
//! # async fn serve() {
//! let toolbox = Toolbox::new()
//!     .with_state(State::memory().with_key("a secret of at least 32 random bytes, shared by every replica"));
//! let agent = Agent::new(toolbox, Dialect::Anthropic { strict: false }, ScriptedModel::default());
//! let endpoint = sdk::endpoint::Endpoint::builder().bind(AgentWorkflow::new(agent)).build();
//! sdk::http_server::HttpServer::new(endpoint)
//!     .listen_and_serve("127.0.0.1:9080".parse().unwrap())
//!     .await;
//! # }
//! ```
//!
//! Then register it (`POST /deployments {"uri": "http://127.0.0.1:9080"}` on the admin port)
//! and start a run with `POST /ToolsmithAgent/<run-id>/run/send` on the ingress. See
//! docs/deployment.md for when to use this and when the built-in checkpoints.

use restate_sdk::prelude::*;
use serde::{Deserialize, Serialize};

use crate::agent::{Agent, AgentError, Journal, PendingCall, RunState, Step, Stop};
use crate::context::ToolContext;
use crate::policy::Verdict;
use crate::tool::BoxFuture;

pub use restate_sdk as sdk;

/// The state key under which a paused run lists the calls it waits on.
const PENDING: &str = "pending";

/// What starts a run: the user's prompt, and whose run it is.
///
/// ```
/// use toolsmith::restate::RunRequest;
/// let request: RunRequest = toolsmith::serde_json::from_str(r#"{"prompt": "Tidy up.", "principal": "ada"}"#).unwrap();
/// assert_eq!(request.principal.as_deref(), Some("ada"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RunRequest {
    /// The user's message that opens the run.
    pub prompt: String,
    /// Whose run it is: the calls run as this principal, and its decisions' tokens name it.
    #[serde(default)]
    pub principal: Option<String>,
}

impl RunRequest {
    /// A run of `prompt`, for nobody in particular.
    #[must_use]
    pub fn new(prompt: impl Into<String>) -> Self {
        Self {
            prompt: prompt.into(),
            principal: None,
        }
    }

    /// The run is `principal`'s.
    #[must_use]
    pub fn for_principal(mut self, principal: impl Into<String>) -> Self {
        self.principal = Some(principal.into());
        self
    }
}

/// How a run ended.
///
/// ```
/// use toolsmith::restate::RunOutcome;
/// let outcome: RunOutcome = toolsmith::serde_json::from_str(
///     r#"{"answer": "Done.", "limit": null, "turns": 2, "calls": 1, "tokens": 149}"#).unwrap();
/// assert_eq!(outcome.answer.as_deref(), Some("Done."));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RunOutcome {
    /// The model's final answer, when it gave one.
    pub answer: Option<String>,
    /// The limit the run reached instead (`turns`, `calls`, `tokens`).
    pub limit: Option<String>,
    /// Model requests made.
    pub turns: u32,
    /// Tool calls answered.
    pub calls: u32,
    /// Tokens spent, input and output.
    pub tokens: u64,
}

/// A person's decision on a waiting call, as it comes to the `decide` handler: the call's
/// token (from the `pending` handler) and the verdict, with who decided and why.
///
/// ```
/// use toolsmith::restate::Decision;
/// let no = Decision::deny("token…", "ticket 7 is evidence").by("lin@example.com");
/// assert!(!no.approve);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Decision {
    /// The waiting call's token, as `pending` listed it.
    pub token: String,
    /// Whether the call may run.
    pub approve: bool,
    /// Who decided.
    #[serde(default)]
    pub approver: Option<String>,
    /// Why; for a denial, what the model is told.
    #[serde(default)]
    pub reason: Option<String>,
}

impl Decision {
    /// An approval of the call `token` names.
    #[must_use]
    pub fn approve(token: impl Into<String>) -> Self {
        Self {
            token: token.into(),
            approve: true,
            approver: None,
            reason: None,
        }
    }

    /// A denial of the call `token` names, and why.
    #[must_use]
    pub fn deny(token: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            token: token.into(),
            approve: false,
            approver: None,
            reason: Some(reason.into()),
        }
    }

    /// Who decided.
    #[must_use]
    pub fn by(mut self, approver: impl Into<String>) -> Self {
        self.approver = Some(approver.into());
        self
    }

    /// Why.
    #[must_use]
    pub fn because(mut self, reason: impl Into<String>) -> Self {
        self.reason = Some(reason.into());
        self
    }

    fn verdict(&self) -> Verdict {
        let verdict = if self.approve {
            Verdict::approve()
        } else {
            Verdict::deny(self.reason.clone().unwrap_or_default())
        };
        let verdict = match &self.approver {
            Some(approver) => verdict.by(approver.clone()),
            None => verdict,
        };
        match (&self.reason, self.approve) {
            (Some(reason), true) => verdict.because(reason.clone()),
            _ => verdict,
        }
    }
}

/// The agent loop as a Restate workflow named `ToolsmithAgent` (see the [module](self)).
pub struct AgentWorkflow {
    agent: Agent,
}

impl AgentWorkflow {
    /// The workflow of `agent`'s runs.
    ///
    /// # Panics
    ///
    /// When the agent's toolbox has no state key ([`State::with_key`](crate::state::State::with_key)):
    /// every replica, and every process Restate calls a run again on, must seal runs and sign
    /// decisions with the same key.
    #[must_use]
    pub fn new(agent: Agent) -> Self {
        assert!(
            agent.toolbox().has_state_key(),
            "a run on Restate goes on in whichever process Restate calls: give the toolbox a state key shared by every replica (State::with_key)"
        );
        Self { agent }
    }
}

/// A handler's refusal: Restate does not retry it.
fn refuse(code: u16, message: impl Into<String>) -> HandlerError {
    TerminalError::new_with_code(code, message).into()
}

/// An agent error as the run handler's: a store that could not be reached is retried, what
/// another try cannot change ends the run.
fn failed(err: AgentError) -> HandlerError {
    match err {
        AgentError::Approval(_) | AgentError::Checkpoint(_) | AgentError::Tasks(_) => {
            HandlerError::from(err.to_string())
        }
        err => refuse(500, err.to_string()),
    }
}

/// The promise a waiting call's decision resolves.
fn promise_name(path: &[String]) -> String {
    let mut name = String::from("decision");
    for step in path {
        name.push(':');
        name.push_str(&step.replace('\\', "\\\\").replace(':', "\\:"));
    }
    name
}

/// Restate's journal, as the run's journal: each step a `ctx.run`.
struct RestateJournal<'c, 'ctx> {
    ctx: &'c WorkflowContext<'ctx>,
}

/// A step that failed, for Restate to retry.
#[derive(Debug)]
struct StepFailed(String);

impl std::fmt::Display for StepFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StepFailed {}

impl Journal for RestateJournal<'_, '_> {
    fn step<'a>(&'a self, name: String, step: Step<'a>) -> BoxFuture<'a, Result<String, String>> {
        let ctx: &'a WorkflowContext<'a> = self.ctx;
        Box::pin(async move {
            ctx.run(
                move || async move { step().await.map_err(|m| HandlerError::from(StepFailed(m))) },
            )
            .name(name)
            .await
            .map_err(|err| err.message().to_owned())
        })
    }
}

#[restate_sdk::workflow(name = "ToolsmithAgent", client_visibility = "pub(crate)")]
impl AgentWorkflow {
    /// Runs the agent on the request's prompt to its answer or a limit, waiting for a
    /// person's decision (a durable promise) wherever a call needs one.
    #[handler]
    async fn run(
        &self,
        ctx: WorkflowContext<'_>,
        request: Json<RunRequest>,
    ) -> Result<Json<RunOutcome>, HandlerError> {
        let Json(request) = request;
        let run_id = ctx.key().to_owned();
        let mut tool_ctx = ToolContext::new().with_run_id(run_id.as_str());
        if let Some(principal) = &request.principal {
            tool_ctx = tool_ctx.with_principal(principal.as_str());
        }
        let mut state = self.agent.start(&request.prompt);
        loop {
            let stop = {
                let journal = RestateJournal { ctx: &ctx };
                self.agent
                    .run_journaled(&mut state, &tool_ctx, &journal)
                    .await
                    .map_err(failed)?
            };
            match stop {
                Stop::Paused(pending) => {
                    ctx.set(PENDING, Json(pending.clone()));
                    for call in &pending {
                        let name = promise_name(&call.path);
                        let Json(decision): Json<Decision> = ctx.promise(&name).await?;
                        self.agent
                            .decide(&mut state, &call.path, &decision.verdict())
                            .map_err(failed)?;
                    }
                    ctx.clear(PENDING);
                }
                Stop::Answered(answer) => return Ok(Json(outcome(&state, Some(answer), None))),
                Stop::Limit(limit) => {
                    let limit = format!("{limit:?}").to_lowercase();
                    return Ok(Json(outcome(&state, None, Some(limit))));
                }
                Stop::Waiting(_) => {
                    return Err(refuse(
                        500,
                        "a journaled run has no tasks to wait on: its long-running calls are steps",
                    ));
                }
            }
        }
    }

    /// The calls the run waits on, each with the token a decision on it needs.
    #[handler]
    async fn pending(
        &self,
        ctx: SharedWorkflowContext<'_>,
    ) -> Result<Json<Vec<PendingCall>>, HandlerError> {
        let pending: Option<Json<Vec<PendingCall>>> = ctx.get(PENDING).await?;
        Ok(pending.unwrap_or(Json(Vec::new())))
    }

    /// Decides on one waiting call: its token must be one this workflow signed, for this
    /// run, for a call that waits now and has no decision yet.
    #[handler]
    async fn decide(
        &self,
        ctx: SharedWorkflowContext<'_>,
        decision: Json<Decision>,
    ) -> Result<(), HandlerError> {
        let Json(decision) = decision;
        let signed = self
            .agent
            .signed_call(&decision.token)
            .map_err(|err| refuse(403, err.to_string()))?;
        if signed.run != ctx.key() {
            return Err(refuse(403, "the token names a call of another run"));
        }
        let pending: Option<Json<Vec<PendingCall>>> = ctx.get(PENDING).await?;
        let waits = pending.is_some_and(|Json(pending)| {
            pending
                .iter()
                .any(|p| p.path == signed.path && p.token == decision.token)
        });
        if !waits {
            return Err(refuse(
                409,
                "no call of this run waits for a decision with this token",
            ));
        }
        let name = promise_name(&signed.path);
        let decided: Option<Json<Decision>> = ctx.peek_promise(&name).await?;
        if decided.is_some() {
            return Err(refuse(409, "this call was decided already"));
        }
        ctx.resolve_promise(&name, Json(decision));
        Ok(())
    }
}

fn outcome(state: &RunState, answer: Option<String>, limit: Option<String>) -> RunOutcome {
    RunOutcome {
        answer,
        limit,
        turns: state.turns(),
        calls: state.calls(),
        tokens: state.usage().total(),
    }
}

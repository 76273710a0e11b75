//! The loop: ask the model, answer its calls, append, and go on.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::context::ToolContext;
use crate::dialect::Dialect;
use crate::error::ErrorCode;
use crate::outcome::ToolOutcome;
use crate::policy::decided::Decided;
use crate::provider::{ToolCall, ToolRequest};
use crate::toolbox::{ProviderToolbox, Toolbox};

use super::budget::{ParentBudget, RunBudget};
use super::children::Children;
use super::client::{ModelClient, ModelError, ModelRequest};
use super::conversation;
use super::error::AgentError;
use super::state::{Awaiting, Owner, PendingCall, RunState, RunStep, Usage};
use crate::policy::Verdict;

/// Where a run stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Model requests per run (default 50).
    pub max_turns: u32,
    /// Tool calls per run (default 200). A turn whose calls would pass it is not run.
    pub max_calls: u32,
    /// Tokens the provider reports per run, input and output together (default: none).
    pub max_tokens: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_turns: 50,
            max_calls: 200,
            max_tokens: None,
        }
    }
}

/// The limit a run stopped at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Limit {
    /// [`Limits::max_turns`].
    Turns,
    /// [`Limits::max_calls`].
    Calls,
    /// [`Limits::max_tokens`].
    Tokens,
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Turns => "turn",
            Self::Calls => "tool call",
            Self::Tokens => "token",
        })
    }
}

/// Why [`Agent::run`] returned. Nothing is lost at any of them: the state holds the run, and
/// running it again goes on from there (after a person decided, or with higher limits).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Stop {
    /// The model answered in text.
    Answered(String),
    /// Calls wait for a person ([`Agent::approve`], [`Agent::deny`], or a decision
    /// recorded with the toolbox's approver), then run again.
    Paused(Vec<PendingCall>),
    /// A limit was reached before the model answered. A turn whose calls would pass the call
    /// limit waits, unrun, in the state.
    Limit(Limit),
    /// Calls of long-running tools (`#[tool(long_running)]`) run as tasks, and the turn
    /// waits on them: their call ids. Nothing is sent to the model until every call of the
    /// turn has its result; run the state again (here or in any process sharing the task
    /// store) and it goes on once they are done.
    Waiting(Vec<String>),
}

/// What happens in a run, as it happens, for a UI ([`Agent::with_events`]).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum AgentEvent {
    /// A request goes to the model.
    ModelRequested {
        /// Which request of the run (0 for the first).
        turn: u32,
    },
    /// The model answered.
    ModelAnswered {
        /// Which request of the run.
        turn: u32,
        /// Its text (empty when it only called tools).
        text: String,
        /// How many calls it made.
        calls: usize,
        /// The tokens it reported.
        usage: Usage,
    },
    /// A call was answered.
    ToolFinished {
        /// The call, as the model made it.
        call: ToolCall,
        /// Its outcome's envelope: what the model reads.
        envelope: String,
        /// For a result with a view of its own ([`Viewed`](crate::output::Viewed)): the
        /// typed value's JSON, which the model does not read. `None` otherwise.
        value: Option<String>,
        /// What the tool handed the application beside its result; never sent to the model.
        artifacts: Vec<crate::outcome::Artifact>,
    },
    /// A running call reported progress ([`ToolContext::progress`]). Never sent to the
    /// model.
    ToolProgress {
        /// The call's id.
        call_id: String,
        /// How far it is.
        progress: f64,
        /// Of how much, when known.
        total: Option<f64>,
        /// What it is doing.
        message: Option<String>,
    },
    /// A running call handed over a preliminary result ([`ToolContext::partial`]). Never
    /// sent to the model, which reads the call's result only.
    ToolPartial {
        /// The call's id.
        call_id: String,
        /// What the tool has so far, as JSON.
        value: Value,
    },
    /// Calls wait for a person.
    Paused(Vec<PendingCall>),
    /// The provider ran tools of its own in this turn ([`HostedTool`](crate::provider::HostedTool)):
    /// their calls and results, as the response holds them.
    Hosted {
        /// Which request of the run.
        turn: u32,
        /// The calls and results.
        items: Vec<crate::provider::HostedItem>,
    },
}

/// A request whose hosted tools would hand the loop work it cannot do (a computer's actions,
/// approving a remote MCP server's calls) is refused before the model is asked.
fn needs_the_application(
    dialect: Dialect,
    hosted: &[crate::provider::HostedTool],
) -> Option<crate::provider::RequestError> {
    use crate::provider::HostedTool;
    hosted.iter().find_map(|tool| {
        let why = match tool {
            HostedTool::ComputerUse(_) => {
                "the agent loop does not carry out a computer's actions; run computer-use turns yourself, reading them with `provider::hosted_items`"
            }
            HostedTool::RemoteMcp(server) if server.require_approval => {
                "the agent loop cannot answer the provider's approval requests; approve through the toolbox (an MCP toolset), or set `require_approval: false`"
            }
            // A raw entry is checked as its typed form is.
            HostedTool::Raw(raw) => match raw.kind() {
                crate::provider::RawKind::ComputerUse => {
                    "the agent loop does not carry out a computer's actions; run computer-use turns yourself, reading them with `provider::hosted_items`"
                }
                crate::provider::RawKind::RemoteMcp { asks: true } => {
                    "the agent loop cannot answer the provider's approval requests; approve through the toolbox (an MCP toolset), or write the server as `HostedTool::RemoteMcp` with `require_approval: false`"
                }
                _ => return None,
            },
            _ => return None,
        };
        Some(crate::provider::RequestError::HostedSetting {
            provider: dialect.provider(),
            tool: tool.kind(),
            why: why.to_owned(),
        })
    })
}

type Events = Arc<dyn Fn(&AgentEvent) + Send + Sync>;

/// What a call reports, as the run's events under the call's id.
fn reported(
    events: &Events,
    call_id: &str,
) -> Arc<dyn Fn(super::progress::Reported<'_>) + Send + Sync> {
    let events = Arc::clone(events);
    let call_id = call_id.to_owned();
    Arc::new(move |reported| {
        events(&match reported {
            super::progress::Reported::Progress {
                progress,
                total,
                message,
            } => AgentEvent::ToolProgress {
                call_id: call_id.clone(),
                progress,
                total,
                message: message.map(str::to_owned),
            },
            super::progress::Reported::Partial(value) => AgentEvent::ToolPartial {
                call_id: call_id.clone(),
                value: value.clone(),
            },
        });
    })
}

/// A loop around a model client: a toolbox, the dialect its provider speaks, the client, the
/// first request's tool block and the run's limits. Cheap to clone; one agent runs any number
/// of runs, each in its own [`RunState`].
#[derive(Clone)]
pub struct Agent {
    pub(super) toolbox: Arc<Toolbox>,
    dialect: Dialect,
    client: Arc<dyn ModelClient>,
    request: ToolRequest,
    limits: Limits,
    events: Option<Events>,
    trim: Option<super::Trim>,
    pub(super) checkpoints: Option<super::checkpoints::Checkpoints>,
    /// The agent's name, for its `invoke_agent` span.
    name: Option<String>,
}

impl Agent {
    /// An agent over `toolbox`, speaking `dialect` to `client`.
    ///
    /// # Panics
    ///
    /// For [`Dialect::Mcp`], which has tools but no model to ask.
    #[must_use]
    pub fn new(toolbox: Toolbox, dialect: Dialect, client: impl ModelClient) -> Self {
        assert!(
            dialect != Dialect::Mcp,
            "an agent talks to a model provider; MCP serves tools (see toolsmith::mcp)"
        );
        Self {
            toolbox: Arc::new(toolbox),
            dialect,
            client: Arc::new(client),
            request: ToolRequest::default(),
            limits: Limits::default(),
            events: None,
            trim: None,
            checkpoints: None,
            name: None,
        }
    }

    /// Names the agent: its runs are `invoke_agent {name}` spans with `gen_ai.agent.name`
    /// ([`telemetry`](crate::telemetry)).
    ///
    /// ```
    /// use toolsmith::agent::{Agent, ScriptedModel};
    /// use toolsmith::{Dialect, Toolbox};
    /// let agent = Agent::new(Toolbox::new(), Dialect::Anthropic { strict: false }, ScriptedModel::new([]))
    ///     .with_name("triage");
    /// assert_eq!(agent.name(), Some("triage"));
    /// ```
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The agent's name, if it has one.
    #[must_use]
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The first request's tool block (a forced choice, a subset, deferred tools); the
    /// choice is reset after calls as its [`Reset`](crate::provider::Reset) says.
    #[must_use]
    pub fn with_request(mut self, request: ToolRequest) -> Self {
        self.request = request;
        self
    }

    /// Where runs stop ([`Limits`]).
    #[must_use]
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Shows the model its older tool results as previews, as `trim` says ([`Trim`]: pairs
    /// stay whole, the cached prefix holds, the run's state keeps every result whole). Where
    /// the loop trims (not the provider), the toolbox gains `read_earlier_result`, with which
    /// the model reads a shortened result whole from the run's copy, a page at a time; each
    /// preview says how.
    ///
    /// # Panics
    ///
    /// When the toolbox already has a tool named `read_earlier_result`.
    ///
    /// [`Trim`]: super::Trim
    #[must_use]
    pub fn with_trim(mut self, trim: super::Trim) -> Self {
        if !trim.by_provider(self.dialect) {
            let mut toolbox = (*self.toolbox).clone();
            if let Err(err) = toolbox.register(super::earlier::ReadEarlier::new()) {
                panic!("Agent::with_trim: {err}");
            }
            self.toolbox = Arc::new(toolbox);
        }
        self.trim = Some(trim);
        self
    }

    /// Receives each [`AgentEvent`] as it happens (on the run's task: do not block).
    #[must_use]
    pub fn with_events(mut self, events: impl Fn(&AgentEvent) + Send + Sync + 'static) -> Self {
        self.events = Some(Arc::new(events));
        self
    }

    /// The toolbox.
    #[must_use]
    pub fn toolbox(&self) -> &Toolbox {
        &self.toolbox
    }

    /// The dialect.
    #[must_use]
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// A new run that starts with the user's `prompt`.
    #[must_use]
    pub fn start(&self, prompt: &str) -> RunState {
        self.start_with(vec![conversation::user(self.dialect, prompt)])
    }

    /// A new run that starts with a conversation in the provider's shape.
    #[must_use]
    pub fn start_with(&self, messages: Vec<Value>) -> RunState {
        let mut state = RunState::new(self.dialect, messages, self.request.clone());
        state.seal_with(self.key());
        state
    }

    /// The key runs are sealed with: the toolbox state's.
    pub(super) fn key(&self) -> &[u8; 32] {
        self.toolbox.state_key()
    }

    /// Approves the waiting call at `path` (a [`PendingCall::path`]): the approval binds the
    /// arguments shown in the pending call, and is recorded with the toolbox's approver when
    /// the run goes on. The state is sealed again.
    ///
    /// # Errors
    ///
    /// [`AgentError::NotPending`] when no call waits at `path`; [`AgentError::Sealed`] when
    /// the state was changed outside the API or sealed with another key.
    ///
    /// ```
    /// use toolsmith::agent::{Agent, AgentError, RunState, ScriptedModel, Stop};
    /// use toolsmith::policy::Approvals;
    /// use toolsmith::serde_json::json;
    /// use toolsmith::{tool, Dialect, ToolContext, Toolbox};
    ///
    /// /// Deletes a ticket. Destructive: it cannot be undone. Not for closing tickets.
    /// #[tool(effect = "destructive")]
    /// fn delete_ticket(
    ///     /// The ticket.
    ///     id: u64,
    /// ) -> String {
    ///     format!("ticket {id} deleted")
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let model = ScriptedModel::new([
    ///     json!({"role": "assistant", "stop_reason": "tool_use", "content": [
    ///         {"type": "tool_use", "id": "toolu_1", "name": "delete_ticket", "input": {"id": 7}}]}),
    ///     json!({"role": "assistant", "stop_reason": "end_turn", "content": [
    ///         {"type": "text", "text": "Deleted."}]}),
    /// ]);
    /// let toolbox = Toolbox::new().with(DeleteTicket).with_approver(Approvals::new());
    /// let agent = Agent::new(toolbox, Dialect::Anthropic { strict: false }, model);
    /// let ctx = ToolContext::new().with_principal("ada");
    /// let mut state = agent.start("Delete ticket 7");
    /// let Stop::Paused(pending) = agent.run(&mut state, &ctx).await.unwrap() else { panic!() };
    /// // What the person approves is what will run.
    /// assert_eq!(pending[0].arguments, json!({"id": 7}));
    ///
    /// // A decision typed into the stored JSON breaks the seal: refused.
    /// let mut typed = toolsmith::serde_json::to_value(&state).unwrap();
    /// typed["awaiting"]["decisions"] = json!([{"call_id": "toolu_1", "denied": null}]);
    /// let mut typed: RunState = toolsmith::serde_json::from_value(typed).unwrap();
    /// assert!(matches!(agent.run(&mut typed, &ctx).await, Err(AgentError::Sealed(_))));
    ///
    /// agent.approve(&mut state, &pending[0].path).unwrap();
    /// assert_eq!(agent.run(&mut state, &ctx).await.unwrap(), Stop::Answered("Deleted.".into()));
    /// # });
    /// ```
    pub fn approve(&self, state: &mut RunState, path: &[String]) -> Result<(), AgentError> {
        self.decide(state, path, &Verdict::approve())
    }

    /// Declines the waiting call at `path` for `reason`: the model is told, and the call never
    /// runs. The state is sealed again.
    ///
    /// # Errors
    ///
    /// As [`approve`](Self::approve).
    pub fn deny(
        &self,
        state: &mut RunState,
        path: &[String],
        reason: impl Into<String>,
    ) -> Result<(), AgentError> {
        self.decide(state, path, &Verdict::deny(reason))
    }

    /// Records `verdict` (an approval or a denial, who decided and why) on the waiting call
    /// at `path`. The decision binds the call as it waits (its tool and the hash of its
    /// arguments) and stays in the sealed state until the call has run; the call's audit
    /// record carries the approver and the reason. For a run kept in a checkpoint store,
    /// [`decide_stored`](Self::decide_stored) loads, decides and saves in one step.
    ///
    /// # Errors
    ///
    /// As [`approve`](Self::approve).
    pub fn decide(
        &self,
        state: &mut RunState,
        path: &[String],
        verdict: &Verdict,
    ) -> Result<(), AgentError> {
        state.check_seal(self.key())?;
        state.decide(path, verdict)?;
        state.seal_with(self.key());
        Ok(())
    }

    /// The call a decision token names, its signature checked under the agent's key.
    #[cfg_attr(not(feature = "restate"), allow(dead_code))]
    pub(crate) fn signed_call(&self, token: &str) -> Result<super::token::Signed, AgentError> {
        super::token::read_token(self.key(), token)
    }

    /// Binds a state that has not run to the context's principal and run id (a run id of
    /// its own when the context has none), or checks that a resumed one is resumed by its
    /// principal and under its run id; the context of the run, with the run's id.
    fn bind(&self, state: &mut RunState, ctx: &ToolContext) -> Result<ToolContext, AgentError> {
        let who = |p: Option<&str>| {
            p.map_or_else(
                || "nobody in particular (no principal)".to_owned(),
                |p| format!("`{}`", crate::echo::echo(p)),
            )
        };
        let owner = match &state.owner {
            None => state.owner.insert(Owner {
                principal: ctx.principal().map(str::to_owned),
                run_id: ctx.run_id().map_or_else(
                    || {
                        let mut id = String::from("run_");
                        crate::json::canonical::push_hex(&mut id, &crate::keys::random_key()[..16]);
                        id
                    },
                    str::to_owned,
                ),
            }),
            Some(owner) => {
                if owner.principal.as_deref() != ctx.principal() {
                    return Err(AgentError::NotOwner(format!(
                        "this run belongs to {}, and {} cannot resume it",
                        who(owner.principal.as_deref()),
                        who(ctx.principal())
                    )));
                }
                if let Some(id) = ctx.run_id()
                    && id != owner.run_id
                {
                    return Err(AgentError::NotOwner(format!(
                        "this state is run `{}`, and the context names run `{}`; resume it under its own run id (or none)",
                        crate::echo::echo(&owner.run_id),
                        crate::echo::echo(id)
                    )));
                }
                owner
            }
        };
        Ok(match ctx.run_id() {
            Some(_) => ctx.clone(),
            None => ctx.clone().with_run_id(owner.run_id.clone()),
        })
    }

    fn provider(&self) -> ProviderToolbox<'_> {
        self.toolbox.provider(self.dialect)
    }

    fn emit(&self, event: AgentEvent) {
        if let Some(events) = &self.events {
            events(&event);
        }
    }

    /// Runs until the model answers in text, a call waits for a person, or a limit is
    /// reached. A paused run goes on from where it stopped: the decisions recorded in the
    /// state are given to the toolbox's approver, the waiting calls run again, and calls
    /// answered before the pause are not run twice.
    ///
    /// `ctx` is the context of every call (principal, run id, extensions). The first run
    /// binds the state to the context's principal and run id (one of the run's own when the
    /// context has none); a resume must come from the same principal, and runs under the
    /// state's run id, so approvals and idempotency keys stay the run's and an approved write
    /// never runs twice. The state is sealed whenever the run returns, with the toolbox
    /// state's key: it cannot be edited, and a process that resumes it needs the same key
    /// ([`State::with_key`](crate::state::State::with_key)).
    ///
    /// # Errors
    ///
    /// [`AgentError`] when the model cannot be asked or answers in another shape, the tool
    /// block cannot be built, a decision cannot be recorded, the state is another dialect's,
    /// its seal does not hold ([`AgentError::Sealed`]), or it belongs to another principal or
    /// run ([`AgentError::NotOwner`]).
    pub async fn run(&self, state: &mut RunState, ctx: &ToolContext) -> Result<Stop, AgentError> {
        state.check_seal(self.key())?;
        self.run_sealed(state, ctx, None).await
    }

    /// [`run`](Self::run), with each model request and each tool call run as one step of a
    /// durable engine's `journal`: a run the engine retries after its process died gets the
    /// kept model answers and call outcomes back, and asks and runs only what was not kept.
    /// Calls run one after another, in the order the model gave them, so the engine keeps
    /// their steps in one order; a long-running tool runs as an ordinary step (the engine
    /// is what keeps it going). [`restate`](crate::restate) drives a run this way (feature
    /// `restate`).
    ///
    /// ```
    /// use toolsmith::agent::{Agent, Journal, ScriptedModel, Step, Stop};
    /// use toolsmith::serde_json::json;
    /// use toolsmith::tool::BoxFuture;
    /// use toolsmith::{Dialect, ToolContext, Toolbox};
    ///
    /// /// No engine: every step runs.
    /// struct Direct;
    /// impl Journal for Direct {
    ///     fn step<'a>(&'a self, _name: String, step: Step<'a>) -> BoxFuture<'a, Result<String, String>> {
    ///         step()
    ///     }
    /// }
    ///
    /// let model = ScriptedModel::new([json!({"choices": [{"message": {"role": "assistant", "content": "hi"}}]})]);
    /// let agent = Agent::new(Toolbox::new(), Dialect::OpenAiChat { strict: false }, model);
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let mut state = agent.start("Say hi.");
    /// let stop = agent.run_journaled(&mut state, &ToolContext::new().with_run_id("r1"), &Direct).await.unwrap();
    /// assert_eq!(stop, Stop::Answered("hi".into()));
    /// # });
    /// ```
    ///
    /// # Errors
    ///
    /// As [`run`](Self::run); a model step the engine gave up on is [`AgentError::Model`].
    pub async fn run_journaled(
        &self,
        state: &mut RunState,
        ctx: &ToolContext,
        journal: &dyn super::Journal,
    ) -> Result<Stop, AgentError> {
        state.check_seal(self.key())?;
        self.run_sealed(state, ctx, Some(journal)).await
    }

    /// [`run`](Self::run) for a state whose seal was checked already (a delegated agent's,
    /// inside its parent's sealed state); sealed again when it returns.
    pub(crate) async fn run_sealed(
        &self,
        state: &mut RunState,
        ctx: &ToolContext,
        journal: Option<&dyn super::Journal>,
    ) -> Result<Stop, AgentError> {
        let new = state.owner.is_none();
        let ctx = self.bind(state, ctx)?;
        // One owner at a time: the lease taken (and the run as kept, when newer, with every
        // decision kept for it) before anything is done or written.
        self.own(state, new).await?;
        let result = self.run_owned(state, &ctx, journal, new).await;
        self.disown(state).await;
        result
    }

    /// [`run_sealed`](Self::run_sealed) under the worker's lease, renewed while it runs.
    async fn run_owned(
        &self,
        state: &mut RunState,
        ctx: &ToolContext,
        journal: Option<&dyn super::Journal>,
        new: bool,
    ) -> Result<Stop, AgentError> {
        if new {
            // A run is kept from its start: one that dies before the model answers is
            // resumed from its prompt.
            self.checkpoint(state).await?;
        }
        let span = crate::telemetry::agent_span(
            self.name.as_deref(),
            self.dialect,
            self.client.model(),
            ctx.run_id(),
        );
        let ctx = match &state.held {
            Some(held) => ctx
                .clone()
                .with_extension(crate::policy::RunFence(held.lease.fence)),
            None => ctx.clone(),
        };
        let held = state.held.clone();
        let result = self
            .holding(
                held,
                tracing::Instrument::instrument(self.run_bound(state, &ctx, journal), span.clone()),
            )
            .await;
        if let Err(err) = &result {
            crate::telemetry::failed(&span, err.kind());
        }
        state.seal_with(self.key());
        // Wherever the run stops (an answer, a pause, a limit, an error after which it can
        // go on), the state it stops in is its checkpoint; not after another worker took the
        // run over, or the store failed.
        match result {
            Err(err @ (AgentError::Checkpoint(_) | AgentError::LeaseLost(_))) => Err(err),
            result => {
                self.checkpoint(state).await?;
                result
            }
        }
    }

    async fn run_bound(
        &self,
        state: &mut RunState,
        ctx: &ToolContext,
        journal: Option<&dyn super::Journal>,
    ) -> Result<Stop, AgentError> {
        let parent = ctx.get::<ParentBudget>().map(|b| Arc::clone(&b.0));
        if state.dialect != self.dialect {
            return Err(AgentError::Dialect(format!(
                "the run was started for {} and this agent speaks {}",
                state.dialect, self.dialect
            )));
        }
        loop {
            if let Some(awaiting) = state.awaiting.take() {
                if let Some(stop) = self.answer_calls(state, awaiting, ctx, journal).await? {
                    // A person who decided while the calls ran is not asked again: the run
                    // goes on with the decision instead of pausing.
                    if matches!(stop, Stop::Paused(_)) && self.merge_decisions(state).await? > 0 {
                        continue;
                    }
                    return Ok(stop);
                }
            }
            if let Some(answer) = &state.answer {
                return Ok(Stop::Answered(answer.clone()));
            }
            if state.turns >= self.limits.max_turns {
                return Ok(Stop::Limit(Limit::Turns));
            }
            if self
                .limits
                .max_tokens
                .is_some_and(|max| state.usage.total() >= max)
                || parent.as_ref().is_some_and(|p| p.tokens_spent())
            {
                // The run's own limit, or (for a delegated agent) its parent's.
                return Ok(Stop::Limit(Limit::Tokens));
            }
            if let Some(refused) = needs_the_application(self.dialect, &state.request.hosted) {
                return Err(AgentError::Request(refused));
            }
            let step = self.step(state);
            let turn_ctx = ctx.clone().with_extension(step);
            let block = self
                .provider()
                .request_for(&state.request, &turn_ctx)
                .await
                .map_err(AgentError::Request)?;
            let request = self.model_request(state, &block);
            self.emit(AgentEvent::ModelRequested { turn: state.turns });
            let response = self.ask(&request, journal).await?;
            let calls = ToolCall::parse(self.dialect, &response).map_err(AgentError::Response)?;
            // What the provider ran itself stays in the history as it is, and is audited.
            let hosted = crate::provider::hosted_items(self.dialect, &response);
            if !hosted.is_empty() {
                for item in &hosted {
                    self.toolbox.record_hosted(item, ctx);
                }
                self.emit(AgentEvent::Hosted {
                    turn: state.turns,
                    items: hosted,
                });
            }
            let (input_tokens, output_tokens) = conversation::usage(self.dialect, &response);
            let usage = Usage {
                input_tokens,
                output_tokens,
            };
            let text = conversation::text(self.dialect, &response);
            self.emit(AgentEvent::ModelAnswered {
                turn: state.turns,
                text: text.clone(),
                calls: calls.len(),
                usage,
            });
            state.turns += 1;
            state.usage.add(usage);
            if let Some(parent) = &parent {
                parent.spend(0, usage.total());
            }
            state
                .messages
                .extend(conversation::assistant(self.dialect, &response));
            // Anthropic runs a program's calls in a container the next request must name.
            if let Some(container) = conversation::container(self.dialect, &response) {
                state.container = Some(container);
            }
            if calls.is_empty() {
                state.answer = Some(text.clone());
                return Ok(Stop::Answered(text));
            }
            // Every call gets an id, the path a person decides on: the provider's, or one of
            // the run's own (the call itself is answered as it came).
            let ids = calls
                .iter()
                .enumerate()
                .map(|(i, call)| {
                    call.id
                        .clone()
                        .unwrap_or_else(|| format!("call_{}_{i}", state.turns))
                })
                .collect();
            let n = calls.len();
            state.awaiting = Some(Awaiting {
                results: vec![None; n],
                ids,
                calls,
                // The calls are judged against what this request offered, in its step.
                offer: block.offer().clone(),
                step,
                found: Vec::new(),
                pending: Vec::new(),
                decisions: Vec::new(),
                children: Default::default(),
                tasks: Default::default(),
                programs: crate::provider::program_calls(self.dialect, &response)
                    .into_iter()
                    .map(|p| (p.call_id, p.caller))
                    .collect(),
            });
            let over = u32::try_from(n).map_or(true, |n| {
                state.calls.saturating_add(n) > self.limits.max_calls
                    || parent.as_ref().is_some_and(|p| !p.fits_calls(n))
            });
            if over {
                return Ok(Stop::Limit(Limit::Calls));
            }
            // The model's answer is kept before any of its calls runs: a run that dies now
            // goes on with these calls, not with a new request.
            self.checkpoint(state).await?;
        }
    }

    /// The model's answer to `request`: asked, or as the journal kept it.
    async fn ask(
        &self,
        request: &ModelRequest,
        journal: Option<&dyn super::Journal>,
    ) -> Result<Value, AgentError> {
        let span = crate::telemetry::chat_span(self.dialect, self.client.model());
        let answer =
            tracing::Instrument::instrument(self.ask_model(request, journal), span.clone()).await;
        match &answer {
            Ok(response) => crate::telemetry::chat_answered(
                &span,
                &crate::telemetry::Answered::of(self.dialect, response),
            ),
            Err(err) => crate::telemetry::failed(&span, err.kind()),
        }
        answer
    }

    async fn ask_model(
        &self,
        request: &ModelRequest,
        journal: Option<&dyn super::Journal>,
    ) -> Result<Value, AgentError> {
        let Some(journal) = journal else {
            return self
                .client
                .complete(request)
                .await
                .map_err(AgentError::Model);
        };
        let step: super::Step<'_> = Box::new(move || {
            Box::pin(async move {
                match self.client.complete(request).await {
                    Ok(answer) => Ok(super::journal::keep_answer(&answer)),
                    Err(err) => Err(err.message),
                }
            })
        });
        let kept = journal
            .step(format!("model:{}", request.turn), step)
            .await
            .map_err(|message| AgentError::Model(ModelError::new(message)))?;
        super::journal::read_answer(&kept)
            .map_err(|message| AgentError::Model(ModelError::new(message)))
    }

    /// The step of the run's next request.
    /// The request for the model: the conversation as the trim policy shows it (or, where
    /// the provider trims, whole with the provider's context edit) and the tool block.
    fn model_request(
        &self,
        state: &mut RunState,
        block: &crate::provider::ToolBlock,
    ) -> ModelRequest {
        let mut headers = block.headers.clone();
        let body = match &self.trim {
            Some(trim) if trim.by_provider(self.dialect) => {
                let mut body =
                    conversation::body(self.dialect, state.messages.clone(), &block.fields);
                let (edit, (name, value)) = trim.context_edit();
                body["context_management"] = edit;
                match headers
                    .iter_mut()
                    .find(|(n, _)| n.eq_ignore_ascii_case(&name))
                {
                    Some((_, betas)) => {
                        betas.push(',');
                        betas.push_str(&value);
                    }
                    None => headers.push((name, value)),
                }
                body
            }
            Some(trim) => {
                let view = trim.view(self.dialect, &state.messages, &mut state.trimmed);
                conversation::body(self.dialect, view, &block.fields)
            }
            None => conversation::body(self.dialect, state.messages.clone(), &block.fields),
        };
        let mut body = body;
        if let (Some(container), Value::Object(fields)) = (&state.container, &mut body) {
            fields.insert("container".into(), Value::String(container.clone()));
        }
        ModelRequest {
            dialect: self.dialect,
            body,
            turn: state.turns,
            headers,
        }
    }

    fn step(&self, state: &RunState) -> RunStep {
        RunStep::new(state.turns, state.calls)
    }

    /// What a person decided on the waiting calls, before they run again. A decision on a
    /// call as the approval gate read it (after any repair and guard, the arguments the
    /// person was shown) reaches that call in its context, bound to the tool and the hash;
    /// it stays in the state until the call has run, so a run resumed after a crash neither
    /// asks again nor leaves an approval behind for another call. Any other decision is
    /// recorded with the toolbox's approver; one that cannot be recorded stays, with the
    /// ones after it.
    fn take_decisions(
        &self,
        awaiting: &mut Awaiting,
        provider: &ProviderToolbox<'_>,
        turn_ctx: &ToolContext,
    ) -> Result<HashMap<String, Decided>, crate::policy::ApprovalError> {
        let mut decided = HashMap::new();
        let mut kept = Vec::new();
        let mut decisions = std::mem::take(&mut awaiting.decisions).into_iter();
        while let Some(decision) = decisions.next() {
            let Some(i) = awaiting.ids.iter().position(|id| *id == decision.call_id) else {
                continue;
            };
            let waited = awaiting
                .pending
                .iter()
                .find(|p| p.path.first() == Some(&decision.call_id))
                .filter(|p| !p.registered.is_empty() && !p.arguments_hash.is_empty());
            if let Some(p) = waited {
                decided.insert(
                    decision.call_id.clone(),
                    Decided {
                        tool: p.registered.clone(),
                        hash: p.arguments_hash.clone(),
                        denied: decision.denied.clone(),
                        approver: decision.approver.clone(),
                        reason: decision.reason.clone(),
                    },
                );
                kept.push(decision);
                continue;
            }
            let call = &awaiting.calls[i];
            let recorded = match &decision.denied {
                None => provider.approve(call, turn_ctx),
                Some(reason) => provider.deny(call, turn_ctx, reason.clone()),
            };
            if let Err(err) = recorded {
                kept.push(decision);
                kept.extend(decisions);
                awaiting.decisions = kept;
                return Err(err);
            }
        }
        awaiting.decisions = kept;
        Ok(decided)
    }

    /// Runs the calls of a waiting turn that have no answer yet, keeping each answer as it
    /// comes (a checkpoint after each), and appends the results once every call has one.
    /// `Some` when the run stops here.
    async fn answer_calls(
        &self,
        state: &mut RunState,
        mut awaiting: Awaiting,
        ctx: &ToolContext,
        journal: Option<&dyn super::Journal>,
    ) -> Result<Option<Stop>, AgentError> {
        let parent = ctx.get::<ParentBudget>().map(|b| Arc::clone(&b.0));
        let unanswered = awaiting.results.iter().filter(|r| r.is_none()).count();
        let unanswered = u32::try_from(unanswered).unwrap_or(u32::MAX);
        let over = state.calls.saturating_add(unanswered) > self.limits.max_calls
            || parent.as_ref().is_some_and(|p| !p.fits_calls(unanswered));
        if over {
            state.awaiting = Some(awaiting);
            return Ok(Some(Stop::Limit(Limit::Calls)));
        }
        // The calls answer the request of `awaiting.step`: judged against what it offered, in
        // its step, whenever they run.
        let offer = awaiting.offer.clone();
        let programs = crate::provider::ProgramCall::all(&awaiting.programs);
        let provider = self
            .provider()
            .answering(&offer)
            .with_program_calls(&programs);
        let turn_ctx = ctx.clone().with_extension(awaiting.step);
        let mut decided = match self.take_decisions(&mut awaiting, &provider, &turn_ctx) {
            Ok(decided) => decided,
            Err(err) => {
                state.awaiting = Some(awaiting);
                return Err(AgentError::Approval(err));
            }
        };
        // The waiting delegated agents go to their calls; the turn keeps its copy of each until
        // that call settles, so a checkpoint taken mid-batch still holds them.
        let children = Arc::new(Children::new(awaiting.children.clone()));
        // What the delegated agents of this batch may spend: what the run has left after
        // the batch's own calls, and what any run above it has left.
        let budget = Arc::new(RunBudget::new(
            parent.clone(),
            self.limits
                .max_calls
                .saturating_sub(state.calls.saturating_add(unanswered)),
            self.limits
                .max_tokens
                .map(|max| max.saturating_sub(state.usage.total())),
        ));
        let call_ctx = self.call_context(state, turn_ctx, &children, &budget);
        let todo: Vec<usize> = (0..awaiting.calls.len())
            .filter(|&i| awaiting.results[i].is_none())
            .collect();
        let batch: Vec<ToolCall> = todo.iter().map(|&i| awaiting.calls[i].clone()).collect();
        // Each call in a context with its id (a provider's call id replaces it), and the
        // person's decision on it, if there is one.
        let contexts: Vec<ToolContext> = todo
            .iter()
            .map(|&i| {
                let ctx = self.reporting(call_ctx.clone().with_call_id(awaiting.ids[i].as_str()));
                match decided.remove(&awaiting.ids[i]) {
                    Some(decision) => ctx.with_extension(decision),
                    None => ctx,
                }
            })
            .collect();
        awaiting.pending.clear();
        // Long-running calls are tasks: taken when done, started when not running, waited on.
        let sorted = self
            .sort_tasks(
                &mut awaiting,
                &provider,
                (&batch, &todo),
                ctx,
                journal.is_some(),
            )
            .await;
        let tasks = match sorted {
            Ok(tasks) => tasks,
            Err(err) => {
                state.awaiting = Some(awaiting);
                return Err(err);
            }
        };
        let mut on_tasks = Vec::new();
        if !tasks.start.is_empty() {
            // The tasks' ids are kept before any starts: a run resumed elsewhere looks them up.
            self.checkpoint_awaiting(state, &mut awaiting).await?;
            for &k in &tasks.start {
                let id = &awaiting.ids[todo[k]];
                let task = awaiting.tasks.get(id).cloned().unwrap_or_default();
                let started = self
                    .start_task(task, batch[k].clone(), contexts[k].clone(), offer.clone())
                    .await;
                if let Err(err) = started {
                    state.awaiting = Some(awaiting);
                    return Err(err);
                }
                on_tasks.push(id.clone());
            }
        }
        on_tasks.extend(tasks.working.iter().map(|&k| awaiting.ids[todo[k]].clone()));
        let calls_before = state.calls;
        for (k, outcome) in &tasks.done {
            let settled = Settled {
                i: todo[*k],
                call: &batch[*k],
                outcome,
            };
            if self.settle(state, &mut awaiting, &provider, &children, settled) {
                self.checkpoint_awaiting(state, &mut awaiting).await?;
            }
        }
        let running = Batch {
            provider: &provider,
            children: &children,
            calls: &batch,
            contexts: &contexts,
            todo: &todo,
        };
        self.run_plain(state, &mut awaiting, &running, &tasks.plain, journal)
            .await?;
        // The delegated agents' calls and tokens are the run's too.
        state.usage.add(children.usage());
        state.calls = state.calls.saturating_add(budget.calls());
        // A delegated agent's answered calls count against its parent's limits as they
        // happen (its own delegated agents' were counted on their way up).
        if let Some(parent) = &parent {
            parent.spend(state.calls.saturating_sub(calls_before), 0);
        }
        if !awaiting.pending.is_empty() {
            if let Some(owner) = &state.owner {
                for pending in &mut awaiting.pending {
                    pending.token = super::token::decision_token(self.key(), owner, pending);
                }
            }
            let pending = awaiting.pending.clone();
            self.emit(AgentEvent::Paused(pending.clone()));
            state.awaiting = Some(awaiting);
            return Ok(Some(Stop::Paused(pending)));
        }
        if !on_tasks.is_empty() {
            state.awaiting = Some(awaiting);
            return Ok(Some(Stop::Waiting(on_tasks)));
        }
        let n = awaiting.calls.len();
        let results = awaiting.results.into_iter().flatten().collect();
        state.messages.extend(provider.group(results));
        state.request = state.request.after_calls(n).with_revealed(awaiting.found);
        Ok(None)
    }

    /// Runs a batch's plain calls, taking each outcome as it comes (a checkpoint after each):
    /// all at once, or under a durable engine's journal one step after another, so the
    /// engine keeps them in one order.
    async fn run_plain(
        &self,
        state: &mut RunState,
        awaiting: &mut Awaiting,
        batch: &Batch<'_, '_>,
        plain: &[usize],
        journal: Option<&dyn super::Journal>,
    ) -> Result<(), AgentError> {
        let Batch {
            provider,
            children,
            calls,
            contexts,
            todo,
        } = *batch;
        if let Some(journal) = journal {
            for &k in plain {
                let (call, call_ctx) = (&calls[k], &contexts[k]);
                let step: super::Step<'_> = Box::new(move || {
                    Box::pin(async move {
                        Ok(super::journal::keep_call(
                            &provider.run(call, call_ctx).await,
                        ))
                    })
                });
                let name = format!("call:{}", awaiting.ids[todo[k]]);
                let outcome = match journal.step(name, step).await {
                    Ok(kept) => super::journal::read_call(&kept),
                    Err(message) => ToolOutcome::Error(crate::error::ToolError::internal(message)),
                };
                let settled = Settled {
                    i: todo[k],
                    call,
                    outcome: &outcome,
                };
                if self.settle(state, awaiting, provider, children, settled) {
                    self.checkpoint_awaiting(state, awaiting).await?;
                }
            }
            return Ok(());
        }
        let futures = plain
            .iter()
            .map(|&k| provider.run(&calls[k], &contexts[k]))
            .collect();
        let mut running = crate::toolbox::join::JoinAll::new(futures);
        while let Some((j, outcome)) = running.next().await {
            let k = plain[j];
            let settled = Settled {
                i: todo[k],
                call: &calls[k],
                outcome: &outcome,
            };
            if self.settle(state, awaiting, provider, children, settled) {
                self.checkpoint_awaiting(state, awaiting).await?;
            }
        }
        Ok(())
    }

    /// The context of a batch's calls: the delegated agents' saved states, what they may
    /// spend, and the results the model is shown short, whole, for `read_earlier_result`.
    /// A call's context whose progress and partial results become the run's events, when a
    /// UI follows the run (and reach the caller the context had, too).
    fn reporting(&self, ctx: ToolContext) -> ToolContext {
        let (Some(events), Some(call_id)) = (&self.events, ctx.call_id()) else {
            return ctx;
        };
        let emit = reported(events, call_id);
        let inner = ctx
            .caller()
            .cloned()
            .unwrap_or_else(|| Arc::new(super::progress::Nobody));
        ctx.with_caller(Arc::new(super::progress::Reporter { emit, inner }))
    }

    fn call_context(
        &self,
        state: &RunState,
        turn_ctx: ToolContext,
        children: &Arc<Children>,
        budget: &Arc<RunBudget>,
    ) -> ToolContext {
        let mut ctx = turn_ctx
            .with_shared_extension(Arc::clone(children))
            .with_extension(ParentBudget(Arc::clone(budget)));
        if let Some(keeper) = self.decision_keeper(state) {
            ctx = ctx.with_extension(keeper);
        }
        if self.trim.is_some() && !state.trimmed.is_empty() {
            let whole = super::trim::whole(self.dialect, &state.messages, &state.trimmed);
            return ctx.with_extension(super::earlier::Earlier(Arc::new(whole)));
        }
        ctx
    }

    /// Takes one call's outcome into the waiting turn: a call that waits for a person (or a
    /// delegated agent that does) joins the pending ones, any other outcome is the call's
    /// result. `true` when the call has its result (the turn changed for good).
    fn settle(
        &self,
        state: &mut RunState,
        awaiting: &mut Awaiting,
        provider: &ProviderToolbox<'_>,
        children: &Children,
        settled: Settled<'_>,
    ) -> bool {
        let Settled { i, call, outcome } = settled;
        let id = awaiting.ids[i].clone();
        // The decision on this call (if any) has done its work, and so have its task and the
        // delegated agent's state it ran from.
        awaiting.decisions.retain(|d| d.call_id != id);
        awaiting.tasks.remove(&id);
        awaiting.children.remove(&id);
        if let ToolOutcome::Error(err) = outcome
            && err.code() == ErrorCode::ApprovalRequired
        {
            if let Some(child) = children.take(&id) {
                for pending in child.pending() {
                    let mut path = vec![id.clone()];
                    path.extend(pending.path.iter().cloned());
                    awaiting.pending.push(PendingCall {
                        path,
                        ..pending.clone()
                    });
                }
                awaiting.children.insert(id, child);
                return false;
            }
            if self.toolbox.has_approver() {
                let pending = match err.awaited() {
                    Some(awaited) => {
                        // A call a program made (in the sandbox): its path goes on into the
                        // program, and it is shown as the tool the program called.
                        let (path, tool) = match &awaited.within {
                            Some(within) => (vec![id, within.clone()], awaited.tool.clone()),
                            None => (vec![id], call.name.clone()),
                        };
                        PendingCall {
                            path,
                            tool,
                            arguments: awaited.arguments.clone(),
                            arguments_hash: awaited.hash.clone(),
                            repairs: awaited.repairs.clone(),
                            message: err.message().to_owned(),
                            token: String::new(),
                            registered: awaited.tool.clone(),
                        }
                    }
                    None => PendingCall {
                        path: vec![id],
                        tool: call.name.clone(),
                        arguments: shown_arguments(provider, call),
                        arguments_hash: String::new(),
                        repairs: Vec::new(),
                        message: err.message().to_owned(),
                        token: String::new(),
                        registered: String::new(),
                    },
                };
                awaiting.pending.push(pending);
                return false;
            }
        }
        if call.name == crate::provider::LOCAL_SEARCH_TOOL && outcome.is_success() {
            let found = outcome
                .data()
                .and_then(|data| serde_json::from_str::<Value>(data.get()).ok())
                .map(|data| crate::provider::found_names(&data))
                .unwrap_or_default();
            awaiting.found.extend(found);
        }
        self.emit(AgentEvent::ToolFinished {
            call: call.clone(),
            envelope: outcome.to_json(),
            value: matches!(outcome, ToolOutcome::Viewed(_))
                .then(|| outcome.data().map(|data| data.get().to_owned()))
                .flatten(),
            artifacts: outcome.artifacts().to_vec(),
        });
        awaiting.results[i] = Some(provider.encode(call, outcome));
        state.calls = state.calls.saturating_add(1);
        true
    }
}

/// The calls of a batch (`calls[k]` is the call at `todo[k]` of its turn), the context each
/// runs in, and what answers them.
#[derive(Clone, Copy)]
struct Batch<'b, 'p> {
    provider: &'b ProviderToolbox<'p>,
    children: &'b Children,
    calls: &'b [ToolCall],
    contexts: &'b [ToolContext],
    todo: &'b [usize],
}

/// One call's outcome as it comes: the call's index in its turn, the call, the outcome.
struct Settled<'a> {
    i: usize,
    call: &'a ToolCall,
    outcome: &'a ToolOutcome,
}

/// A call's arguments as a person deciding on it sees them: parsed when the provider sent
/// them as JSON text, parameters marked `#[arg(sensitive)]` shown as `"[redacted]"`.
fn shown_arguments(provider: &ProviderToolbox<'_>, call: &ToolCall) -> Value {
    let mut arguments = match &call.arguments {
        Value::String(text) => {
            serde_json::from_str(text).unwrap_or_else(|_| call.arguments.clone())
        }
        other => other.clone(),
    };
    if let Some(tool) = provider.resolve(&call.name) {
        crate::policy::audit::redact(&mut arguments, tool.definition().sensitive_params());
    }
    arguments
}

impl fmt::Debug for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Agent")
            .field("dialect", &self.dialect)
            .field("tools", &self.toolbox.len())
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

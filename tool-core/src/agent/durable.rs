//! Checkpoints: a run kept after each step that changes it, and resumed by its run id in any
//! process.

use std::time::Duration;

use serde::Deserialize;

use crate::context::ToolContext;
use crate::state::{CheckpointStore, MAX_CHECKPOINT_BYTES};

use super::checkpoints::{Checkpoints, checkpoint_key};
use super::error::AgentError;
use super::run::{Agent, Stop};
use super::state::{Awaiting, RunState};
use super::token::read_token;
use crate::policy::Verdict;

impl Agent {
    /// Records `verdict` on the call `token` names ([`PendingCall::token`](super::PendingCall::token)), in `state`: a
    /// decision that travelled through a UI or another process. The token is checked (made
    /// by an agent with this key, unaltered) and must name this run and a call still waiting
    /// in it with the same tool and arguments.
    ///
    /// # Errors
    ///
    /// [`AgentError::Sealed`] for a token forged, altered or signed with another key;
    /// [`AgentError::NotOwner`] when it names another run; [`AgentError::NotPending`] when the
    /// call no longer waits with those arguments.
    pub fn decide_signed(
        &self,
        state: &mut RunState,
        token: &str,
        verdict: &Verdict,
    ) -> Result<(), AgentError> {
        let signed = read_token(self.key(), token)?;
        let ours = state
            .owner
            .as_ref()
            .is_some_and(|owner| owner.run_id == signed.run && owner.principal == signed.principal);
        if !ours {
            return Err(AgentError::NotOwner(
                "the decision's token names another run".to_owned(),
            ));
        }
        let waiting = state.pending().iter().any(|p| {
            p.path == signed.path && p.registered == signed.tool && p.arguments_hash == signed.hash
        });
        if !waiting {
            return Err(AgentError::NotPending(signed.path.join("/")));
        }
        self.decide(state, &signed.path, verdict)
    }

    /// [`decide_signed`](Self::decide_signed) on the run the token names, loaded from the
    /// checkpoint store and kept again with the decision: a UI process needs only the token
    /// and the person's verdict. The decided state is returned.
    ///
    /// ```
    /// use toolsmith::agent::{Agent, ScriptedModel, Stop, Verdict};
    /// use toolsmith::serde_json::json;
    /// use toolsmith::state::MemoryCheckpointStore;
    /// use toolsmith::policy::Approvals;
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
    /// let model = ScriptedModel::new([json!({"role": "assistant", "stop_reason": "tool_use",
    ///     "content": [{"type": "tool_use", "id": "toolu_1", "name": "delete_ticket", "input": {"id": 7}}]})]);
    /// let toolbox = Toolbox::new().with(DeleteTicket).with_approver(Approvals::new());
    /// let agent = Agent::new(toolbox, Dialect::Anthropic { strict: false }, model)
    ///     .with_checkpoints(MemoryCheckpointStore::default());
    /// let ctx = ToolContext::new().with_principal("ada").with_run_id("run-9");
    /// let Stop::Paused(pending) = agent.run(&mut agent.start("Delete 7"), &ctx).await.unwrap() else { panic!() };
    /// // The UI shows the call and sends back its token with the person's decision.
    /// let verdict = Verdict::deny("ticket 7 is evidence").by("lin");
    /// let state = agent.decide_signed_stored(&pending[0].token, &verdict).await.unwrap();
    /// assert_eq!(state.run_id(), Some("run-9"));
    /// // A token altered on the way is refused.
    /// let altered = format!("5b{}", &pending[0].token[2..]);
    /// assert!(agent.decide_signed_stored(&altered, &verdict).await.is_err());
    /// # });
    /// ```
    ///
    /// # Errors
    ///
    /// As [`decide_signed`](Self::decide_signed) and [`load`](Self::load).
    pub async fn decide_signed_stored(
        &self,
        token: &str,
        verdict: &Verdict,
    ) -> Result<RunState, AgentError> {
        let signed = read_token(self.key(), token)?;
        let mut ctx = ToolContext::new();
        if let Some(principal) = &signed.principal {
            ctx = ctx.with_principal(principal.as_str());
        }
        let mut state = self.load(&signed.run, &ctx).await?;
        self.decide_signed(&mut state, token, verdict)?;
        self.keep_decision(&state, &signed.path, verdict).await?;
        Ok(state)
    }

    /// Keeps each run in `store` after every step that changes it: the model's answer, each
    /// tool call's result, a pause, a decision, and wherever the run stops. The next step
    /// starts only once the last is kept; a store that cannot keep it stops the run with
    /// [`AgentError::Checkpoint`] (its state whole in your hands). [`resume`](Self::resume)
    /// goes on from the last checkpoint in any process with the same toolbox and key
    /// ([`State::with_key`](crate::state::State::with_key)).
    ///
    /// A call that had started when the process died, and whose result was not kept, runs
    /// again when the run is resumed: a read simply runs again, and a write goes through its
    /// idempotency key (the same key, derived from the run, the principal and the
    /// arguments), so it replays the first result when that was kept, and otherwise hands
    /// the tool the same [`idempotency_key`](crate::ToolContext::idempotency_key) to give the
    /// system it writes to. For a fleet, or runs that survive the process, keep checkpoints
    /// and idempotency keys in Redis (docs/agents.md, "Runs that survive a crash").
    ///
    /// ```
    /// use toolsmith::agent::{Agent, ScriptedModel, Stop};
    /// use toolsmith::serde_json::json;
    /// use toolsmith::state::MemoryCheckpointStore;
    /// use toolsmith::{Dialect, ToolContext, Toolbox};
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let model = ScriptedModel::new([json!({"role": "assistant", "stop_reason": "end_turn",
    ///     "content": [{"type": "text", "text": "Hi."}]})]);
    /// let agent = Agent::new(Toolbox::new(), Dialect::Anthropic { strict: false }, model)
    ///     .with_checkpoints(MemoryCheckpointStore::default());
    /// let ctx = ToolContext::new().with_principal("ada").with_run_id("run-7");
    /// let mut state = agent.start("Hello");
    /// agent.run(&mut state, &ctx).await.unwrap();
    /// // Kept under its run id, for its principal only.
    /// assert_eq!(agent.load("run-7", &ctx).await.unwrap(), state);
    /// let bo = ToolContext::new().with_principal("bo");
    /// assert!(agent.load("run-7", &bo).await.is_err());
    /// # });
    /// ```
    #[must_use]
    pub fn with_checkpoints(mut self, store: impl CheckpointStore) -> Self {
        self.checkpoints = Some(Checkpoints::new(store));
        self
    }

    /// How long a checkpoint is kept after the run's last step (default seven days); no
    /// effect without [`with_checkpoints`](Self::with_checkpoints).
    #[must_use]
    pub fn with_checkpoint_ttl(mut self, ttl: Duration) -> Self {
        if let Some(checkpoints) = &mut self.checkpoints {
            checkpoints.ttl = ttl;
        }
        self
    }

    /// How long a worker's lease on a run lasts without renewal (default 10 s; renewed every
    /// third of it while the worker runs the run). A worker that dies holds its runs at most
    /// this long; then the next worker takes each over, with a newer fencing token, so the
    /// dead one's writes (were it only paused) are refused. No effect without
    /// [`with_checkpoints`](Self::with_checkpoints).
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolsmith::agent::{Agent, ScriptedModel};
    /// use toolsmith::state::MemoryCheckpointStore;
    /// use toolsmith::{Dialect, Toolbox};
    /// let agent = Agent::new(Toolbox::new(), Dialect::Anthropic { strict: false }, ScriptedModel::default())
    ///     .with_checkpoints(MemoryCheckpointStore::default())
    ///     .with_lease(Duration::from_secs(5))
    ///     .with_busy_wait(Duration::from_secs(6));
    /// # let _ = agent;
    /// ```
    #[must_use]
    pub fn with_lease(mut self, lease: Duration) -> Self {
        if let Some(checkpoints) = &mut self.checkpoints {
            checkpoints.lease = lease.max(Duration::from_millis(30));
        }
        self
    }

    /// How long [`run`](Self::run) and [`resume`](Self::resume) wait for a run that another
    /// worker holds before they answer [`AgentError::Busy`] (default: not at all). Longer
    /// than the lease ([`with_lease`](Self::with_lease)), a worker also takes over a run whose
    /// holder died, as soon as its lease expires. No effect without
    /// [`with_checkpoints`](Self::with_checkpoints).
    #[must_use]
    pub fn with_busy_wait(mut self, wait: Duration) -> Self {
        if let Some(checkpoints) = &mut self.checkpoints {
            checkpoints.busy_wait = wait;
        }
        self
    }

    /// Seals `state` and keeps it as its run's checkpoint (nothing without a store, or for a
    /// state that has not run): under the worker's lease, only while its fencing token is
    /// the run's newest.
    pub(super) async fn checkpoint(&self, state: &mut RunState) -> Result<(), AgentError> {
        let Some(checkpoints) = &self.checkpoints else {
            return Ok(());
        };
        let Some(owner) = &state.owner else {
            return Ok(());
        };
        let key = checkpoint_key(owner.principal.as_deref(), &owner.run_id);
        let lost = || {
            AgentError::LeaseLost(
                "this worker's lease on the run expired and another worker took the run over; this worker stopped without writing over it".to_owned(),
            )
        };
        if let Some(held) = &state.held
            && held.lost.load(std::sync::atomic::Ordering::SeqCst)
        {
            return Err(lost());
        }
        state.version = state.version.saturating_add(1);
        state.seal_with(self.key());
        let text = serde_json::to_string(state).map_err(|err| {
            AgentError::Checkpoint(crate::state::StoreError(format!(
                "the run's state cannot be written: {err}"
            )))
        })?;
        let saved = match &state.held {
            Some(held) => checkpoints
                .store
                .save_fenced(&key, &text, checkpoints.ttl, held.lease.fence)
                .await
                .map(|fenced| fenced == crate::state::Fenced::Kept),
            None => checkpoints
                .store
                .save(&key, &text, checkpoints.ttl)
                .await
                .map(|()| true),
        };
        match saved {
            Ok(true) => Ok(()),
            Ok(false) => {
                if let Some(held) = &state.held {
                    held.lost.store(true, std::sync::atomic::Ordering::SeqCst);
                }
                Err(lost())
            }
            Err(err) => Err(AgentError::Checkpoint(err)),
        }
    }

    /// [`checkpoint`](Self::checkpoint) of a state whose waiting turn is held apart while its
    /// calls run.
    pub(super) async fn checkpoint_awaiting(
        &self,
        state: &mut RunState,
        awaiting: &mut Awaiting,
    ) -> Result<(), AgentError> {
        if self.checkpoints.is_none() {
            return Ok(());
        }
        state.awaiting = Some(std::mem::take(awaiting));
        let saved = self.checkpoint(state).await;
        if let Some(back) = state.awaiting.take() {
            *awaiting = back;
        }
        saved
    }

    /// The last checkpoint of run `run_id` of the context's principal, its seal checked, with
    /// every decision kept for its waiting calls.
    ///
    /// Three answers say what was found:
    /// - a state: the run;
    /// - [`AgentError::UnknownRun`]: no checkpoint under that run id for that principal
    ///   (another principal's run is kept under another key, so it is unknown too): the one
    ///   answer after which starting the run afresh is right;
    /// - [`AgentError::Sealed`]: a checkpoint is there and is refused (edited in the store,
    ///   sealed with another key, not a run state, or another run's): never start afresh over
    ///   it.
    ///
    /// ```
    /// use toolsmith::agent::{Agent, AgentError, ScriptedModel};
    /// use toolsmith::state::{CheckpointStore, MemoryCheckpointStore};
    /// use toolsmith::{Dialect, ToolContext, Toolbox};
    /// use std::sync::Arc;
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let store = Arc::new(MemoryCheckpointStore::default());
    /// let agent = Agent::new(Toolbox::new(), Dialect::Anthropic { strict: false }, ScriptedModel::default())
    ///     .with_checkpoints(Arc::clone(&store));
    /// let ctx = ToolContext::new().with_principal("ada");
    /// match agent.load("run-1", &ctx).await {
    ///     Ok(state) => { /* go on with it */ let _ = state; }
    ///     Err(AgentError::UnknownRun(_)) => { /* nothing kept: start the run */ }
    ///     Err(other) => panic!("refused, unreachable or busy: do not start over it: {other}"),
    /// }
    /// # });
    /// ```
    ///
    /// # Errors
    ///
    /// As above; [`AgentError::Checkpoint`] when the store cannot be reached or the checkpoint
    /// is larger than a checkpoint can be.
    pub async fn load(&self, run_id: &str, ctx: &ToolContext) -> Result<RunState, AgentError> {
        let unknown = || {
            AgentError::UnknownRun(format!(
                "no run `{}` is kept for this principal; start it, or check the run id",
                crate::echo::echo(run_id)
            ))
        };
        let Some(checkpoints) = &self.checkpoints else {
            return Err(unknown());
        };
        let key = checkpoint_key(ctx.principal(), run_id);
        let text = checkpoints
            .store
            .load(&key)
            .await
            .map_err(AgentError::Checkpoint)?
            .ok_or_else(unknown)?;
        let mut state = self.read_kept(&text, |state| {
            state.owner.as_ref().is_some_and(|owner| {
                owner.run_id == run_id && owner.principal.as_deref() == ctx.principal()
            })
        })?;
        self.merge_decisions(&mut state).await?;
        Ok(state)
    }

    /// A kept checkpoint's text as a run state: its size, its shape and its seal checked, and
    /// `ours` (the run it must be).
    pub(super) fn read_kept(
        &self,
        text: &str,
        ours: impl FnOnce(&RunState) -> bool,
    ) -> Result<RunState, AgentError> {
        if text.len() > MAX_CHECKPOINT_BYTES {
            return Err(AgentError::Checkpoint(crate::state::StoreError(format!(
                "the checkpoint is larger than a checkpoint can be ({MAX_CHECKPOINT_BYTES} bytes)"
            ))));
        }
        let not_ours = || {
            AgentError::Sealed(
                "the run's checkpoint cannot be resumed: it is not a run state this library writes"
                    .to_owned(),
            )
        };
        let raw: serde_json::Value = serde_json::from_str(text).map_err(|_| not_ours())?;
        let state: RunState = RunState::deserialize(&raw).map_err(|_| not_ours())?;
        // What was read is all that was kept: a field the state does not have (a name edited
        // in the store) is refused, not dropped.
        state.check_stored(self.key(), raw)?;
        if !ours(&state) {
            return Err(AgentError::Sealed(
                "the checkpoint kept under this run's id is another run's (it was copied or moved in the store); it cannot be resumed as this run".to_owned(),
            ));
        }
        Ok(state)
    }

    /// Goes on with run `run_id` from its last checkpoint ([`load`](Self::load), then
    /// [`run`](Self::run)): in this process after an error, or in any other after this one
    /// died. The run's calls that had no kept result run again (writes through their
    /// idempotency keys); its decisions hold; a call waiting for a person still waits.
    ///
    /// # Errors
    ///
    /// As [`load`](Self::load) and [`run`](Self::run).
    pub async fn resume(
        &self,
        run_id: &str,
        ctx: &ToolContext,
    ) -> Result<(RunState, Stop), AgentError> {
        let mut state = self.load(run_id, ctx).await?;
        let stop = self.run(&mut state, ctx).await?;
        Ok((state, stop))
    }

    /// Records `verdict` on the call waiting at `path` in run `run_id` of the context's
    /// principal, kept beside the run's checkpoint before this returns: a process that dies
    /// after this returns loses nothing, and every later resume finds the decision, whatever
    /// a worker that loaded the run earlier saves in between (the decision is its own record,
    /// which no checkpoint writes over). No lease is needed: a person decides while a worker
    /// runs the run, and the run takes the decision when it next loads it, or before it
    /// pauses. The decided state is returned.
    ///
    /// # Errors
    ///
    /// As [`load`](Self::load) and [`decide`](Self::decide).
    pub async fn decide_stored(
        &self,
        run_id: &str,
        ctx: &ToolContext,
        path: &[String],
        verdict: &Verdict,
    ) -> Result<RunState, AgentError> {
        let mut state = self.load(run_id, ctx).await?;
        self.decide(&mut state, path, verdict)?;
        self.keep_decision(&state, path, verdict).await?;
        Ok(state)
    }
}

//! One owner per run: the lease a worker takes before it runs or resumes a run, renewed while
//! it works; the decisions people make on a run's calls, kept beside its checkpoint where no
//! save can write over them; and how a run in hand meets the one kept.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::policy::Verdict;
use crate::state::{Acquired, CheckpointStore, Lease};

use super::checkpoints::{Checkpoints, Held, checkpoint_key};
use super::error::AgentError;
use super::run::Agent;
use super::state::RunState;

/// What a kept decision record signs for.
const RECORD: &str = "toolsmith decision kept for a run's call";

/// A person's decision on one call of a run, as the checkpoint store keeps it: bound to the
/// run's key, the call's path, the tool and its arguments' hash, and signed with the agent's
/// key (a store is never trusted with what it hands back).
#[derive(Serialize, Deserialize)]
struct KeptDecision {
    run: String,
    path: Vec<String>,
    tool: String,
    hash: String,
    denied: Option<String>,
    approver: Option<String>,
    reason: Option<String>,
}

impl Agent {
    /// Makes this worker the owner of `state`'s run, when runs are kept in a checkpoint
    /// store: the lease taken (or waited for, as [`with_busy_wait`](Agent::with_busy_wait)
    /// allows), then the run as it is kept when that is newer than the state in hand, then
    /// every decision kept for its waiting calls.
    pub(super) async fn own(&self, state: &mut RunState, new: bool) -> Result<(), AgentError> {
        let (Some(checkpoints), Some(owner)) = (&self.checkpoints, &state.owner) else {
            return Ok(());
        };
        if state.held.is_some() {
            return Ok(());
        }
        let key = checkpoint_key(owner.principal.as_deref(), &owner.run_id);
        let lease = take(checkpoints, &key).await?;
        let held = Held {
            key: key.clone(),
            lease,
            lost: Arc::default(),
        };
        match self.meet_kept(state, &key, new).await {
            Ok(()) => {
                state.held = Some(held);
                Ok(())
            }
            Err(err) => {
                release(checkpoints, &held).await;
                Err(err)
            }
        }
    }

    /// The run as kept, taken in place of the state in hand when it is newer (another worker
    /// went on with it), keeping the decisions made on the state in hand; then the kept
    /// decisions.
    async fn meet_kept(
        &self,
        state: &mut RunState,
        key: &str,
        new: bool,
    ) -> Result<(), AgentError> {
        let Some(checkpoints) = &self.checkpoints else {
            return Ok(());
        };
        let text = checkpoints
            .store
            .load(key)
            .await
            .map_err(AgentError::Checkpoint)?;
        if let Some(text) = text {
            if new {
                return Err(AgentError::NotOwner(format!(
                    "a run `{}` is already kept for this principal: resume it (`Agent::resume`), or start the new run under another run id",
                    crate::echo::echo(state.run_id().unwrap_or_default())
                )));
            }
            let owner = state.owner.clone();
            let kept = self.read_kept(&text, |kept| kept.owner == owner)?;
            if kept.version > state.version {
                let mine = std::mem::replace(state, kept);
                state.carry_decisions(&mine);
            }
        }
        self.merge_decisions(state).await?;
        Ok(())
    }

    /// Applies to `state` every kept decision on a call still waiting in it that the state
    /// does not carry yet: how many.
    pub(super) async fn merge_decisions(&self, state: &mut RunState) -> Result<usize, AgentError> {
        let (Some(checkpoints), Some(owner)) = (&self.checkpoints, &state.owner) else {
            return Ok(0);
        };
        let key = checkpoint_key(owner.principal.as_deref(), &owner.run_id);
        let kept = checkpoints
            .store
            .decisions(&key)
            .await
            .map_err(AgentError::Checkpoint)?;
        let mut applied = 0;
        for (_, record) in kept {
            let Some(decision) = crate::keys::verify(self.key(), RECORD, &record)
                .and_then(|payload| serde_json::from_slice::<KeptDecision>(&payload).ok())
            else {
                tracing::warn!("a decision kept for a run is not one this agent signed; ignored");
                continue;
            };
            if decision.run != key {
                continue;
            }
            let verdict = Verdict::of_parts(decision.denied, decision.approver, decision.reason);
            if state.takes_decision(&decision.path, &decision.tool, &decision.hash, &verdict) {
                state.decide(&decision.path, &verdict)?;
                applied += 1;
            }
        }
        if applied > 0 {
            state.seal_with(self.key());
        }
        Ok(applied)
    }

    /// Keeps `verdict` on the call waiting at `path` in `state` beside the run's checkpoint,
    /// where every later load finds it.
    pub(super) async fn keep_decision(
        &self,
        state: &RunState,
        path: &[String],
        verdict: &Verdict,
    ) -> Result<(), AgentError> {
        let (Some(checkpoints), Some(owner)) = (&self.checkpoints, &state.owner) else {
            return Ok(());
        };
        let Some(pending) = state.pending().iter().find(|p| p.path == path) else {
            return Err(AgentError::NotPending(path.join("/")));
        };
        let key = checkpoint_key(owner.principal.as_deref(), &owner.run_id);
        let (tool, hash) = pending.binding();
        let signed = signed_record(self.key(), &key, path, (tool, hash), verdict);
        checkpoints
            .store
            .keep_decision(&key, &path.join("/"), &signed, checkpoints.ttl)
            .await
            .map_err(AgentError::Checkpoint)
    }

    /// What the calls of `state`'s run carry so that a decision an approver's store gives
    /// one of them is kept as the run's own before the call runs (nothing without a
    /// checkpoint store).
    pub(super) fn decision_keeper(&self, state: &RunState) -> Option<crate::policy::KeepDecision> {
        let (Some(checkpoints), Some(owner)) = (&self.checkpoints, &state.owner) else {
            return None;
        };
        let store = Arc::clone(&checkpoints.store);
        let ttl = checkpoints.ttl;
        let run = checkpoint_key(owner.principal.as_deref(), &owner.run_id);
        let key = *self.key();
        Some(crate::policy::KeepDecision(Arc::new(
            move |call: &str, decided: &crate::policy::decided::Decided| {
                let verdict = Verdict::of_parts(
                    decided.denied.clone(),
                    decided.approver.clone(),
                    decided.reason.clone(),
                );
                let path = [call.to_owned()];
                let signed = signed_record(
                    &key,
                    &run,
                    &path,
                    (decided.tool.as_str(), decided.hash.as_str()),
                    &verdict,
                );
                let (store, run, call) = (Arc::clone(&store), run.clone(), call.to_owned());
                Box::pin(async move {
                    store
                        .keep_decision(&run, &call, &signed, ttl)
                        .await
                        .map_err(|err| err.0)
                })
            },
        )))
    }

    /// Gives the run's lease up (the state no longer holds it).
    pub(super) async fn disown(&self, state: &mut RunState) {
        if let (Some(checkpoints), Some(held)) = (&self.checkpoints, state.held.take()) {
            release(checkpoints, &held).await;
        }
    }

    /// Runs `work` while renewing the lease `held` every third of its time; a renewal that
    /// finds the lease gone marks it lost, and the run stops at its next write.
    pub(super) async fn holding<T>(
        &self,
        held: Option<Held>,
        work: impl std::future::Future<Output = T>,
    ) -> T {
        let (Some(checkpoints), Some(held)) = (&self.checkpoints, held) else {
            return work.await;
        };
        let every = (checkpoints.lease / 3).max(Duration::from_millis(10));
        crate::policy::attempt::holding(work, every, || async {
            match checkpoints
                .store
                .renew(&held.key, &held.lease, checkpoints.lease)
                .await
            {
                Ok(true) => true,
                Ok(false) => {
                    held.lost.store(true, Ordering::SeqCst);
                    tracing::warn!(
                        "this worker's lease on its run was taken over: it stops before its next write"
                    );
                    false
                }
                Err(err) => {
                    tracing::warn!(%err, "the lease on a run could not be renewed");
                    true
                }
            }
        })
        .await
    }
}

/// `verdict` on the call at `path` of run `run`, bound to `binding` (tool, hash), signed
/// under `key`.
fn signed_record(
    key: &[u8; 32],
    run: &str,
    path: &[String],
    binding: (&str, &str),
    verdict: &Verdict,
) -> String {
    let record = KeptDecision {
        run: run.to_owned(),
        path: path.to_vec(),
        tool: binding.0.to_owned(),
        hash: binding.1.to_owned(),
        denied: verdict.denied.clone(),
        approver: verdict.approver.clone(),
        reason: verdict.reason.clone(),
    };
    let payload = serde_json::to_vec(&record).unwrap_or_default();
    crate::keys::sign(key, RECORD, &payload)
}

/// The lease on run `key`, taken by a new owner id; waited for while busy, as long as the
/// agent allows.
async fn take(checkpoints: &Checkpoints, key: &str) -> Result<Lease, AgentError> {
    let mut me = String::from("worker_");
    crate::json::canonical::push_hex(&mut me, &crate::keys::random_key()[..12]);
    let started = tokio::time::Instant::now();
    loop {
        match checkpoints
            .store
            .acquire(key, &me, checkpoints.lease)
            .await
            .map_err(AgentError::Checkpoint)?
        {
            Acquired::Taken(lease) => return Ok(lease),
            Acquired::Busy { expires_in } => {
                let waited = started.elapsed();
                if waited >= checkpoints.busy_wait {
                    return Err(AgentError::Busy {
                        retry_after: expires_in,
                    });
                }
                let pause = expires_in
                    .min(checkpoints.busy_wait - waited)
                    .clamp(Duration::from_millis(10), Duration::from_millis(250));
                // A runtime without timers waits by yielding, as a duplicate write does.
                match crate::policy::attempt::timer(pause) {
                    Some(pause) => pause.await,
                    None => tokio::task::yield_now().await,
                }
            }
        }
    }
}

async fn release(checkpoints: &Checkpoints, held: &Held) {
    if let Err(err) = checkpoints.store.release(&held.key, &held.lease).await {
        tracing::warn!(%err, "the lease on a run could not be given up; it expires on its own");
    }
}

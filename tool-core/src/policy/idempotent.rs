//! The idempotency step of write tools: a finished call is replayed, a running one waited
//! for, a key reused with other arguments refused. The store keeps the envelope, so a
//! write's data is never written straight into the caller's buffer.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::decided::ApprovalNote;
use crate::error::{ErrorCode, ToolError};
use crate::idempotency::{CallKey, IdempotencyPolicy, KeyScope, call_key};
use crate::outcome::ToolOutcome;
use crate::spec::IdempotencyScope;
use crate::state::{IdempotencyStore, Reservation, StoreError};
use crate::tool::Tool;

use super::attempt::timer;
use super::classify::{is_failure, may_retry};
use super::step::{Call, Done, Flow, Next, Ran, Step};

/// The step: the toolbox's store and key policy, for one write tool.
pub(crate) struct Idempotent {
    pub(crate) store: Arc<dyn IdempotencyStore>,
    pub(crate) policy: IdempotencyPolicy,
    pub(crate) scope: IdempotencyScope,
    pub(crate) tool: Arc<dyn Tool>,
}

enum Reserved {
    Run(CallKey),
    Replay(ToolOutcome, Option<ApprovalNote>),
}

impl Step for Idempotent {
    fn run<'a>(&'a self, mut call: Call<'a>, next: Next<'a>) -> Flow<'a> {
        Flow::later(async move {
            let key = match self.reserve(&mut call).await {
                Ok(Reserved::Run(key)) => key,
                Ok(Reserved::Replay(outcome, approval)) => {
                    // The decision the first call ran on goes with every replay of it, so
                    // the audit record of a call replayed after a crash names who approved.
                    let mut done = Done::new(Ran::Outcome(outcome), 0);
                    done.approval = approval.map(Box::new);
                    return done;
                }
                Err(err) => return Done::refused(err),
            };
            let keyed = call.ctx.clone().with_idempotency_key(&key.visible);
            let inner = Call {
                name: call.name,
                arguments: call.arguments,
                ctx: &keyed,
                out: None,
                read: call.read,
                refusal: None,
                repairs: call.repairs,
            };
            let done = self.run_holding(&key, next.run(inner).into_future()).await;
            match &done.ran {
                // Refused before it ran (a person has not approved it yet, a budget, an open
                // circuit): nothing happened, so nothing is kept.
                _ if done.attempts == 0 => self.release(&key).await,
                Ran::Outcome(outcome) => self.settle(&key, outcome, done.approval.as_deref()).await,
                Ran::Written | Ran::Marked(..) => {}
            }
            done
        })
    }
}

impl Idempotent {
    /// Reserves the call's key, or explains why it must not run now.
    async fn reserve(&self, call: &mut Call<'_>) -> Result<Reserved, ToolError> {
        let def = self.tool.definition();
        let checked = call.read_once(def)?;
        let scope = KeyScope {
            principal: call.ctx.principal(),
            run: call.ctx.run_id(),
            global: self.scope == IdempotencyScope::Global,
        };
        let key = call_key(def.name(), checked, scope);
        let Some(stored) = &key.stored else {
            // An action of its own: nothing to replay, nothing to record.
            return Ok(Reserved::Run(key));
        };
        let store = &self.store;
        let policy = &self.policy;
        let unavailable = |err: StoreError| {
            tracing::warn!(tool = def.name(), %err, "idempotency store unavailable");
            ToolError::upstream_error(format!(
                "`{}` was not run: its idempotency store is unavailable, and running it without one could do it twice. Retry later.",
                def.name()
            ))
        };
        let waited_from = Instant::now();
        // A call of an agent run carries its worker's fencing token: a reservation an older
        // owner of the run left running is taken over, not waited on.
        let fence = call.ctx.get::<super::RunFence>().map(|fence| fence.0);
        loop {
            let reserved = match fence {
                Some(fence) => store.reserve_fenced(stored, &key.fingerprint, policy.lease, fence),
                None => store.reserve(stored, &key.fingerprint, policy.lease),
            };
            match reserved.await.map_err(unavailable)? {
                Reservation::Reserved => return Ok(Reserved::Run(key)),
                Reservation::InProgress { fingerprint } | Reservation::Done { fingerprint, .. }
                    if fingerprint != key.fingerprint =>
                {
                    return Err(ToolError::idempotency_conflict(format!(
                        "The idempotency key `{}` was already used for `{}` with other arguments. Use a new key for a new action, or repeat the first call's arguments exactly.",
                        key.visible,
                        def.name()
                    ))
                    .human_review(true));
                }
                Reservation::Done { envelope, .. } => {
                    let (kept, approval) = unwrap_decided(&envelope);
                    return Ok(Reserved::Replay(replay(kept), approval));
                }
                Reservation::InProgress { .. } => {
                    if waited_from.elapsed() >= policy.wait {
                        return Err(ToolError::new(
                            ErrorCode::InProgress,
                            format!("The same `{}` call is still running. Retry shortly to get its result.", def.name()),
                        )
                        .retry_after(Duration::from_secs(1)));
                    }
                    if let Some(pause) = timer(Duration::from_millis(25)) {
                        pause.await;
                    } else {
                        tokio::task::yield_now().await;
                    }
                }
            }
        }
    }

    /// Runs the call, renewing its key's lease every third of the lease until it is done.
    async fn run_holding<T>(&self, key: &CallKey, call: impl std::future::Future<Output = T>) -> T {
        let Some(stored) = &key.stored else {
            return call.await;
        };
        let every = (self.policy.lease / 3).max(Duration::from_millis(10));
        super::attempt::holding(call, every, || async {
            if let Err(err) = self
                .store
                .renew(stored, &key.fingerprint, self.policy.lease)
                .await
            {
                tracing::warn!(%err, "the idempotency store could not renew a running call's key");
            }
            true
        })
        .await
    }

    /// Frees the key: the call did not run.
    async fn release(&self, key: &CallKey) {
        if let Some(stored) = &key.stored
            && let Err(err) = self.store.release(stored).await
        {
            tracing::warn!(%err, "the idempotency store could not free a key");
        }
    }

    /// Stores the outcome under the key, with the decision it ran on (one write: the result
    /// and who approved it are kept together), or frees the key for a retry after a
    /// transient failure.
    async fn settle(&self, key: &CallKey, outcome: &ToolOutcome, approval: Option<&ApprovalNote>) {
        let Some(stored) = &key.stored else {
            return;
        };
        let store = &self.store;
        let transient = match outcome {
            ToolOutcome::Success(_)
            | ToolOutcome::Replayed(_)
            | ToolOutcome::Checked(..)
            | ToolOutcome::Stored(..) => false,
            ToolOutcome::Degraded(..) => true,
            ToolOutcome::Viewed(viewed) => viewed.view.degradation().is_some(),
            // A tool that waits for a person (a delegated agent's call) has not acted yet:
            // its next call must run, not replay the wait.
            ToolOutcome::Error(err) => {
                may_retry(err) || is_failure(err) || err.code() == ErrorCode::ApprovalRequired
            }
        };
        let result = if transient {
            store.release(stored).await
        } else {
            store
                .complete(
                    stored,
                    &key.fingerprint,
                    &with_decided(outcome.to_record(), approval),
                    self.policy.ttl,
                )
                .await
        };
        if let Err(err) = result {
            tracing::warn!(%err, "the idempotency store could not record a result");
        }
    }
}

/// The prefix of a stored result kept with the decision its call ran on.
const DECIDED: &str = r#"{"decided":"#;

/// A call's record as the store keeps it: as it is, or with the decision it ran on,
/// `{"decided":<note>,"record":<record>}`.
fn with_decided(record: String, approval: Option<&ApprovalNote>) -> String {
    let Some(note) = approval.and_then(|note| serde_json::to_string(note).ok()) else {
        return record;
    };
    let mut out = String::with_capacity(DECIDED.len() + note.len() + record.len() + 12);
    out.push_str(DECIDED);
    out.push_str(&note);
    out.push_str(r#","record":"#);
    out.push_str(&record);
    out.push('}');
    out
}

/// A stored result and the decision its call ran on, as [`with_decided`] wrote them.
fn unwrap_decided(stored: &str) -> (&str, Option<ApprovalNote>) {
    #[derive(serde::Deserialize)]
    struct Note {
        decision: String,
        approver: Option<String>,
        reason: Option<String>,
    }
    #[derive(serde::Deserialize)]
    struct Kept<'a> {
        decided: Note,
        #[serde(borrow)]
        record: &'a serde_json::value::RawValue,
    }
    if !stored.starts_with(DECIDED) {
        return (stored, None);
    }
    match serde_json::from_str::<Kept<'_>>(stored) {
        Ok(kept) => {
            let note = kept.decided;
            let denied = (note.decision == "denied").then(String::new);
            let mut approval = ApprovalNote::of(denied.as_ref(), None, None);
            approval.approver = note.approver;
            approval.reason = note.reason;
            (kept.record.get(), Some(approval))
        }
        Err(_) => (stored, None),
    }
}

/// A stored envelope, replayed: success is marked as a replay; a stored failure is returned
/// as it was. A result with a view of its own keeps its value and artifacts, and its view is
/// replayed.
fn replay(envelope: &str) -> ToolOutcome {
    match ToolOutcome::from_text(envelope) {
        Ok(ToolOutcome::Viewed(mut viewed)) => {
            viewed.view = replayed(viewed.view);
            ToolOutcome::Viewed(viewed)
        }
        Ok(outcome) => replayed(outcome),
        Err(err) => ToolOutcome::Error(ToolError::internal(format_args!(
            "a stored result does not read back: {err}"
        ))),
    }
}

/// A kept outcome as its replay: success data marked replayed, the rest as it was.
fn replayed(outcome: ToolOutcome) -> ToolOutcome {
    match outcome {
        ToolOutcome::Success(data)
        | ToolOutcome::Degraded(data, _)
        | ToolOutcome::Replayed(data) => ToolOutcome::Replayed(data),
        // What the output checks did stays said: a replay of checked data is read as the
        // first answer was.
        kept @ (ToolOutcome::Error(_)
        | ToolOutcome::Checked(..)
        | ToolOutcome::Stored(..)
        | ToolOutcome::Viewed(_)) => kept,
    }
}

#[cfg(test)]
mod tests {
    use super::replay;
    use crate::outcome::ToolOutcome;

    #[test]
    fn a_kept_outcome_replays_as_it_was_with_success_marked() {
        let success = ToolOutcome::success(&serde_json::json!({"id": 3, "title": "x"})).unwrap();
        let replay_of_success = replay(&success.to_record());
        assert!(
            matches!(&replay_of_success, ToolOutcome::Replayed(d) if d.get() == r#"{"id":3,"title":"x"}"#)
        );
        let error = ToolOutcome::Error(crate::error::ToolError::new(
            crate::error::ErrorCode::NotFound,
            "no such ticket",
        ));
        assert_eq!(replay(&error.to_record()).to_json(), error.to_json());
        assert!(!replay(r#"{"status":"success","data":}"#).is_success());
    }

    #[test]
    fn a_result_is_kept_with_the_decision_it_ran_on() {
        use super::{unwrap_decided, with_decided};
        let success = ToolOutcome::success(&serde_json::json!({"deleted": 7})).unwrap();
        let note = crate::policy::decided::ApprovalNote::of(
            None,
            Some(&"lin".to_owned()),
            Some(&"duplicate".to_owned()),
        );
        let kept = with_decided(success.to_record(), Some(&note));
        let (record, approval) = unwrap_decided(&kept);
        assert_eq!(approval.as_ref(), Some(&note));
        assert_eq!(record, success.to_record());
        // A result kept without one reads as it is.
        let plain = success.to_record();
        assert_eq!(unwrap_decided(&plain), (plain.as_str(), None));
        let denied = crate::policy::decided::ApprovalNote::of(Some(&"no".to_owned()), None, None);
        let kept = with_decided(success.to_record(), Some(&denied));
        assert_eq!(unwrap_decided(&kept).1, Some(denied));
    }
}

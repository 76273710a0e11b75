//! Long-running calls in the agent loop: each runs as a task in the background, its state in
//! the toolbox's task store (shared by a fleet); the turn waits on it, and the run takes its
//! result once, when it is done.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::context::ToolContext;
use crate::outcome::ToolOutcome;
use crate::provider::{Offer, ToolCall};

use super::error::AgentError;
use super::run::Agent;

/// How long a running task's record lasts without a sign of life: renewed every third of it
/// while the task runs, so a task whose process died is known lost within it.
const TASK_LEASE: Duration = Duration::from_secs(30);
/// How long a finished task's outcome is kept for its run to take.
const TASK_KEPT: Duration = Duration::from_secs(24 * 3600);

/// A task as the store keeps it.
#[derive(Serialize, Deserialize)]
struct TaskRecord {
    /// `working` or `done`.
    status: String,
    /// Whose run it is.
    principal: Option<String>,
    /// The call's outcome, once done (as the idempotency store keeps one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    outcome: Option<String>,
}

/// Where a run's task is.
pub(super) enum TaskState {
    /// Done: its outcome, to be taken into the run.
    Done(ToolOutcome),
    /// Still running (here or in another process).
    Working,
    /// Not known to the store: never started, or its process died (the call runs again,
    /// writes through their idempotency keys).
    Lost,
}

fn record(status: &str, principal: Option<&str>, outcome: Option<String>) -> String {
    serde_json::to_string(&TaskRecord {
        status: status.to_owned(),
        principal: principal.map(str::to_owned),
        outcome,
    })
    .unwrap_or_default()
}

impl Agent {
    /// Where the task `id` of a run of `principal` is.
    pub(super) async fn task_state(
        &self,
        id: &str,
        principal: Option<&str>,
    ) -> Result<TaskState, AgentError> {
        let kept = self
            .toolbox()
            .task_store()
            .read(id)
            .await
            .map_err(AgentError::Tasks)?;
        let Some(record) = kept.and_then(|text| serde_json::from_str::<TaskRecord>(&text).ok())
        else {
            return Ok(TaskState::Lost);
        };
        // Another principal's task is none of this run's.
        if record.principal.as_deref() != principal {
            return Ok(TaskState::Lost);
        }
        Ok(match (record.status.as_str(), record.outcome) {
            ("done", Some(outcome)) => {
                TaskState::Done(serde_json::from_str(&outcome).unwrap_or_else(|_| {
                    ToolOutcome::Error(crate::error::ToolError::internal(
                        "a task's outcome does not read back",
                    ))
                }))
            }
            _ => TaskState::Working,
        })
    }

    /// Starts `call` as the task `id` in the background: its record is published (working)
    /// before this returns, renewed while it runs, and replaced by its outcome when done.
    pub(super) async fn start_task(
        &self,
        id: String,
        call: ToolCall,
        ctx: ToolContext,
        offer: Offer,
    ) -> Result<(), AgentError> {
        let toolbox = Arc::clone(&self.toolbox);
        let store = Arc::clone(toolbox.task_store());
        let principal = ctx.principal().map(str::to_owned);
        store
            .publish(
                &id,
                &record("working", principal.as_deref(), None),
                TASK_LEASE,
            )
            .await
            .map_err(AgentError::Tasks)?;
        let dialect = self.dialect();
        tokio::spawn(async move {
            let provider = toolbox.provider(dialect).answering(&offer);
            let run = provider.run(&call, &ctx);
            let beat = async {
                loop {
                    match crate::policy::attempt::timer(TASK_LEASE / 3) {
                        Some(pause) => pause.await,
                        None => std::future::pending::<()>().await,
                    }
                    let working = record("working", principal.as_deref(), None);
                    if let Err(err) = store.publish(&id, &working, TASK_LEASE).await {
                        tracing::warn!(%err, task = %id, "a running task's record could not be renewed");
                    }
                }
            };
            let mut run = std::pin::pin!(run);
            let mut beat = std::pin::pin!(beat);
            let outcome = std::future::poll_fn(|cx| {
                if let std::task::Poll::Ready(outcome) = run.as_mut().poll(cx) {
                    return std::task::Poll::Ready(outcome);
                }
                let _ = beat.as_mut().poll(cx);
                std::task::Poll::Pending
            })
            .await;
            let done = record("done", principal.as_deref(), Some(outcome.to_record()));
            if let Err(err) = store.publish(&id, &done, TASK_KEPT).await {
                tracing::warn!(%err, task = %id, "a finished task's outcome could not be kept");
            }
        });
        Ok(())
    }
}

/// The calls of a batch sorted by where they run, by index in the batch.
pub(super) struct Sorted {
    /// Calls that run now, in the request.
    pub(super) plain: Vec<usize>,
    /// Tasks done: their outcomes, to be taken.
    pub(super) done: Vec<(usize, ToolOutcome)>,
    /// Tasks still running.
    pub(super) working: Vec<usize>,
    /// Calls to start as tasks (their new task ids are in the state).
    pub(super) start: Vec<usize>,
}

impl Agent {
    /// Sorts the calls of a batch (`batch[k]` is the call at `todo[k]`) by where their task
    /// is; a long-running call with no task, or whose task was lost, gets a new task id.
    /// Under a durable engine's journal (`journaled`) every call runs now, as a step of the
    /// engine's: keeping a long call going is the engine's work.
    pub(super) async fn sort_tasks(
        &self,
        awaiting: &mut super::state::Awaiting,
        provider: &crate::toolbox::ProviderToolbox<'_>,
        (batch, todo): (&[ToolCall], &[usize]),
        ctx: &ToolContext,
        journaled: bool,
    ) -> Result<Sorted, AgentError> {
        let mut sorted = Sorted {
            plain: Vec::new(),
            done: Vec::new(),
            working: Vec::new(),
            start: Vec::new(),
        };
        for (k, call) in batch.iter().enumerate() {
            let long = !journaled
                && provider
                    .resolve(&call.name)
                    .is_some_and(|tool| tool.definition().long_running());
            if !long {
                sorted.plain.push(k);
                continue;
            }
            let id = awaiting.ids[todo[k]].clone();
            let state = match awaiting.tasks.get(&id) {
                Some(task) => self.task_state(task, ctx.principal()).await?,
                None => TaskState::Lost,
            };
            match state {
                TaskState::Done(outcome) => sorted.done.push((k, outcome)),
                TaskState::Working => sorted.working.push(k),
                TaskState::Lost => {
                    awaiting
                        .tasks
                        .insert(id, format!("agent-{}", crate::keys::new_id()));
                    sorted.start.push(k);
                }
            }
        }
        Ok(sorted)
    }
}

//! Why a run could not go on.

use std::fmt;

use crate::provider::{CallParseError, RequestError};

use super::client::ModelError;

/// Why a run could not go on. The state is as it was before the step that failed: fix the
/// cause and run it again.
#[derive(Debug)]
#[non_exhaustive]
pub enum AgentError {
    /// The model client failed.
    Model(ModelError),
    /// The model's response is not of the provider's shape.
    Response(CallParseError),
    /// The tool block could not be built (a choice naming a tool the toolbox does not have).
    Request(RequestError),
    /// A person's decision could not be recorded (the toolbox's approver is not a store).
    Approval(crate::policy::ApprovalError),
    /// No call waits at this path.
    NotPending(String),
    /// The state was made for another dialect, or the dialect has no model to talk to (MCP).
    Dialect(String),
    /// The state's seal does not hold: it was changed outside the API, or sealed with another
    /// key (every process that resumes runs needs the same `State::with_key` secret); or the
    /// checkpoint kept under a run's id is refused: altered in the store, not a run state, or
    /// another run's. Never start the run afresh over it: the run is there and cannot be
    /// trusted (restore the store, or the shared key).
    Sealed(String),
    /// The run belongs to another principal, or is another run.
    NotOwner(String),
    /// The checkpoint store could not keep or hand back the run
    /// ([`Agent::with_checkpoints`](super::Agent::with_checkpoints)): the run stopped before
    /// its next step, its state whole.
    Checkpoint(crate::state::StoreError),
    /// No checkpoint is kept under this run id for this principal (another principal's run
    /// is unknown too: its checkpoint is kept under another key). The one answer after which
    /// starting the run afresh is right.
    UnknownRun(String),
    /// Another worker owns the run now (its lease is held): nothing was done. Try again
    /// after `retry_after`, when the lease expires unless its holder renews or gives it up;
    /// or let the agent wait ([`Agent::with_busy_wait`](super::Agent::with_busy_wait)).
    Busy {
        /// How long the holder's lease has left.
        retry_after: std::time::Duration,
    },
    /// This worker's lease on the run expired and another worker took the run over: this
    /// worker stopped, and kept nothing over the new owner's state. Load the run again to see
    /// where it is.
    LeaseLost(String),
    /// The task store could not be reached for a long-running call's task: the run stopped
    /// before its next step, its state whole.
    Tasks(crate::state::StoreError),
}

impl AgentError {
    /// A short name of what went wrong (`model`, `response`, `request`, ...): the run's
    /// `error.type` on its span ([`telemetry`](crate::telemetry)).
    ///
    /// ```
    /// use toolsmith::agent::AgentError;
    /// assert_eq!(AgentError::NotPending("c1".into()).kind(), "not_pending");
    /// ```
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Model(_) => "model",
            Self::Response(_) => "response",
            Self::Request(_) => "request",
            Self::Approval(_) => "approval",
            Self::NotPending(_) => "not_pending",
            Self::Dialect(_) => "dialect",
            Self::Sealed(_) => "sealed",
            Self::NotOwner(_) => "not_owner",
            Self::Checkpoint(_) => "checkpoint",
            Self::UnknownRun(_) => "unknown_run",
            Self::Tasks(_) => "tasks",
            Self::Busy { .. } => "busy",
            Self::LeaseLost(_) => "lease_lost",
        }
    }
}

impl fmt::Display for AgentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Model(err) => err.fmt(f),
            Self::Response(err) => write!(f, "the model's response cannot be read: {err}"),
            Self::Request(err) => write!(f, "the tool block cannot be built: {err}"),
            Self::Approval(err) => write!(f, "the decision cannot be recorded: {err}"),
            Self::NotPending(path) => write!(f, "no call waits for a decision at `{path}`"),
            Self::Tasks(err) => write!(
                f,
                "a long-running call's task cannot be started or read: {err}"
            ),
            Self::Busy { retry_after } => write!(
                f,
                "another worker is running this run now; try again in {} ms, when its lease expires unless renewed",
                retry_after.as_millis()
            ),
            Self::Checkpoint(err) => {
                write!(f, "the run's checkpoint cannot be kept or read: {err}")
            }
            Self::Dialect(why)
            | Self::Sealed(why)
            | Self::NotOwner(why)
            | Self::UnknownRun(why)
            | Self::LeaseLost(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for AgentError {}

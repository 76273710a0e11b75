//! The runtime's state, in one family: every store the execution policy keeps something in,
//! behind a trait, with an in-memory form (the default, for one process) and one Redis type
//! for all of them ([`RedisStore`], feature `redis`, for a fleet):
//!
//! | store | trait | in memory |
//! |---|---|---|
//! | idempotency keys and first results | [`IdempotencyStore`] | [`MemoryIdempotencyStore`] |
//! | large results | [`ResultStore`] | [`MemoryResultStore`] |
//! | rate limits | [`RateLimiter`] | [`MemoryRateLimiter`] |
//! | run budgets | [`BudgetStore`] | each toolbox counts in its own memory |
//! | circuit breakers | [`CircuitStore`] | each toolbox keeps its circuits |
//! | MCP tasks, seen by every replica | [`TaskStore`] | [`MemoryTaskStore`] |
//! | agent runs' checkpoints, leases and decisions | [`CheckpointStore`] | [`MemoryCheckpointStore`] |
//!
//! Every store fails with one error, [`StoreError`]. [`State`] names the stores a toolbox uses
//! and the key it signs cursors and result ids with:
//! [`Toolbox::with_state`](crate::toolbox::Toolbox::with_state) takes it. Approvals shared by a fleet are
//! [`SharedApprovals`](crate::policy::SharedApprovals), an approver on the same Redis.
//! docs/deployment.md says what each store keeps, its bounds, and how it fails.

mod checkpoints;
mod circuits;
mod error;
mod family;
mod idempotency;
mod limits;
mod memory;
#[cfg(feature = "redis")]
mod redis;
mod results;
mod runs;
mod tasks;

pub use checkpoints::{
    Acquired, CheckpointStore, Fenced, Lease, MAX_CHECKPOINT_BYTES, MAX_DECISION_BYTES,
    MAX_DECISIONS, MemoryCheckpointStore,
};
pub use circuits::{Admission, CircuitStore};
pub use error::StoreError;
pub(crate) use family::ApprovalHome;
pub use family::State;
pub use idempotency::{IdempotencyStore, Reservation};
pub use limits::{MemoryRateLimiter, RateLimiter};
pub use memory::MemoryIdempotencyStore;
#[cfg(feature = "redis")]
pub use redis::RedisStore;
pub use results::{MemoryResultStore, ResultStore};
pub use runs::{BudgetStore, RunUsage};
pub use tasks::{MAX_TASK_MESSAGES, MemoryTaskStore, TaskStore};

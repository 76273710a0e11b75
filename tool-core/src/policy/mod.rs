//! The execution policy around every call through a [`Toolbox`](crate::Toolbox), one concern
//! per module, and the settings types they read.
//!
//! Each concern is a step with one signature; the toolbox composes a plan per tool from its
//! settings, once, and every call of the tool goes through it in this order
//! (docs/execution.md): audit → authorization → the arguments read once (validated, made
//! canonical and hashed, for tools whose calls a step reads) → input guards (refuse or rewrite
//! the arguments read; a rewrite is read again) → idempotency (writes: a stored
//! result replays here) → approval → run budget → fallback → circuit → sequential and
//! per-tool limits → attempts (each first taking its turn from the tool's and its upstream's
//! rate limits, then run with its time limit, retried). Which tools are offered at all
//! ([`Enablement`]) is decided before the plan, by the toolbox.
//!
//! ```
//! use std::time::Duration;
//! use toolsmith::policy::{Defaults, RetryPolicy, RunBudget, ToolPolicy};
//! use toolsmith::Toolbox;
//!
//! let toolbox = Toolbox::new().with_defaults(Defaults {
//!     retry: RetryPolicy { max_attempts: 2, ..Default::default() },
//!     budget: Some(RunBudget { max_calls: 50, ..Default::default() }),
//!     ..Defaults::default()
//! });
//! let slow = ToolPolicy { timeout: Some(Duration::from_secs(120)), ..Default::default() };
//! let toolbox = toolbox.with_tool_policy("generate_report", slow);
//! # let _ = toolbox;
//! ```

pub(crate) mod approve;
pub(crate) mod attempt;
pub(crate) mod audit;
mod authorize;
mod budget;
mod checks;
mod circuit;
mod classify;
mod compose;
pub(crate) mod decided;
mod defaults;
mod enable;
mod fallback;
mod guard;
mod idempotent;
mod limit;
mod plan;
mod read;
mod repair;
mod retry;
mod step;
mod text;
mod throttle;

pub use crate::json::canonical::{arguments_hash, canonical_json};
pub use crate::limits::InputLimits;
pub use crate::spec::{CircuitPolicy, RateLimit, RetryPolicy, RunBudget, ToolPolicy};
#[cfg(feature = "redis")]
pub use approve::shared::SharedApprovals;
pub use approve::{
    ApprovalDecision, ApprovalError, ApprovalPrompt, ApprovalRecord, ApprovalRequest,
    ApprovalStatus, Approvals, Approver, PendingApproval, PromptForApproval,
};
pub(crate) use approve::{Ticket, needs_approval};
pub use authorize::Authorizer;
pub use decided::Verdict;
pub(crate) use decided::{KeepDecision, RunFence};
pub use defaults::Defaults;
pub use enable::{Enablement, Switch, ToolsChanged};
pub use guard::{Guard, GuardDecision, GuardRequest, InputGuard};
pub use repair::{Repair, RepairHook, RepairRequest};
pub(crate) use text::InvalidCounts;
pub use text::{ErrorText, ErrorView, ErrorWriter};

pub(crate) use compose::{Plans, Settings};
pub(crate) use step::{Call, Done, Flow, Ran};

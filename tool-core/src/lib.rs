//! The runtime of [toolsmith](https://docs.rs/toolsmith): tool definitions, argument validation,
//! structured errors, the call context and the toolbox.
//!
//! Users depend on the `toolsmith` crate, which re-exports everything here together with the
//! `#[tool]` attribute.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod context;
mod echo;
mod error;
mod idempotency;
mod join;
mod limits;
mod lint;
mod outcome;
mod policy;
mod provider;
mod reader;
mod report;
mod schema;
mod strict;
mod tool;
mod toolbox;
mod validate;

#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "testing")]
pub mod testing;

#[doc(hidden)]
#[path = "macro_support.rs"]
pub mod __macro_support;

pub use context::ToolContext;
pub use echo::ECHO_CAP;
pub use error::{ErrorCode, FieldError, ToolError};
#[cfg(feature = "redis")]
pub use idempotency::RedisStore;
pub use idempotency::{
    IdempotencyPolicy, IdempotencyStore, KEY_PARAMETER, MIN_KEY_LEN, MemoryStore, Reservation,
    StoreError, derive_idempotency_key,
};
pub use limits::InputLimits;
pub use lint::{LintFinding, LintLevel};
pub use outcome::{Degradation, ToolOutcome};
pub use policy::{
    ApprovalDecision, ApprovalRequest, Approvals, Approver, AuditRecord, AuditSink, Authorizer,
    CircuitPolicy, Enablement, JsonLinesSink, MemorySink, RetryPolicy, RunBudget, Switch,
    ToolPolicy, ToolsChanged, arguments_hash,
};
pub use provider::{CallParseError, Dialect, ExportError, ToolCall, UnknownDialect, encode_result};
pub use tool::{Annotations, Arguments, BoxFuture, Effect, Emit, Emitted, Tool, ToolDefinition};
pub use toolbox::{CallStatus, RegistrationError, Toolbox};

/// Re-exported so a context can be given a cancellation signal of the caller's.
pub use tokio_util::sync::CancellationToken;

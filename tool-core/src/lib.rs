//! The runtime of [toolsmith](https://docs.rs/toolsmith): tool definitions, argument validation,
//! structured errors, the call context and the toolbox.
//!
//! Users depend on the `toolsmith` crate, which re-exports everything here together with the
//! `#[tool]` attribute.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

// The modules in the order of their floors: each imports only from the floors below it. The
// table of floors is in docs/architecture.md, and scripts/layers.sh checks the code against it.
mod arguments;
pub mod caller;
mod context;
mod dialect;
mod echo;
pub mod error;
mod json;
mod keys;
mod limits;
pub mod outcome;
mod spec;
pub mod telemetry;

mod schema;

mod validate;

mod definition;
pub mod tool;

pub mod code;
pub mod idempotency;
pub mod lint;
pub mod output;
pub mod provider;
pub mod state;

pub mod policy;
/// Audit records: one per call through a [`Toolbox`], to any number of sinks.
///
/// ```
/// use std::sync::Arc;
/// use toolsmith::audit::MemorySink;
/// use toolsmith::{tool, ToolContext, Toolbox};
///
/// /// Says hello. Read-only. Not for real conversations.
/// #[tool(effect = "read")]
/// fn say_hello() -> &'static str { "hello" }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let sink = Arc::new(MemorySink::default());
/// let toolbox = Toolbox::new().with(SayHello).with_audit(Arc::clone(&sink));
/// toolbox.call("say_hello", "{}", &ToolContext::new().with_run_id("run_1")).await;
/// assert_eq!(sink.records()[0].status, "success");
/// # });
/// ```
pub mod audit {
    pub use crate::policy::audit::{
        ApprovalNote, AuditRecord, AuditSink, JsonLinesSink, MemorySink,
    };
}

pub mod toolset;

mod toolbox;

pub mod agent;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod registry;
#[cfg(feature = "restate")]
pub mod restate;
#[cfg(feature = "sandbox")]
pub mod sandbox;
#[cfg(feature = "testing")]
pub mod testing;

#[doc(hidden)]
#[path = "macro_support.rs"]
pub mod __macro_support;

// What every user touches (docs/crate.md, "Where things are", lists the rest by module).
pub use arguments::Arguments;
pub use context::{Grant, ToolContext};
pub use definition::ToolDefinition;
pub use dialect::Dialect;
pub use error::{ErrorCode, FieldError, ToolError};
pub use limits::InputLimits;
pub use outcome::ToolOutcome;
pub use provider::ToolCall;
pub use spec::{Annotations, Effect, ToolExample};
pub use tool::Tool;
pub use toolbox::{Admitted, ApprovalDesk, ProviderToolbox, Spelling, Toolbox, Turn};
pub use toolset::RegistrationError;

/// Re-exported so a context can be given a cancellation signal of the caller's.
pub use tokio_util::sync::CancellationToken;

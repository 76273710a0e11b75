//! A kit for testing tools and agents, enabled with the `testing` feature:
//!
//! - fault injection: wrap any tool so that its next calls fail the ways real dependencies
//!   do, and read back what happened, to test retries, timeouts, fallbacks and circuits
//!   (timeouts, rate limits, failures after the effect);
//! - a fake model driven by the tools' schemas ([`SchemaModel`]): it calls every tool with
//!   arguments made from its input schema ([`sample`]), or, in its mutation mode, with
//!   arguments that each break exactly one constraint ([`mutations`]), and checks what the
//!   toolbox made of them;
//! - cassettes ([`Cassette`]): a model client that records a run's exchanges to a file and
//!   plays them back, failing on the first request that differs;
//! - trajectory checks over the audit log ([`Trajectory`]): which tools a run called, in
//!   what order, with what arguments, and how many, with a report naming the first
//!   difference and a JUnit XML writer ([`junit`]) for CI.
//!
//! ```
//! use std::time::Duration;
//! use toolsmith::testing::{Fault, Faulty};
//! use toolsmith::{tool, ToolContext, Toolbox};
//!
//! /// Gets a customer. Read-only. Not for leads.
//! #[tool(effect = "read", timeout = "5s")]
//! async fn get_customer(
//!     /// The customer id.
//!     id: u64,
//! ) -> u64 {
//!     id
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
//! let tool = std::sync::Arc::new(Faulty::new(GetCustomer).then(Fault::Hang));
//! let toolbox = Toolbox::new().with(tool.clone());
//! let out = toolbox.call("get_customer", r#"{"id": 7}"#, &ToolContext::new()).await;
//! assert_eq!(out.to_json(), r#"{"status":"success","data":7}"#);
//! assert_eq!(tool.log(), ["hang: abandoned", "ok"]);
//! # });
//! ```

mod cassette;
mod model;
mod mutate;
mod sample;
mod trajectory;

pub use cassette::Cassette;
pub use model::{Expected, PlannedCall, SchemaModel};
pub use mutate::{Mutation, mutations};
pub use sample::sample;
pub use trajectory::{Call, Difference, Matcher, Order, Trajectory, junit};

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use crate::arguments::Arguments;
use crate::context::ToolContext;
use crate::definition::ToolDefinition;
use crate::error::ToolError;
use crate::outcome::ToolOutcome;
use crate::tool::{BoxFuture, Tool};

/// One injected fault, applied to one call of the wrapped tool.
#[derive(Clone, Debug)]
pub enum Fault {
    /// Never answers, so the policy's timeout fires.
    Hang,
    /// Answers `rate_limited`, asking to retry after this delay.
    RateLimited(Duration),
    /// Answers `upstream_error`, as if the dependency returned this HTTP status.
    Upstream(u16),
    /// Waits this long, then runs the tool.
    Slow(Duration),
    /// Panics.
    Panic,
    /// Runs the tool (its side effect happens), then answers `upstream_error`: the response
    /// was lost after the commit.
    AfterEffect,
    /// Runs the tool and appends this text to its result (a prompt injection in the data).
    Inject(String),
}

impl Fault {
    fn name(&self) -> &'static str {
        match self {
            Self::Hang => "hang",
            Self::RateLimited(_) => "rate_limited",
            Self::Upstream(_) => "upstream",
            Self::Slow(_) => "slow",
            Self::Panic => "panic",
            Self::AfterEffect => "after_effect",
            Self::Inject(_) => "inject",
        }
    }
}

/// A tool whose next calls get the planned faults, in order; later calls run normally.
pub struct Faulty<T> {
    inner: T,
    plan: Mutex<VecDeque<Fault>>,
    log: Arc<Mutex<Vec<String>>>,
}

impl<T: Tool> Faulty<T> {
    /// Wraps `inner` with no faults planned.
    pub fn new(inner: T) -> Self {
        Self {
            inner,
            plan: Mutex::new(VecDeque::new()),
            log: Arc::default(),
        }
    }

    /// Plans `fault` for the next unplanned call.
    #[must_use]
    pub fn then(self, fault: Fault) -> Self {
        self.times(1, fault)
    }

    /// Plans `fault` for the next `n` unplanned calls.
    #[must_use]
    pub fn times(self, n: usize, fault: Fault) -> Self {
        if let Ok(mut plan) = self.plan.lock() {
            plan.extend(std::iter::repeat_n(fault, n));
        }
        self
    }

    /// What each call did, in order: `"ok"`, `"error: <code>"`, or the fault and how the call
    /// ended (`"hang: abandoned"` when the caller gave up).
    #[must_use]
    pub fn log(&self) -> Vec<String> {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

/// Writes the log entry when dropped, so a call the policy abandons (a timeout) is logged too.
struct Entry {
    log: Arc<Mutex<Vec<String>>>,
    fault: Option<&'static str>,
    result: String,
}

impl Drop for Entry {
    fn drop(&mut self) {
        let line = match self.fault {
            Some(fault) => format!("{fault}: {}", self.result),
            None => self.result.clone(),
        };
        if let Ok(mut log) = self.log.lock() {
            log.push(line);
        }
    }
}

fn describe(outcome: &ToolOutcome) -> String {
    match outcome.error() {
        Some(err) => format!("error: {}", err.code()),
        None => "ok".to_owned(),
    }
}

impl<T: Tool> Tool for Faulty<T> {
    fn definition(&self) -> &ToolDefinition {
        self.inner.definition()
    }

    fn call<'a>(
        &'a self,
        arguments: Arguments<'a>,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ToolOutcome> {
        let fault = self.plan.lock().ok().and_then(|mut plan| plan.pop_front());
        Box::pin(async move {
            let mut entry = Entry {
                log: Arc::clone(&self.log),
                fault: fault.as_ref().map(Fault::name),
                result: "abandoned".to_owned(),
            };
            let outcome = match fault {
                None => self.inner.call(arguments, ctx).await,
                Some(Fault::Hang) => std::future::pending().await,
                Some(Fault::RateLimited(after)) => ToolOutcome::Error(
                    ToolError::rate_limited("The service is rate limited.").retry_after(after),
                ),
                Some(Fault::Upstream(status)) => ToolOutcome::Error(ToolError::upstream_error(
                    format!("The service answered {status}; try again later."),
                )),
                Some(Fault::Slow(delay)) => {
                    tokio::time::sleep(delay).await;
                    self.inner.call(arguments, ctx).await
                }
                Some(Fault::Panic) => panic!("injected panic"),
                Some(Fault::AfterEffect) => {
                    let _committed = self.inner.call(arguments, ctx).await;
                    ToolOutcome::Error(ToolError::upstream_error(
                        "The connection broke before the service answered.",
                    ))
                }
                Some(Fault::Inject(text)) => match self.inner.call(arguments, ctx).await {
                    ToolOutcome::Success(data) => {
                        let value: Value = serde_json::from_str(data.get()).unwrap_or(Value::Null);
                        let injected = match value {
                            Value::String(s) => Value::String(format!("{s}{text}")),
                            other => serde_json::json!({ "data": other, "note": text }),
                        };
                        ToolOutcome::success(&injected).unwrap_or_else(ToolOutcome::Error)
                    }
                    other => other,
                },
            };
            entry.result = describe(&outcome);
            outcome
        })
    }
}

impl<T: Tool> Tool for Arc<Faulty<T>> {
    fn definition(&self) -> &ToolDefinition {
        (**self).definition()
    }

    fn call<'a>(
        &'a self,
        arguments: Arguments<'a>,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ToolOutcome> {
        (**self).call(arguments, ctx)
    }
}

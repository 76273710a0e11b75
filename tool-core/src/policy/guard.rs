//! Guards on input: after a call's arguments are read and before anyone is asked to approve
//! them, a guard may refuse the call or rewrite its arguments; a rewrite is read again (the
//! tool's schema still holds) and is what every later step, the approver and the tool see.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::arguments::Arguments;
use crate::context::ToolContext;
use crate::definition::ToolDefinition;
use crate::error::ToolError;
use crate::tool::{BoxFuture, Tool};

use super::step::{Call, Done, Flow, Next, Step};

/// One call as a guard sees it: the tool and its arguments, read (valid, canonical).
#[derive(Debug)]
#[non_exhaustive]
pub struct GuardRequest<'a> {
    /// The tool's registered name.
    pub tool: &'a str,
    /// The arguments, canonical (or as an earlier guard rewrote them).
    pub arguments: &'a Value,
    /// The call's context.
    pub ctx: &'a ToolContext,
    /// The tool's definition.
    pub definition: &'a ToolDefinition,
}

/// What a guard says about a call.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum GuardDecision {
    /// The call goes on as it is.
    Allow,
    /// The call goes on with these arguments instead: read again against the tool's schema,
    /// then seen by the approver, the idempotency key and the tool.
    Rewrite(Value),
    /// The call ends with this error (the model reads it): write what to do instead.
    Refuse(ToolError),
}

/// Refuses or rewrites a call's arguments after they are read and before approval: a policy
/// on content (no production hosts, amounts within a customer's limit), a default filled in
/// from the application's state, a value normalized. Set with
/// [`Defaults::guards`](super::Defaults::guards); guards run in order, each on what the last
/// one left.
///
/// ```
/// use toolsmith::policy::{Defaults, Guard, GuardDecision, GuardRequest};
/// use toolsmith::serde_json::json;
/// use toolsmith::{tool, ToolContext, ToolError, Toolbox};
///
/// /// Restarts a service. Writes the service's state. Not for deploying.
/// #[tool(effect = "write")]
/// fn restart(
///     /// The host.
///     #[arg(length(max = 60))]
///     host: String,
/// ) -> String {
///     format!("restarted {host}")
/// }
///
/// // Host names in lower case; nothing on production from a model.
/// let guard = Guard::new(|request: &GuardRequest<'_>| {
///     let host = request.arguments["host"].as_str().unwrap_or_default();
///     if host.starts_with("prod") {
///         return GuardDecision::Refuse(ToolError::permission_denied(
///             "Production hosts cannot be restarted from a conversation; ask an operator.",
///         ));
///     }
///     GuardDecision::Rewrite(json!({"host": host.to_lowercase()}))
/// });
/// let toolbox = Toolbox::new()
///     .with(Restart)
///     .with_defaults(Defaults { guards: vec![guard], ..Defaults::default() });
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let ctx = ToolContext::new();
/// let out = toolbox.call("restart", json!({"host": "Web-1"}), &ctx).await;
/// assert_eq!(out.into_result::<String>().unwrap(), "restarted web-1");
/// let out = toolbox.call("restart", json!({"host": "prod-db"}), &ctx).await;
/// assert_eq!(out.error().unwrap().code().as_str(), "permission_denied");
/// # });
/// ```
pub trait InputGuard: Send + Sync + 'static {
    /// The decision on this call.
    fn check<'a>(&'a self, request: &'a GuardRequest<'a>) -> BoxFuture<'a, GuardDecision>;
}

impl<F> InputGuard for F
where
    F: Fn(&GuardRequest<'_>) -> GuardDecision + Send + Sync + 'static,
{
    fn check<'a>(&'a self, request: &'a GuardRequest<'a>) -> BoxFuture<'a, GuardDecision> {
        let decision = self(request);
        Box::pin(async move { decision })
    }
}

/// An [`InputGuard`], as a setting of [`Defaults`](super::Defaults).
#[derive(Clone)]
pub struct Guard(pub(crate) Arc<dyn InputGuard>);

impl Guard {
    /// Wraps `guard`.
    #[must_use]
    pub fn new(guard: impl InputGuard) -> Self {
        Self(Arc::new(guard))
    }
}

impl fmt::Debug for Guard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Guard")
    }
}

/// The step: the arguments read, each guard asked, a rewrite read again and kept as the
/// call's one reading.
pub(crate) struct Guarded {
    pub(crate) guards: Arc<[Guard]>,
    pub(crate) tool: Arc<dyn Tool>,
}

impl Step for Guarded {
    fn run<'a>(&'a self, mut call: Call<'a>, next: Next<'a>) -> Flow<'a> {
        Flow::later(async move {
            if call.read.get().is_none() {
                let def = self.tool.definition();
                let mut value = match def.read_arguments(&call.arguments, call.ctx) {
                    Ok(checked) => checked.value,
                    Err(err) => return Done::refused(err),
                };
                let mut rewritten = false;
                for guard in self.guards.iter() {
                    let request = GuardRequest {
                        tool: call.name,
                        arguments: &value,
                        ctx: call.ctx,
                        definition: def,
                    };
                    match guard.0.check(&request).await {
                        GuardDecision::Allow => {}
                        GuardDecision::Rewrite(new) => {
                            value = new;
                            rewritten = true;
                        }
                        GuardDecision::Refuse(err) => return Done::refused(err),
                    }
                }
                // The final arguments, read again: a rewrite is held to the schema too.
                let arguments = Arguments::Value(std::borrow::Cow::Owned(value));
                let mut checked = match def.read_arguments(&arguments, call.ctx) {
                    Ok(checked) => checked,
                    Err(err) if rewritten => {
                        // `internal` keeps its message for the operator and tells the model
                        // only that the call failed.
                        return Done::refused(ToolError::internal(format_args!(
                            "an input guard rewrote the arguments of `{}` into ones its schema refuses: {}",
                            call.name,
                            err.message()
                        )));
                    }
                    Err(err) => return Done::refused(err),
                };
                // What changed before the decision and the run is carried with the reading:
                // a person approving the call sees it.
                checked.repairs = std::mem::take(&mut call.repairs);
                if rewritten {
                    checked
                        .repairs
                        .push("an input guard rewrote the arguments".to_owned());
                }
                let _ = call.read.set(Box::new(checked));
            }
            if let Err(err) = call.read_once(self.tool.definition()) {
                return Done::refused(err);
            }
            next.run(call).await
        })
    }
}

//! Which calls a person has approved: asked about each exact call (its validated arguments
//! and their hash) of a tool that needs approval.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use std::sync::Arc;

use crate::context::ToolContext;
use crate::error::{ErrorCode, ToolError};
use crate::json::canonical::arguments_hash;
use crate::tool::{BoxFuture, Tool};

use super::step::{Call, Done, Next, Step};

/// A call waiting for a person's decision: the tool, its validated arguments and their hash.
#[derive(Debug)]
pub struct ApprovalRequest<'a> {
    /// The tool's name.
    pub tool: &'a str,
    /// The validated arguments.
    pub arguments: &'a Value,
    /// `sha256:` + the hex SHA-256 of the arguments' canonical JSON (keys sorted).
    pub arguments_hash: &'a str,
    /// The call's context (principal, run id).
    pub ctx: &'a ToolContext,
}

/// What an [`Approver`] says about one call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApprovalDecision {
    /// Approved: the call runs.
    Approved,
    /// Nobody has decided yet: the call returns `approval_required`.
    Pending,
    /// It was approved, but the approval has expired: `approval_expired`.
    Expired,
    /// A person declined it, for this reason: `approval_denied`.
    Denied(String),
}

/// Decides whether a call that needs approval may run.
pub trait Approver: Send + Sync + 'static {
    /// The decision for this exact call.
    fn decide<'a>(&'a self, request: &'a ApprovalRequest<'a>) -> BoxFuture<'a, ApprovalDecision>;
}

impl<F> Approver for F
where
    F: Fn(&ApprovalRequest<'_>) -> ApprovalDecision + Send + Sync + 'static,
{
    fn decide<'a>(&'a self, request: &'a ApprovalRequest<'a>) -> BoxFuture<'a, ApprovalDecision> {
        let decision = self(request);
        Box::pin(async move { decision })
    }
}

enum Grant {
    Approved { until: Option<Instant> },
    Denied { reason: String },
}

/// An in-memory [`Approver`]: a person's decisions, each bound to a tool and the hash of its
/// exact arguments, approvals with an expiry.
///
/// ```
/// use std::time::Duration;
/// use toolsmith::serde_json::json;
/// use toolsmith::policy::{ApprovalDecision, Approvals};
///
/// let approvals = Approvals::new();
/// approvals.approve("delete_note", &json!({"id": 7}), Duration::from_secs(600));
/// assert!(approvals.is_approved("delete_note", &json!({"id": 7})));
/// assert!(!approvals.is_approved("delete_note", &json!({"id": 8})));
/// ```
#[derive(Default)]
pub struct Approvals {
    grants: Mutex<HashMap<(String, String), Grant>>,
}

impl Approvals {
    /// No decisions yet.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Approves calls of `tool` with exactly these arguments, for `ttl`.
    pub fn approve(&self, tool: &str, arguments: &Value, ttl: Duration) {
        let until = Instant::now().checked_add(ttl);
        self.insert(tool, arguments, Grant::Approved { until });
    }

    /// Declines calls of `tool` with these arguments.
    pub fn deny(&self, tool: &str, arguments: &Value, reason: impl Into<String>) {
        self.insert(
            tool,
            arguments,
            Grant::Denied {
                reason: reason.into(),
            },
        );
    }

    /// Whether such a call is approved now.
    #[must_use]
    pub fn is_approved(&self, tool: &str, arguments: &Value) -> bool {
        self.lookup(tool, &arguments_hash(arguments)) == ApprovalDecision::Approved
    }

    fn insert(&self, tool: &str, arguments: &Value, grant: Grant) {
        let key = (tool.to_owned(), arguments_hash(arguments));
        if let Ok(mut grants) = self.grants.lock() {
            grants.insert(key, grant);
        }
    }

    fn lookup(&self, tool: &str, hash: &str) -> ApprovalDecision {
        let Ok(grants) = self.grants.lock() else {
            return ApprovalDecision::Pending;
        };
        match grants.get(&(tool.to_owned(), hash.to_owned())) {
            None => ApprovalDecision::Pending,
            Some(Grant::Denied { reason }) => ApprovalDecision::Denied(reason.clone()),
            Some(Grant::Approved { until }) => {
                if until.is_none_or(|until| Instant::now() < until) {
                    ApprovalDecision::Approved
                } else {
                    ApprovalDecision::Expired
                }
            }
        }
    }
}

impl Approver for Approvals {
    fn decide<'a>(&'a self, request: &'a ApprovalRequest<'a>) -> BoxFuture<'a, ApprovalDecision> {
        let decision = self.lookup(request.tool, request.arguments_hash);
        Box::pin(async move { decision })
    }
}

impl Approver for std::sync::Arc<Approvals> {
    fn decide<'a>(&'a self, request: &'a ApprovalRequest<'a>) -> BoxFuture<'a, ApprovalDecision> {
        (**self).decide(request)
    }
}

/// The step, for tools that need a person's approval (declared, or destructive): validates
/// the arguments, then asks the approver about this exact call.
pub(crate) struct Approve {
    pub(crate) approver: Option<Arc<dyn Approver>>,
    pub(crate) tool: Arc<dyn Tool>,
}

impl Approve {
    async fn decide(&self, call: &Call<'_>) -> Result<(), ToolError> {
        let def = self.tool.definition();
        let validation = def.validation();
        let limits = crate::validate::limits_for(validation, Some(call.ctx));
        let value = crate::validate::validate_full(validation, &call.arguments, limits)?;
        let hash = arguments_hash(&value);
        let request = ApprovalRequest {
            tool: def.name(),
            arguments: &value,
            arguments_hash: &hash,
            ctx: call.ctx,
        };
        let decision = match &self.approver {
            Some(approver) => approver.decide(&request).await,
            None => ApprovalDecision::Pending,
        };
        let name = def.name();
        match decision {
            ApprovalDecision::Approved => Ok(()),
            ApprovalDecision::Pending => Err(ToolError::approval_required(format!(
                "`{name}` needs a person's approval for these exact arguments ({hash}). Ask the user to approve it, then call again with the same arguments."
            ))),
            ApprovalDecision::Expired => Err(ToolError::new(
                ErrorCode::ApprovalExpired,
                format!(
                    "The approval of this `{name}` call has expired. Ask the user to approve it again."
                ),
            )),
            ApprovalDecision::Denied(reason) => Err(ToolError::new(
                ErrorCode::ApprovalDenied,
                format!(
                    "A person declined this `{name}` call: {reason}. Do not retry it; tell the user."
                ),
            )),
        }
    }
}

impl Step for Approve {
    fn run<'a>(&'a self, call: Call<'a>, next: Next<'a>) -> BoxFuture<'a, Done> {
        Box::pin(async move {
            if let Err(err) = self.decide(&call).await {
                return Done::refused(err);
            }
            next.run(call).await
        })
    }
}

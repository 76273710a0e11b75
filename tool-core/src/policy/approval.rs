//! Who may call a tool (authorization) and which calls a person has approved (approval).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::time::Instant;

use crate::context::ToolContext;
use crate::tool::{BoxFuture, ToolDefinition};

/// Decides whether the context's principal may call a tool, before its arguments are read.
///
/// A closure `Fn(&ToolContext, &ToolDefinition) -> bool` is an authorizer; implement the trait
/// for one that needs to `.await`.
///
/// ```
/// use toolsmith::{ToolContext, ToolDefinition, Toolbox};
///
/// let toolbox = Toolbox::new().with_authorizer(|ctx: &ToolContext, tool: &ToolDefinition| {
///     tool.scopes().iter().all(|scope| ctx.principal() == Some("admin") || !scope.ends_with(":write"))
/// });
/// # let _ = toolbox;
/// ```
pub trait Authorizer: Send + Sync + 'static {
    /// Whether the call may go on.
    fn authorize<'a>(
        &'a self,
        ctx: &'a ToolContext,
        tool: &'a ToolDefinition,
    ) -> BoxFuture<'a, bool>;
}

impl<F> Authorizer for F
where
    F: Fn(&ToolContext, &ToolDefinition) -> bool + Send + Sync + 'static,
{
    fn authorize<'a>(
        &'a self,
        ctx: &'a ToolContext,
        tool: &'a ToolDefinition,
    ) -> BoxFuture<'a, bool> {
        let allowed = self(ctx, tool);
        Box::pin(async move { allowed })
    }
}

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

/// The hash an approval is bound to: `sha256:<hex>` of the arguments with object keys sorted,
/// so the same arguments in another key order hash the same.
///
/// ```
/// use toolsmith::serde_json::json;
/// use toolsmith::arguments_hash;
/// assert_eq!(arguments_hash(&json!({"a": 1, "b": [2]})), arguments_hash(&json!({"b": [2], "a": 1})));
/// assert_ne!(arguments_hash(&json!({"a": 1})), arguments_hash(&json!({"a": 2})));
/// ```
#[must_use]
pub fn arguments_hash(arguments: &Value) -> String {
    /// Writes the canonical JSON straight into the hasher: no intermediate text.
    fn canonical(value: &Value, out: &mut Sha256) {
        match value {
            Value::Object(map) => {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
                out.update(b"{");
                for (i, (key, item)) in entries.into_iter().enumerate() {
                    if i > 0 {
                        out.update(b",");
                    }
                    scalar(key.as_str(), out);
                    out.update(b":");
                    canonical(item, out);
                }
                out.update(b"}");
            }
            Value::Array(items) => {
                out.update(b"[");
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.update(b",");
                    }
                    canonical(item, out);
                }
                out.update(b"]");
            }
            other => scalar(other, out),
        }
    }
    /// A scalar (or a key) as serde_json writes it.
    fn scalar<T: serde::Serialize + ?Sized>(value: &T, out: &mut Sha256) {
        struct Hashing<'a>(&'a mut Sha256);
        impl std::io::Write for Hashing<'_> {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0.update(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        // Writing a string or a JSON scalar into an infallible writer cannot fail.
        let _ = serde_json::to_writer(Hashing(out), value);
    }
    let mut hasher = Sha256::new();
    canonical(arguments, &mut hasher);
    let mut hex = String::with_capacity(7 + 64);
    hex.push_str("sha256:");
    push_hex(&mut hex, &hasher.finalize());
    hex
}

/// Appends `bytes` as lowercase hex digits.
pub(crate) fn push_hex(out: &mut String, bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for byte in bytes {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0x0f)]));
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
/// use toolsmith::{ApprovalDecision, Approvals};
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

//! A person's decision: as it is given ([`Verdict`]), as it travels to its call in an agent
//! run ([`Decided`]), and as the audit keeps it ([`ApprovalNote`]).

use serde::Serialize;

/// A person's decision on one call of an agent run, in that call's context: the tool and
/// the hash it binds, approved or denied (with the reason), and who decided. Only the agent
/// loop makes one, from the run's sealed state.
#[derive(Clone, Debug)]
pub(crate) struct Decided {
    pub(crate) tool: String,
    pub(crate) hash: String,
    pub(crate) denied: Option<String>,
    pub(crate) approver: Option<String>,
    pub(crate) reason: Option<String>,
}

/// The fencing token of the worker that owns the agent run a call belongs to, in the call's
/// context: a newer owner takes over a write an older (dead) owner left running under the
/// same idempotency key, instead of being told it is still running.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RunFence(pub(crate) u64);

/// Keeps a decision an approver's store gave for a call of an agent run as the run's own
/// decision on that call, before the call runs: a crash after the call started never puts
/// it in front of a person again. The agent loop puts it in its calls' contexts.
#[derive(Clone)]
pub(crate) struct KeepDecision(pub(crate) std::sync::Arc<KeepFn>);

/// How a run keeps a decision on one of its calls (by the call's id): `Err` with why not.
pub(crate) type KeepFn =
    dyn Fn(&str, &Decided) -> crate::tool::BoxFuture<'static, Result<(), String>> + Send + Sync;

/// A person's decision on a waiting call: an approval or a denial, who decided and why. In
/// an agent run ([`Agent::decide`](crate::agent::Agent::decide)) it is bound to the call as it
/// waits (its tool and the hash of its arguments) and kept in the run's sealed state until
/// the call has run; in a store ([`Approvals::decide`](crate::policy::Approvals::decide)) it
/// is bound to the principal, the run, the tool and the hash. Either way the call's audit
/// record carries the approver and the reason, and a denial's reason is what the model is
/// told (checked as tool output is, and cut to 500 characters).
///
/// ```
/// use toolsmith::policy::Verdict;
/// let yes = Verdict::approve().by("lin@example.com").because("ticket 7 is a duplicate");
/// let no = Verdict::deny("ticket 8 is evidence in an open case").by("lin@example.com");
/// assert!(yes.is_approval() && !no.is_approval());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub(crate) denied: Option<String>,
    pub(crate) approver: Option<String>,
    pub(crate) reason: Option<String>,
}

impl Verdict {
    /// An approval: the call runs, once, with the arguments the person was shown.
    #[must_use]
    pub fn approve() -> Self {
        Self {
            denied: None,
            approver: None,
            reason: None,
        }
    }

    /// A denial for `reason`: the call never runs, and the model is told why.
    #[must_use]
    pub fn deny(reason: impl Into<String>) -> Self {
        Self {
            denied: Some(reason.into()),
            approver: None,
            reason: None,
        }
    }

    /// A verdict from its parts, as a record of it keeps them.
    pub(crate) fn of_parts(
        denied: Option<String>,
        approver: Option<String>,
        reason: Option<String>,
    ) -> Self {
        Self {
            denied,
            approver,
            reason,
        }
    }

    /// Who decided (as the application names people), for the audit.
    #[must_use]
    pub fn by(mut self, approver: impl Into<String>) -> Self {
        self.approver = Some(approver.into());
        self
    }

    /// Why it was approved, for the audit (a denial's reason is given to [`deny`](Self::deny)).
    #[must_use]
    pub fn because(mut self, reason: impl Into<String>) -> Self {
        match &mut self.denied {
            Some(denied) => *denied = reason.into(),
            None => self.reason = Some(reason.into()),
        }
        self
    }

    /// Whether it is an approval.
    #[must_use]
    pub fn is_approval(&self) -> bool {
        self.denied.is_none()
    }
}

/// A person's decision on the call, as the audit keeps it: with who decided and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ApprovalNote {
    /// `approved` or `denied`.
    pub decision: &'static str,
    /// Who decided, as the application named them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approver: Option<String>,
    /// Why (secrets and paths redacted, cut to 500 characters).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl ApprovalNote {
    /// The note of a decision: approved when `denied` is `None`; the reason is the denial's,
    /// else the approval's.
    pub(crate) fn of(
        denied: Option<&String>,
        approver: Option<&String>,
        reason: Option<&String>,
    ) -> Self {
        Self {
            decision: if denied.is_some() {
                "denied"
            } else {
                "approved"
            },
            approver: approver.map(|a| crate::echo::echo_to(a, 200).into_owned()),
            reason: denied.or(reason).map(|r| {
                crate::echo::echo_to(&crate::output::redact(r), MAX_DENIAL_REASON).into_owned()
            }),
        }
    }
}

impl Decided {
    /// The decision as the audit keeps it.
    pub(crate) fn note(&self) -> ApprovalNote {
        ApprovalNote::of(
            self.denied.as_ref(),
            self.approver.as_ref(),
            self.reason.as_ref(),
        )
    }
}

/// The most characters of a person's reason that the model is shown (a denial's) or the audit
/// keeps.
pub(crate) const MAX_DENIAL_REASON: usize = 500;

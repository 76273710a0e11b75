//! A person's decision on one call of an agent run, as it travels in that call's context.

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

/// The most characters of a person's reason that the model is shown (a denial's) or the audit
/// keeps.
pub(crate) const MAX_DENIAL_REASON: usize = 500;

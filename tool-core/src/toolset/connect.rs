//! How an [`McpToolset`](super::McpToolset) connects to its server over HTTP: the lifecycle it
//! speaks, where its access tokens come from, and who answers the server's questions.

use std::sync::Arc;

use crate::caller::Caller;

use super::token::TokenSource;

/// Which MCP lifecycle a client speaks over HTTP.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Lifecycle {
    /// `initialize`, then a session: MCP 2025-11-25 and earlier. The default: every server
    /// speaks it but those of MCP 2026-07-28 alone.
    #[default]
    Initialize,
    /// `server/discover`, then requests that each carry the revision and the client's
    /// capabilities, with no session: MCP 2026-07-28.
    Discover,
    /// `server/discover` first, and `initialize` when the server does not know it (or does
    /// not answer it within 10 seconds).
    Auto,
}

impl Lifecycle {
    /// rmcp's mode for it.
    pub(super) fn mode(self) -> rmcp::service::ClientLifecycleMode {
        use rmcp::model::ProtocolVersion;
        use rmcp::service::ClientLifecycleMode;
        match self {
            Self::Initialize => ClientLifecycleMode::Initialize,
            Self::Discover => ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
            Self::Auto => ClientLifecycleMode::Auto {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                legacy_version: Some(ProtocolVersion::V_2025_11_25),
            },
        }
    }
}

/// How [`McpToolset::http_with`](super::McpToolset::http_with) connects: plain data, built
/// with its `with_*` methods from the default (MCP's `initialize` lifecycle, no token, no
/// answers to the server's questions).
///
/// ```
/// use std::sync::Arc;
/// use toolsmith::toolset::{Lifecycle, McpClientOptions, StaticToken};
///
/// let options = McpClientOptions::default()
///     .with_lifecycle(Lifecycle::Discover)
///     .with_sign_in(StaticToken::new("a token for this server"));
/// assert_eq!(options.lifecycle, Lifecycle::Discover);
/// ```
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct McpClientOptions {
    /// The lifecycle the client speaks.
    pub lifecycle: Lifecycle,
    /// Where access tokens come from ([`TokenSource`]); none: requests carry no token.
    pub sign_in: Option<Arc<dyn TokenSource>>,
    /// Who answers what the server asks of the client ([`Caller`]): its user's answers to
    /// elicitation forms (the client declares form elicitation only with one), and the
    /// progress the server reports. Sampling and roots are not offered.
    pub caller: Option<Arc<dyn Caller>>,
}

impl std::fmt::Debug for McpClientOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClientOptions")
            .field("lifecycle", &self.lifecycle)
            .field("sign_in", &self.sign_in.is_some())
            .field("caller", &self.caller.is_some())
            .finish()
    }
}

impl McpClientOptions {
    /// Speaks `lifecycle`.
    #[must_use]
    pub fn with_lifecycle(mut self, lifecycle: Lifecycle) -> Self {
        self.lifecycle = lifecycle;
        self
    }

    /// Signs in with tokens from `source`.
    #[must_use]
    pub fn with_sign_in(mut self, source: impl TokenSource) -> Self {
        self.sign_in = Some(Arc::new(source));
        self
    }

    /// Answers the server's questions with `caller`.
    #[must_use]
    pub fn with_caller(mut self, caller: impl Caller) -> Self {
        self.caller = Some(Arc::new(caller));
        self
    }
}

//! [`Defaults`]: the execution settings every tool of a toolbox gets unless it says otherwise.

use std::collections::HashMap;
use std::time::Duration;

use crate::idempotency::IdempotencyPolicy;
use crate::limits::InputLimits;
use crate::spec::{CircuitPolicy, LargeResults, RateLimit, RetryPolicy, RunBudget};

/// Calls running at once, per toolbox, unless [`Defaults::concurrency`] says otherwise.
pub(crate) const DEFAULT_CONCURRENCY: usize = 64;

/// The execution settings of a whole toolbox, given as one value to
/// [`Toolbox::with_defaults`](crate::toolbox::Toolbox::with_defaults). A tool's own
/// `#[tool(...)]` keys and its [`ToolPolicy`](crate::spec::ToolPolicy)
/// ([`Toolbox::with_tool_policy`](crate::toolbox::Toolbox::with_tool_policy)) come on top.
///
/// Each field's default is the one a toolbox has without it: set the fields you mean and take
/// the rest from `Defaults::default()`.
///
/// ```
/// use std::time::Duration;
/// use toolsmith::Toolbox;
/// use toolsmith::policy::{Defaults, RunBudget};
///
/// let toolbox = Toolbox::new().with_defaults(Defaults {
///     timeout: Duration::from_secs(10),
///     budget: Some(RunBudget { max_calls: 20, ..RunBudget::default() }),
///     ..Defaults::default()
/// });
/// # let _ = toolbox;
/// ```
#[derive(Clone, Debug)]
pub struct Defaults {
    /// How long one attempt may take (30 s), unless a tool says `#[tool(timeout = ..)]`.
    pub timeout: Duration,
    /// Retries of transient failures (three attempts, exponential backoff with jitter).
    pub retry: RetryPolicy,
    /// What a run may spend in calls and tool time; none by default (docs/agent-loop.md).
    pub budget: Option<RunBudget>,
    /// When a failing tool is paused (five failures in a row, 30 s).
    pub circuit: CircuitPolicy,
    /// Calls running at once in the toolbox (64); a call beyond it waits for one to end.
    pub concurrency: usize,
    /// Calls admitted at once, waiting or running: one beyond it is turned away at the door,
    /// busy ([`Refusal::Busy`](crate::error::Refusal::Busy), a retryable `rate_limited`
    /// error), instead of waiting. No bound when `None` (the default): a call from the
    /// application's own code waits its turn. An MCP server bounds its toolbox at
    /// `mcp::ServerLimits::max_in_flight` (64) when it
    /// has no bound of its own, since a stranger's calls must not queue without end.
    pub max_in_flight: Option<usize>,
    /// How long idempotency keys are kept, and how long a duplicate waits for the first call.
    pub idempotency: IdempotencyPolicy,
    /// Limits on every call's arguments, unless a tool says `#[tool(limits(..))]`; the
    /// defaults of [`InputLimits`] when `None`.
    pub input_limits: Option<InputLimits>,
    /// What happens to results too large to give a model inline.
    pub large_results: LargeResults,
    /// How long a paging tool's cursor is good for; no expiry when `None`.
    pub cursor_ttl: Option<Duration>,
    /// Rate limits on upstreams that several tools share, by name: a tool names its upstream
    /// with [`ToolPolicy::upstream`](crate::spec::ToolPolicy::upstream).
    pub upstream_limits: HashMap<String, RateLimit>,
    /// Guards on every call's arguments, in order, after they are read and before approval
    /// ([`InputGuard`](super::InputGuard)); none by default.
    pub guards: Vec<super::Guard>,
    /// Repair of arguments a whole call would refuse, without inventing any
    /// ([`Repair`](super::Repair)); off by default: a model's mistake is its to fix.
    pub repair: Option<super::Repair>,
    /// The text a model reads for a failed call, in the application's words
    /// ([`ErrorText`](super::ErrorText)); toolsmith's when `None`.
    pub error_text: Option<super::ErrorText>,
    /// How many calls of one tool may be refused for their arguments in one run before the
    /// model is told to stop calling it (the run goes on); no limit when `None`. A tool's own
    /// [`ToolPolicy::max_invalid`](crate::spec::ToolPolicy::max_invalid) comes first.
    pub max_invalid: Option<u32>,
    /// What each call's `execute_tool` span carries beyond names, ids and outcomes
    /// ([`Telemetry`](crate::telemetry::Telemetry)): no arguments and no results by default.
    pub telemetry: crate::telemetry::Telemetry,
}

impl Default for Defaults {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(30),
            retry: RetryPolicy::default(),
            budget: None,
            circuit: CircuitPolicy::default(),
            concurrency: DEFAULT_CONCURRENCY,
            max_in_flight: None,
            idempotency: IdempotencyPolicy::default(),
            input_limits: None,
            large_results: LargeResults::default(),
            cursor_ttl: None,
            upstream_limits: HashMap::new(),
            guards: Vec::new(),
            repair: None,
            error_text: None,
            max_invalid: None,
            telemetry: crate::telemetry::Telemetry::default(),
        }
    }
}

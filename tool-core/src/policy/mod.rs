//! The execution policy around every call through a [`Toolbox`](crate::Toolbox).
//!
//! Checks run in this order (docs/execution.md): enablement → authorization → validation (for
//! calls that need approval) → approval → run budget → circuit → concurrency limits →
//! timeout and retries → fallback → audit.

mod approval;
pub(crate) use approval::push_hex;
mod audit;
pub(crate) mod run;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use backon::BackoffBuilder;
use tokio::sync::{RwLock, Semaphore};
use tokio::time::Instant;

pub use approval::{
    ApprovalDecision, ApprovalRequest, Approvals, Approver, Authorizer, arguments_hash,
};
pub use audit::{AuditRecord, AuditSink, JsonLinesSink, MemorySink};

use crate::context::ToolContext;
use crate::error::{ErrorCode, ToolError};
use crate::tool::{BoxFuture, ToolDefinition};

/// Retries with exponential backoff and full jitter.
///
/// Only errors marked `retryable` are retried, never `invalid_arguments`, `permission_denied`,
/// `approval_required` or one that needs a person; `retry_after_ms` is honoured; write tools
/// are retried only when declared idempotent.
///
/// ```
/// use std::time::Duration;
/// let retry = toolsmith::RetryPolicy { max_attempts: 5, ..Default::default() };
/// assert_eq!(retry.base, Duration::from_millis(200));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct RetryPolicy {
    /// Attempts per call, the first included (default 3).
    pub max_attempts: u32,
    /// The first delay (default 200 ms).
    pub base: Duration,
    /// The growth of each next delay (default 2).
    pub factor: f32,
    /// The longest delay (default 5 s).
    pub cap: Duration,
    /// Random jitter on each delay (default on).
    pub jitter: bool,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            base: Duration::from_millis(200),
            factor: 2.0,
            cap: Duration::from_secs(5),
            jitter: true,
        }
    }
}

impl RetryPolicy {
    fn delays(&self) -> impl Iterator<Item = Duration> + Send + use<> {
        let mut builder = backon::ExponentialBuilder::default()
            .with_min_delay(self.base)
            .with_max_delay(self.cap)
            .with_factor(self.factor)
            .without_max_times();
        if self.jitter {
            builder = builder.with_jitter();
        }
        builder.build()
    }
}

/// Limits for one run (the calls sharing a `ToolContext` run id), so that a model cannot loop
/// forever.
///
/// ```
/// let budget = toolsmith::RunBudget::default();
/// assert_eq!((budget.max_calls, budget.max_retries_per_tool), (12, 2));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunBudget {
    /// Tool calls per run (default 12).
    pub max_calls: u32,
    /// Retries per tool per run (default 2).
    pub max_retries_per_tool: u32,
    /// Time from the run's first call (default 60 s).
    pub max_latency: Duration,
}

impl Default for RunBudget {
    fn default() -> Self {
        Self {
            max_calls: 12,
            max_retries_per_tool: 2,
            max_latency: Duration::from_secs(60),
        }
    }
}

/// When a tool's circuit opens, and for how long.
///
/// ```
/// assert_eq!(toolsmith::CircuitPolicy::default().failures, 5);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CircuitPolicy {
    /// Consecutive failures (timeouts, upstream and internal errors) that open it (default 5).
    pub failures: u32,
    /// How long it stays open before one probe call decides (default 30 s).
    pub cooldown: Duration,
}

impl Default for CircuitPolicy {
    fn default() -> Self {
        Self {
            failures: 5,
            cooldown: Duration::from_secs(30),
        }
    }
}

/// Execution settings of one tool; unset fields take the toolbox's.
///
/// ```
/// use std::time::Duration;
/// let policy = toolsmith::ToolPolicy { timeout: Some(Duration::from_secs(5)), concurrency: Some(2), ..Default::default() };
/// assert!(!policy.sequential);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolPolicy {
    /// Time per attempt.
    pub timeout: Option<Duration>,
    /// Attempts per call.
    pub max_attempts: Option<u32>,
    /// Calls of this tool running at once.
    pub concurrency: Option<usize>,
    /// Runs alone: no other call runs while it does.
    pub sequential: bool,
    /// A tool to call when this one fails after its retries; its result is marked degraded.
    pub fallback: Option<String>,
    /// The retry timing of this tool (its attempts: `max_attempts`).
    pub retry: Option<RetryPolicy>,
    /// When this tool's circuit opens.
    pub circuit: Option<CircuitPolicy>,
}

/// Decides, per context, whether a tool is offered at all.
pub trait Enablement: Send + Sync + 'static {
    /// Whether the tool is enabled for this context.
    fn enabled<'a>(&'a self, ctx: &'a ToolContext) -> BoxFuture<'a, bool>;

    /// Called once when the enablement is given to a toolbox. An enablement that can change
    /// on its own (like [`Switch`]) keeps `changes` and calls [`ToolsChanged::notify`] when it
    /// does, so that connected clients (an MCP server's) re-read the tool list. The default
    /// does nothing: a predicate over the context changes only with the context.
    fn watch(&self, changes: ToolsChanged) {
        let _ = changes;
    }
}

/// Tells a toolbox's subscribers that the set of enabled tools may have changed (see
/// [`Toolbox::subscribe_changes`](crate::Toolbox::subscribe_changes)).
#[derive(Clone, Debug)]
pub struct ToolsChanged(Arc<tokio::sync::watch::Sender<u64>>);

impl ToolsChanged {
    pub(crate) fn new() -> Self {
        Self(Arc::new(tokio::sync::watch::Sender::new(0)))
    }

    /// Signals a change: every subscriber wakes once, however many changes it missed.
    pub fn notify(&self) {
        self.0
            .send_modify(|generation| *generation = generation.wrapping_add(1));
    }

    pub(crate) fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.0.subscribe()
    }
}

/// An [`Enablement`] flipped at run time: `set` turns the tool on or off everywhere and
/// notifies the toolbox's subscribers (an MCP server sends `notifications/tools/list_changed`).
///
/// ```
/// use toolsmith::{tool, Switch, ToolContext, Toolbox};
///
/// /// Publish a draft by id. Writes data. Not for sent messages.
/// #[tool(effect = "write")]
/// fn publish_draft(
///     /// The draft's id.
///     #[arg(length(min = 1, max = 64))]
///     id: String,
/// ) {
///     let _ = id;
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let publishing = Switch::new(false);
/// let toolbox = Toolbox::new().with(PublishDraft).enable_when("publish_draft", publishing.clone());
/// let mut changes = toolbox.subscribe_changes();
/// assert!(toolbox.definitions_for(&ToolContext::new()).await.is_empty());
///
/// publishing.set(true);
/// assert!(changes.has_changed().unwrap());
/// assert_eq!(toolbox.definitions_for(&ToolContext::new()).await.len(), 1);
/// # });
/// ```
#[derive(Clone, Debug, Default)]
pub struct Switch(Arc<SwitchState>);

#[derive(Debug, Default)]
struct SwitchState {
    on: std::sync::atomic::AtomicBool,
    watchers: Mutex<Vec<ToolsChanged>>,
}

impl Switch {
    /// A switch, initially `on` or off.
    #[must_use]
    pub fn new(on: bool) -> Self {
        let switch = Self::default();
        switch.0.on.store(on, std::sync::atomic::Ordering::Relaxed);
        switch
    }

    /// Whether the switch is on.
    #[must_use]
    pub fn is_on(&self) -> bool {
        self.0.on.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Turns the switch on or off; the toolboxes it was given to are notified when the
    /// state actually changes.
    pub fn set(&self, on: bool) {
        if self.0.on.swap(on, std::sync::atomic::Ordering::Relaxed) != on {
            let watchers = self
                .0
                .watchers
                .lock()
                .map(|w| w.clone())
                .unwrap_or_default();
            for changes in watchers {
                changes.notify();
            }
        }
    }
}

impl Enablement for Switch {
    fn enabled<'a>(&'a self, _ctx: &'a ToolContext) -> BoxFuture<'a, bool> {
        let on = self.is_on();
        Box::pin(async move { on })
    }

    fn watch(&self, changes: ToolsChanged) {
        if let Ok(mut watchers) = self.0.watchers.lock() {
            watchers.push(changes);
        }
    }
}

impl<F> Enablement for F
where
    F: Fn(&ToolContext) -> bool + Send + Sync + 'static,
{
    fn enabled<'a>(&'a self, ctx: &'a ToolContext) -> BoxFuture<'a, bool> {
        let enabled = self(ctx);
        Box::pin(async move { enabled })
    }
}

/// The toolbox-wide settings, set with the `Toolbox::with_*` builders.
#[derive(Clone)]
pub(crate) struct Settings {
    pub(crate) timeout: Duration,
    pub(crate) retry: RetryPolicy,
    pub(crate) budget: RunBudget,
    pub(crate) circuit: CircuitPolicy,
    pub(crate) authorizer: Option<Arc<dyn Authorizer>>,
    pub(crate) approver: Option<Arc<dyn Approver>>,
    pub(crate) sinks: Vec<Arc<dyn AuditSink>>,
    pub(crate) enablement: HashMap<String, Arc<dyn Enablement>>,
    /// Whether any tool runs sequentially: only then do calls take the sequential lock.
    pub(crate) has_sequential: bool,
    pub(crate) overrides: HashMap<String, ToolPolicy>,
    pub(crate) store: Arc<dyn crate::idempotency::IdempotencyStore>,
    pub(crate) idempotency: crate::idempotency::IdempotencyPolicy,
    /// The limits on arguments for tools that set none of their own.
    pub(crate) input_limits: Option<crate::limits::InputLimits>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(30),
            retry: RetryPolicy::default(),
            budget: RunBudget::default(),
            circuit: CircuitPolicy::default(),
            authorizer: None,
            approver: None,
            sinks: Vec::new(),
            enablement: HashMap::new(),
            has_sequential: false,
            overrides: HashMap::new(),
            store: Arc::new(crate::idempotency::MemoryStore::default()),
            idempotency: crate::idempotency::IdempotencyPolicy::default(),
            input_limits: None,
        }
    }
}

impl Settings {
    /// The tool's policy: the definition's, then the toolbox's overrides.
    /// Borrowed unless the toolbox overrides something: no copy on the common path.
    pub(crate) fn policy<'d>(&self, def: &'d ToolDefinition) -> std::borrow::Cow<'d, ToolPolicy> {
        let Some(o) = self.overrides.get(def.name()) else {
            return std::borrow::Cow::Borrowed(def.policy());
        };
        let mut policy = def.policy().clone();
        {
            policy.timeout = o.timeout.or(policy.timeout);
            policy.max_attempts = o.max_attempts.or(policy.max_attempts);
            policy.concurrency = o.concurrency.or(policy.concurrency);
            policy.sequential |= o.sequential;
            policy.fallback = o.fallback.clone().or(policy.fallback);
            policy.retry = o.retry.clone().or(policy.retry);
            policy.circuit = o.circuit.clone().or(policy.circuit);
        }
        std::borrow::Cow::Owned(policy)
    }
}

enum Circuit {
    Closed { failures: u32 },
    Open { until: Instant },
    Probing,
}

struct Run {
    started: Instant,
    calls: u32,
    retries: HashMap<String, u32>,
}

/// What the toolbox remembers between calls: circuits, runs, limiters.
pub(crate) struct State {
    circuits: Mutex<HashMap<String, Circuit>>,
    runs: Mutex<HashMap<String, Run>>,
    per_tool: Mutex<HashMap<String, Arc<Semaphore>>>,
    pub(crate) global: Arc<Semaphore>,
    pub(crate) sequential: RwLock<()>,
    pub(crate) changes: ToolsChanged,
    /// Whether any circuit has ever recorded a failure: until then, calls skip the lock.
    circuits_used: std::sync::atomic::AtomicBool,
}

impl State {
    pub(crate) fn new(max_concurrency: usize, changes: ToolsChanged) -> Self {
        Self {
            circuits: Mutex::default(),
            runs: Mutex::default(),
            per_tool: Mutex::default(),
            global: Arc::new(Semaphore::new(max_concurrency.max(1))),
            sequential: RwLock::new(()),
            changes,
            circuits_used: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Runs `f` on the state of the context's run (made on its first call) after checking the
    /// run's time budget; calls without a run id have no run budget.
    fn with_run(
        &self,
        ctx: &ToolContext,
        budget: &RunBudget,
        f: impl FnOnce(&mut Run) -> Result<(), ToolError>,
    ) -> Result<(), ToolError> {
        let Some(run_id) = ctx.run_id() else {
            return Ok(());
        };
        let Ok(mut runs) = self.runs.lock() else {
            return Ok(());
        };
        let now = Instant::now();
        if runs.len() > 1024 {
            // Forget runs long past their budget, so the map does not grow without end.
            runs.retain(|_, run| now.duration_since(run.started) < budget.max_latency * 2);
        }
        if !runs.contains_key(run_id) {
            runs.insert(
                run_id.to_owned(),
                Run {
                    started: now,
                    calls: 0,
                    retries: HashMap::new(),
                },
            );
        }
        let Some(run) = runs.get_mut(run_id) else {
            return Ok(());
        };
        if now.duration_since(run.started) > budget.max_latency {
            return Err(budget_exhausted(format!(
                "this run has used its time budget of {} s",
                budget.max_latency.as_secs()
            )));
        }
        f(run)
    }

    /// Counts a call against the run's budget.
    pub(crate) fn start_call(
        &self,
        ctx: &ToolContext,
        budget: &RunBudget,
    ) -> Result<(), ToolError> {
        self.with_run(ctx, budget, |run| {
            run.calls += 1;
            if run.calls > budget.max_calls {
                return Err(budget_exhausted(format!(
                    "this run has used its budget of {} tool calls",
                    budget.max_calls
                )));
            }
            Ok(())
        })
    }

    /// Counts a retry of `tool` against the run's budget.
    pub(crate) fn take_retry(
        &self,
        ctx: &ToolContext,
        tool: &str,
        budget: &RunBudget,
    ) -> Result<(), ToolError> {
        self.with_run(ctx, budget, |run| {
            let retries = run.retries.entry(tool.to_owned()).or_insert(0);
            *retries += 1;
            if *retries > budget.max_retries_per_tool {
                return Err(budget_exhausted(format!(
                    "this run has used its {} retries of `{tool}`",
                    budget.max_retries_per_tool
                )));
            }
            Ok(())
        })
    }

    /// Lets a call through the tool's circuit, or fails fast while it is open.
    /// Whether any circuit ever recorded a failure.
    pub(crate) fn circuits_used(&self) -> bool {
        self.circuits_used
            .load(std::sync::atomic::Ordering::Acquire)
    }

    pub(crate) fn enter_circuit(&self, tool: &str) -> Result<(), ToolError> {
        if !self
            .circuits_used
            .load(std::sync::atomic::Ordering::Acquire)
        {
            return Ok(()); // nothing ever failed: every circuit is closed
        }
        let Ok(mut circuits) = self.circuits.lock() else {
            return Ok(());
        };
        let Some(circuit) = circuits.get_mut(tool) else {
            return Ok(()); // never failed: closed
        };
        match *circuit {
            Circuit::Closed { .. } => Ok(()),
            Circuit::Open { until } => {
                let now = Instant::now();
                if now >= until {
                    *circuit = Circuit::Probing;
                    Ok(())
                } else {
                    Err(circuit_open(tool, until - now))
                }
            }
            Circuit::Probing => Err(circuit_open(tool, Duration::from_secs(1))),
        }
    }

    /// Records how a call through the circuit ended.
    pub(crate) fn leave_circuit(&self, tool: &str, failed: bool, policy: &CircuitPolicy) {
        if !failed
            && !self
                .circuits_used
                .load(std::sync::atomic::Ordering::Acquire)
        {
            return; // closed and staying closed
        }
        let Ok(mut circuits) = self.circuits.lock() else {
            return;
        };
        if !failed && !circuits.contains_key(tool) {
            return; // closed and staying closed
        }
        self.circuits_used
            .store(true, std::sync::atomic::Ordering::Release);
        let circuit = circuits
            .entry(tool.to_owned())
            .or_insert(Circuit::Closed { failures: 0 });
        let open = || Circuit::Open {
            until: Instant::now() + policy.cooldown,
        };
        *circuit = match (&*circuit, failed) {
            (_, false) => Circuit::Closed { failures: 0 },
            (Circuit::Probing | Circuit::Open { .. }, true) => open(),
            (Circuit::Closed { failures }, true) if failures + 1 >= policy.failures => open(),
            (Circuit::Closed { failures }, true) => Circuit::Closed {
                failures: failures + 1,
            },
        };
    }

    /// The tool's own limiter, made on first use.
    pub(crate) fn tool_limiter(&self, tool: &str, permits: usize) -> Option<Arc<Semaphore>> {
        let mut limiters = self.per_tool.lock().ok()?;
        Some(Arc::clone(
            limiters
                .entry(tool.to_owned())
                .or_insert_with(|| Arc::new(Semaphore::new(permits.max(1)))),
        ))
    }
}

fn budget_exhausted(what: String) -> ToolError {
    ToolError::new(
        ErrorCode::BudgetExhausted,
        format!("Stopped: {what}. Answer with what you have, or ask the user how to continue."),
    )
}

fn circuit_open(tool: &str, wait: Duration) -> ToolError {
    ToolError::new(
        ErrorCode::CircuitOpen,
        format!("`{tool}` failed several times in a row and is paused; try again later or use another tool."),
    )
    .retry_after(wait)
}

/// Whether an error may be retried by the policy (the error's own flag, and never for codes
/// that need a change or a person).
pub(crate) fn may_retry(err: &ToolError) -> bool {
    err.is_retryable()
        && !err.needs_human()
        && !matches!(
            err.code(),
            ErrorCode::InvalidArguments
                | ErrorCode::PermissionDenied
                | ErrorCode::ApprovalRequired
                | ErrorCode::ApprovalExpired
                | ErrorCode::ApprovalDenied
                | ErrorCode::BudgetExhausted
                | ErrorCode::CircuitOpen
        )
}

/// Whether an error counts against the tool's circuit: the tool or its dependencies failing,
/// not the caller's mistakes.
pub(crate) fn is_failure(err: &ToolError) -> bool {
    matches!(
        err.code(),
        ErrorCode::Timeout
            | ErrorCode::UpstreamError
            | ErrorCode::RateLimited
            | ErrorCode::InternalError
    )
}

/// The delays between attempts, with `retry_after_ms` honoured.
pub(crate) struct Backoff {
    delays: Box<dyn Iterator<Item = Duration> + Send>,
}

impl Backoff {
    pub(crate) fn new(retry: &RetryPolicy) -> Self {
        Self {
            delays: Box::new(retry.delays()),
        }
    }

    pub(crate) fn next(&mut self, err: &ToolError) -> Duration {
        let computed = self.delays.next().unwrap_or(Duration::ZERO);
        let asked = err
            .retry_after_ms()
            .map_or(Duration::ZERO, Duration::from_millis);
        computed.max(asked)
    }
}

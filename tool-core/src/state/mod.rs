//! The runtime's shared state, behind traits with an in-memory implementation (the default,
//! for one process) and a Redis one (`RedisStore`, feature `redis`, for a fleet): rate limits
//! ([`RateLimiter`]), run budgets ([`BudgetStore`]) and circuit breakers ([`CircuitStore`])
//! here; idempotency keys and stored results have theirs in `idempotency` and `output`, and
//! approvals in `policy` (`SharedApprovals`). `Toolbox::with_shared_state` puts them all in
//! one store; docs/deployment.md says what is shared and how it fails.

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;
use std::time::Duration;

use crate::spec::RateLimit;
use crate::tool::BoxFuture;

/// The shared state could not be reached or read: the call it guards is not run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateError(pub String);

impl fmt::Display for StateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StateError {}

/// Where rate limits keep their counts: one process's memory ([`MemoryRateLimiter`], the
/// default) or Redis (`RedisStore` with the `redis` feature), shared by every process of a
/// fleet. Each limit is a GCRA (the generic cell rate algorithm, a token bucket kept as one
/// timestamp per key): `limit.calls` calls per `limit.per`, and at most `limit.burst` at once.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// use toolsmith::policy::RateLimit;
/// use toolsmith::state::{MemoryRateLimiter, RateLimiter};
/// let limiter = MemoryRateLimiter::new();
/// let limit = RateLimit::per_second(2);
/// assert_eq!(limiter.acquire("search", &limit).await, Ok(None));
/// let wait = limiter.acquire("search", &limit).await.unwrap().expect("the second call waits");
/// assert!(wait <= std::time::Duration::from_millis(500));
/// # });
/// ```
pub trait RateLimiter: Send + Sync + 'static {
    /// Takes one call from the limit named `key`: `Ok(None)` when the call may go now,
    /// `Ok(Some(wait))` when it may go after `wait` (nothing is taken then).
    ///
    /// # Errors
    ///
    /// A [`StateError`] when the state cannot be reached; the toolbox then refuses the call
    /// with a retryable error rather than let it through unlimited.
    fn acquire<'a>(
        &'a self,
        key: &'a str,
        limit: &'a RateLimit,
    ) -> BoxFuture<'a, Result<Option<Duration>, StateError>>;
}

/// Rate limits in this process's memory: one timestamp per limit.
pub struct MemoryRateLimiter {
    /// The theoretical arrival time of the next call, per key, since `start`.
    next: Mutex<HashMap<String, Duration>>,
    /// The instant the limiter's times count from.
    start: tokio::time::Instant,
}

impl Default for MemoryRateLimiter {
    fn default() -> Self {
        Self {
            next: Mutex::default(),
            start: tokio::time::Instant::now(),
        }
    }
}

impl MemoryRateLimiter {
    /// An empty limiter.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }
}

impl RateLimiter for MemoryRateLimiter {
    fn acquire<'a>(
        &'a self,
        key: &'a str,
        limit: &'a RateLimit,
    ) -> BoxFuture<'a, Result<Option<Duration>, StateError>> {
        let now = self.start.elapsed();
        let decided = match self.next.lock() {
            Ok(mut next) => {
                let tat = next.get(key).copied().unwrap_or(now);
                match gcra(now, tat, limit) {
                    Ok(new_tat) => {
                        next.insert(key.to_owned(), new_tat);
                        Ok(None)
                    }
                    Err(wait) => Ok(Some(wait)),
                }
            }
            Err(_) => Err(StateError("the rate limiter's lock is poisoned".to_owned())),
        };
        Box::pin(std::future::ready(decided))
    }
}

/// GCRA: with the next call theoretically due at `tat`, a call at `now` goes (`Ok`, with the
/// new due time) when it is at most `burst - 1` intervals early; else it waits (`Err`).
pub(crate) fn gcra(now: Duration, tat: Duration, limit: &RateLimit) -> Result<Duration, Duration> {
    let interval = limit.interval();
    let tolerance = interval * limit.burst.max(1).saturating_sub(1);
    let due = tat.max(now);
    let allowed_from = due.saturating_sub(tolerance);
    if now < allowed_from {
        Err(allowed_from - now)
    } else {
        Ok(due + interval)
    }
}

/// What a run has used so far, as a [`BudgetStore`] counts it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RunUsage {
    /// Tool calls, this one included.
    pub calls: u32,
    /// Time spent in the run's tool attempts.
    pub tool_time: Duration,
}

/// Where run budgets keep their counts when a fleet shares them (the Redis store, feature
/// `redis`); without one, each toolbox counts in its own memory. Every operation is one atomic
/// step on the store, so a run's limit holds exactly across processes.
pub trait BudgetStore: Send + Sync + 'static {
    /// Counts one call of the run `run`; the run's usage with it.
    ///
    /// # Errors
    ///
    /// A [`StateError`] when the store cannot be reached (the call is then refused, retryably).
    fn count_call<'a>(&'a self, run: &'a str) -> BoxFuture<'a, Result<RunUsage, StateError>>;

    /// Counts one retry of `tool` in the run; the run's retries of that tool with it.
    ///
    /// # Errors
    ///
    /// A [`StateError`] when the store cannot be reached.
    fn count_retry<'a>(
        &'a self,
        run: &'a str,
        tool: &'a str,
    ) -> BoxFuture<'a, Result<u32, StateError>>;

    /// Adds the time one attempt took to the run's.
    ///
    /// # Errors
    ///
    /// A [`StateError`] when the store cannot be reached (the time is then not counted).
    fn add_time<'a>(
        &'a self,
        run: &'a str,
        took: Duration,
    ) -> BoxFuture<'a, Result<(), StateError>>;
}

/// Where circuit breakers keep their state when a fleet shares them (the Redis store, feature
/// `redis`): failures seen by one process open the circuit for all. Without one, each toolbox
/// keeps its circuits in memory.
pub trait CircuitStore: Send + Sync + 'static {
    /// Whether a call of `tool` may go: `Ok(None)`, or `Ok(Some(wait))` while the circuit is
    /// open (or another process makes the one probe call after the cooldown). A probe is let
    /// through for at most `cooldown` before another may go.
    ///
    /// # Errors
    ///
    /// A [`StateError`] when the store cannot be reached (the call is then refused, retryably).
    fn admit<'a>(
        &'a self,
        tool: &'a str,
        cooldown: Duration,
    ) -> BoxFuture<'a, Result<Option<Duration>, StateError>>;

    /// Records how a call of `tool` ended: a success closes the circuit; a failure counts,
    /// and opens it for `cooldown` at the `failures`th in a row or when it was a probe.
    ///
    /// # Errors
    ///
    /// A [`StateError`] when the store cannot be reached (the record is then lost).
    fn record<'a>(
        &'a self,
        tool: &'a str,
        failed: bool,
        failures: u32,
        cooldown: Duration,
    ) -> BoxFuture<'a, Result<(), StateError>>;
}

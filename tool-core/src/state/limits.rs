//! Rate limits: the store trait and its in-memory form.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use super::error::StoreError;
use crate::spec::RateLimit;
use crate::tool::BoxFuture;

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
    /// A [`StoreError`] when the state cannot be reached; the toolbox then refuses the call
    /// with a retryable error rather than let it through unlimited.
    fn acquire<'a>(
        &'a self,
        key: &'a str,
        limit: &'a RateLimit,
    ) -> BoxFuture<'a, Result<Option<Duration>, StoreError>>;
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
    ) -> BoxFuture<'a, Result<Option<Duration>, StoreError>> {
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
            Err(_) => Err(StoreError("the rate limiter's lock is poisoned".to_owned())),
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

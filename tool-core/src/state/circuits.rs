//! Circuit breakers shared by a fleet: the store trait.

use std::time::Duration;

use super::error::StoreError;
use crate::tool::BoxFuture;

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
    /// A [`StoreError`] when the store cannot be reached (the call is then refused, retryably).
    fn admit<'a>(
        &'a self,
        tool: &'a str,
        cooldown: Duration,
    ) -> BoxFuture<'a, Result<Option<Duration>, StoreError>>;

    /// Records how a call of `tool` ended: a success closes the circuit; a failure counts,
    /// and opens it for `cooldown` at the `failures`th in a row or when it was a probe.
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when the store cannot be reached (the record is then lost).
    fn record<'a>(
        &'a self,
        tool: &'a str,
        failed: bool,
        failures: u32,
        cooldown: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
}

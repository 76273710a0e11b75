//! Circuit breakers shared by a fleet: the store trait.

use std::time::Duration;

use super::error::StoreError;
use crate::tool::BoxFuture;

/// What a [`CircuitStore`] says of a call about to go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// The circuit is closed and counts no failure: the call may go, and a process may take
    /// the circuit for closed a short while without asking again.
    Clear,
    /// The call may go: the circuit is closed but counts failures, or this call is the one
    /// probe after the cooldown. Its end must be recorded.
    Go,
    /// The circuit is open (or another process makes the one probe call): try again after
    /// this long.
    Wait(Duration),
}

/// Where circuit breakers keep their state when a fleet shares them (the Redis store, feature
/// `redis`): failures seen by one process open the circuit for all. Without one, each toolbox
/// keeps its circuits in memory.
pub trait CircuitStore: Send + Sync + 'static {
    /// Whether a call of `tool` may go ([`Admission`]). A probe is let through for at most
    /// `cooldown` before another may go.
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when the store cannot be reached (the call is then refused, retryably).
    fn admit<'a>(
        &'a self,
        tool: &'a str,
        cooldown: Duration,
    ) -> BoxFuture<'a, Result<Admission, StoreError>>;

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

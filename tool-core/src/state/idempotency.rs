//! Where idempotency keys and first results are kept: the store trait and what it answers.

use std::time::Duration;

use super::error::StoreError;
use crate::tool::BoxFuture;

/// What `reserve` found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reservation {
    /// The key was free and is now reserved for this call: run it.
    Reserved,
    /// Another call holds the key; it is still running.
    InProgress {
        /// The fingerprint of that call's arguments.
        fingerprint: String,
    },
    /// The key's first call finished; this is its envelope.
    Done {
        /// The fingerprint of that call's arguments.
        fingerprint: String,
        /// The envelope it returned, as JSON.
        envelope: String,
    },
}

/// Where idempotency keys and first results are kept. `reserve` must be atomic: of concurrent
/// reservations of one key, exactly one gets `Reserved`.
pub trait IdempotencyStore: Send + Sync + 'static {
    /// Reserves `key` for a call whose arguments have `fingerprint`, for `ttl` (the
    /// policy's lease: the reservation is renewed while the call runs, so one whose process
    /// died is free again after it), unless it is held or done.
    fn reserve<'a>(
        &'a self,
        key: &'a str,
        fingerprint: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Reservation, StoreError>>;
    /// Stores the envelope of the reserved call, for `ttl`.
    fn complete<'a>(
        &'a self,
        key: &'a str,
        fingerprint: &'a str,
        envelope: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
    /// Frees the reservation so that a retry can run (after a retryable failure).
    fn release<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StoreError>>;
    /// Holds the running reservation of `key` (for a call with `fingerprint`) for `lease`
    /// more from now; nothing when the key is not running for that fingerprint.
    fn renew<'a>(
        &'a self,
        key: &'a str,
        fingerprint: &'a str,
        lease: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
    /// What is stored under `key`, if anything.
    fn lookup<'a>(&'a self, key: &'a str)
    -> BoxFuture<'a, Result<Option<Reservation>, StoreError>>;

    /// [`reserve`](Self::reserve) for a call of an agent run whose worker holds fencing token
    /// `fence`: a running reservation of the same call (same fingerprint) made under an older
    /// token is taken over (its worker lost the run, so nobody runs it) and `Reserved`
    /// answered. The stores of this crate do so atomically; the default reserves as
    /// `reserve` does, so a store that keeps no tokens answers `InProgress` until the dead
    /// worker's lease on the key expires.
    fn reserve_fenced<'a>(
        &'a self,
        key: &'a str,
        fingerprint: &'a str,
        ttl: Duration,
        fence: u64,
    ) -> BoxFuture<'a, Result<Reservation, StoreError>> {
        let _ = fence;
        self.reserve(key, fingerprint, ttl)
    }
}

impl<S: IdempotencyStore> IdempotencyStore for std::sync::Arc<S> {
    fn reserve<'a>(
        &'a self,
        key: &'a str,
        fingerprint: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Reservation, StoreError>> {
        (**self).reserve(key, fingerprint, ttl)
    }
    fn complete<'a>(
        &'a self,
        key: &'a str,
        fingerprint: &'a str,
        envelope: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        (**self).complete(key, fingerprint, envelope, ttl)
    }
    fn release<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        (**self).release(key)
    }
    fn renew<'a>(
        &'a self,
        key: &'a str,
        fingerprint: &'a str,
        lease: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        (**self).renew(key, fingerprint, lease)
    }
    fn lookup<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<Reservation>, StoreError>> {
        (**self).lookup(key)
    }
    fn reserve_fenced<'a>(
        &'a self,
        key: &'a str,
        fingerprint: &'a str,
        ttl: Duration,
        fence: u64,
    ) -> BoxFuture<'a, Result<Reservation, StoreError>> {
        (**self).reserve_fenced(key, fingerprint, ttl, fence)
    }
}

//! Idempotency for write tools: every call of a `write` or `destructive` tool has a key, and a
//! store remembers what each key's first call returned, so a retry or a duplicate replays it
//! instead of acting twice.

#[cfg(feature = "redis")]
mod redis_store;

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::time::Instant;

#[cfg(feature = "redis")]
pub use redis_store::RedisStore;

use crate::policy::arguments_hash;
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

/// The store could not be reached or answered nonsense.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreError(pub String);

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "idempotency store: {}", self.0)
    }
}

impl std::error::Error for StoreError {}

/// Where idempotency keys and first results are kept. `reserve` must be atomic: of concurrent
/// reservations of one key, exactly one gets `Reserved`.
pub trait IdempotencyStore: Send + Sync + 'static {
    /// Reserves `key` for a call whose arguments have `fingerprint`, for `ttl`, unless it is
    /// held or done.
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
    /// What is stored under `key`, if anything.
    fn lookup<'a>(&'a self, key: &'a str)
    -> BoxFuture<'a, Result<Option<Reservation>, StoreError>>;
}

/// How keys are made and kept.
///
/// ```
/// let idem = toolsmith_core::IdempotencyPolicy::default();
/// assert_eq!(idem.ttl.as_secs(), 24 * 3600);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdempotencyPolicy {
    /// How long a first result is kept (default 24 h).
    pub ttl: Duration,
    /// How long a duplicate waits for a call still running, before a retryable error
    /// (default 10 s).
    pub wait: Duration,
    /// Derive keys per run (the same arguments in another run act again) rather than globally
    /// (default: globally).
    pub per_run: bool,
}

impl Default for IdempotencyPolicy {
    fn default() -> Self {
        Self {
            ttl: Duration::from_secs(24 * 3600),
            wait: Duration::from_secs(10),
            per_run: false,
        }
    }
}

/// The name of the parameter through which a caller gives its own key.
pub const KEY_PARAMETER: &str = "idempotency_key";
/// The shortest key a caller may give.
pub const MIN_KEY_LEN: usize = 16;

/// A call's key: the one the tool sees, the one stored, and the arguments' fingerprint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CallKey {
    pub(crate) visible: String,
    pub(crate) stored: String,
    pub(crate) fingerprint: String,
}

/// The key of a call of `tool` with validated `arguments`: the caller's own
/// (`idempotency_key`, at least 16 characters), or SHA-256 over the tool's name, the principal
/// (keys never cross users: one user's call is never replayed to another), the run (when keys
/// are per run) and the canonical JSON of the arguments (keys sorted, integral numbers written
/// as integers).
///
/// ```
/// use serde_json::json;
/// use toolsmith_core::derive_idempotency_key;
/// let a = derive_idempotency_key("create_ticket", &json!({"title": "x", "n": 5.0}), Some("ada"), None);
/// let b = derive_idempotency_key("create_ticket", &json!({"n": 5, "title": "x"}), Some("ada"), None);
/// assert_eq!(a, b);
/// assert!(a.starts_with("idem_") && a.len() == 5 + 32);
/// assert_ne!(a, derive_idempotency_key("create_ticket", &json!({"n": 5, "title": "x"}), Some("bob"), None));
/// ```
#[must_use]
pub fn derive_idempotency_key(
    tool: &str,
    arguments: &Value,
    principal: Option<&str>,
    run: Option<&str>,
) -> String {
    let hash = arguments_hash(&crate::validate::normalized_integers(arguments));
    derived_key(tool, principal, run, &hash)
}

/// `idem_` + 32 hex digits of SHA-256 over the scope and the arguments' canonical hash.
fn derived_key(tool: &str, principal: Option<&str>, run: Option<&str>, hash: &str) -> String {
    let digest = digest_of(&[Some(tool), principal, run, Some(hash)]);
    let mut key = String::with_capacity(5 + 32);
    key.push_str("idem_");
    crate::policy::push_hex(&mut key, &digest[..16]);
    key
}

/// SHA-256 over `parts`, each length-prefixed (an absent part has its own marker), so that
/// no two different lists of parts hash the same bytes.
fn digest_of(parts: &[Option<&str>]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    for part in parts {
        match part {
            Some(text) => {
                hasher.update((text.len() as u64).to_le_bytes());
                hasher.update(text.as_bytes());
            }
            None => hasher.update(u64::MAX.to_le_bytes()),
        }
    }
    hasher.finalize().into()
}

/// Whose call it is: the principal always, the run when keys are per run.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct KeyScope<'a> {
    pub(crate) principal: Option<&'a str>,
    pub(crate) run: Option<&'a str>,
}

pub(crate) fn call_key(tool: &str, arguments: &Value, scope: KeyScope<'_>) -> CallKey {
    let normalized = crate::validate::normalized_integers(arguments);
    let given = match &*normalized {
        Value::Object(map) => map.get(KEY_PARAMETER),
        _ => None,
    };
    let own = given
        .and_then(Value::as_str)
        .filter(|k| k.chars().count() >= MIN_KEY_LEN)
        .map(str::to_owned);
    let hash = arguments_hash(&normalized);
    // The fingerprint leaves the caller's key out: it is what a reused key is compared on.
    let fingerprint = if given.is_some() {
        let mut without_key = normalized.clone().into_owned();
        if let Value::Object(map) = &mut without_key {
            map.shift_remove(KEY_PARAMETER);
        }
        arguments_hash(&without_key)
    } else {
        hash.clone()
    };
    match own {
        Some(own) => {
            // A caller's key is scoped like a derived one: the same key from another user is
            // another key.
            let digest = digest_of(&[Some(tool), scope.principal, Some(&own)]);
            let mut stored = String::with_capacity(4 + 32);
            stored.push_str("own_");
            crate::policy::push_hex(&mut stored, &digest[..16]);
            CallKey {
                visible: own,
                stored,
                fingerprint,
            }
        }
        None => {
            let key = derived_key(tool, scope.principal, scope.run, &hash);
            CallKey {
                visible: key.clone(),
                stored: key,
                fingerprint,
            }
        }
    }
}

enum Slot {
    Running {
        fingerprint: String,
        until: Instant,
    },
    Done {
        fingerprint: String,
        envelope: String,
        until: Instant,
    },
}

impl Slot {
    fn until(&self) -> Instant {
        match self {
            Self::Running { until, .. } | Self::Done { until, .. } => *until,
        }
    }
}

/// The default store: in memory, per process, with a TTL per entry and a bounded size (expired
/// entries go first, then the oldest finished ones; running calls are never evicted).
///
/// ```
/// let store = toolsmith_core::MemoryStore::new(10_000);
/// # let _ = store;
/// ```
pub struct MemoryStore {
    slots: Mutex<Slots>,
    capacity: usize,
}

/// Keys are digests or caller-given keys scoped by a digest; foldhash is seeded per process.
type Slots = HashMap<String, Slot, foldhash::fast::RandomState>;

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new(100_000)
    }
}

impl MemoryStore {
    /// A store keeping at most `capacity` keys.
    #[must_use]
    pub fn new(capacity: usize) -> Self {
        Self {
            slots: Mutex::new(Slots::default()),
            capacity: capacity.max(1),
        }
    }

    /// Keeps the store under its capacity: expired slots go first, then the oldest tenth of
    /// the finished ones at once, so that a full store costs one scan per many inserts rather
    /// than one per insert. Running slots are never evicted.
    fn make_room(slots: &mut Slots, capacity: usize, now: Instant) {
        if slots.len() < capacity {
            return;
        }
        slots.retain(|_, slot| slot.until() > now);
        if slots.len() < capacity {
            return;
        }
        // The expiry of the tenth-oldest finished slot; it and every older one go, in one
        // pass without copying keys.
        let mut done: Vec<Instant> = slots
            .values()
            .filter(|s| matches!(s, Slot::Done { .. }))
            .map(Slot::until)
            .collect();
        let evict = (capacity / 10).max(1).min(done.len());
        if evict == 0 {
            return;
        }
        let (_, &mut cutoff, _) = done.select_nth_unstable(evict - 1);
        slots.retain(|_, slot| !matches!(slot, Slot::Done { until, .. } if *until <= cutoff));
    }
}

fn poisoned() -> StoreError {
    StoreError("the in-memory store's lock is poisoned".into())
}

impl IdempotencyStore for MemoryStore {
    fn reserve<'a>(
        &'a self,
        key: &'a str,
        fingerprint: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Reservation, StoreError>> {
        let result = (|| {
            let mut slots = self.slots.lock().map_err(|_| poisoned())?;
            let now = Instant::now();
            match slots.get(key) {
                Some(Slot::Running {
                    fingerprint: fp,
                    until,
                }) if *until > now => {
                    return Ok(Reservation::InProgress {
                        fingerprint: fp.clone(),
                    });
                }
                Some(Slot::Done {
                    fingerprint: fp,
                    envelope,
                    until,
                }) if *until > now => {
                    return Ok(Reservation::Done {
                        fingerprint: fp.clone(),
                        envelope: envelope.clone(),
                    });
                }
                _ => {}
            }
            Self::make_room(&mut slots, self.capacity, now);
            slots.insert(
                key.to_owned(),
                Slot::Running {
                    fingerprint: fingerprint.to_owned(),
                    until: now + ttl,
                },
            );
            Ok(Reservation::Reserved)
        })();
        Box::pin(async move { result })
    }

    fn complete<'a>(
        &'a self,
        key: &'a str,
        fingerprint: &'a str,
        envelope: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let result = self.slots.lock().map_err(|_| poisoned()).map(|mut slots| {
            let done = Slot::Done {
                fingerprint: fingerprint.to_owned(),
                envelope: envelope.to_owned(),
                until: Instant::now() + ttl,
            };
            // Usually the call's own reservation: replaced in place, its key kept.
            match slots.get_mut(key) {
                Some(slot) => *slot = done,
                None => {
                    slots.insert(key.to_owned(), done);
                }
            }
        });
        Box::pin(async move { result })
    }

    fn release<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        let result = self.slots.lock().map_err(|_| poisoned()).map(|mut slots| {
            if matches!(slots.get(key), Some(Slot::Running { .. })) {
                slots.remove(key);
            }
        });
        Box::pin(async move { result })
    }

    fn lookup<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<Reservation>, StoreError>> {
        let result = self.slots.lock().map_err(|_| poisoned()).map(|slots| {
            let now = Instant::now();
            slots
                .get(key)
                .filter(|s| s.until() > now)
                .map(|slot| match slot {
                    Slot::Running { fingerprint, .. } => Reservation::InProgress {
                        fingerprint: fingerprint.clone(),
                    },
                    Slot::Done {
                        fingerprint,
                        envelope,
                        ..
                    } => Reservation::Done {
                        fingerprint: fingerprint.clone(),
                        envelope: envelope.clone(),
                    },
                })
        });
        Box::pin(async move { result })
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
    fn lookup<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<Reservation>, StoreError>> {
        (**self).lookup(key)
    }
}

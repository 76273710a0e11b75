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
/// let idem = toolsmith::IdempotencyPolicy::default();
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
/// use toolsmith::serde_json::json;
/// use toolsmith::derive_idempotency_key;
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

impl Slot {
    /// What the slot costs in memory, roughly: its texts and a fixed overhead.
    fn size(key: &str, fingerprint: &str, envelope: &str) -> usize {
        key.len() + fingerprint.len() + envelope.len() + SLOT_OVERHEAD
    }
}

/// The bytes a slot costs beyond its texts (the map entry, the strings' headers).
const SLOT_OVERHEAD: usize = 128;

/// The default store: in memory, per process, with a TTL per entry and bounded in keys and in
/// bytes (expired entries go first, then the oldest finished ones; running calls are never
/// evicted).
///
/// Defaults: 100,000 keys and 64 MiB. One result larger than a sixteenth of the byte budget
/// (4 MiB by default) is not kept whole: the key remembers that the call was done, and a
/// repeat is answered with a replay that says so instead of running the action again.
///
/// ```
/// let store = toolsmith::MemoryStore::new(10_000).with_max_bytes(16 << 20);
/// # let _ = store;
/// ```
pub struct MemoryStore {
    inner: Mutex<Inner>,
    capacity: usize,
    max_bytes: usize,
}

struct Inner {
    slots: Slots,
    /// The sum of the slots' sizes.
    bytes: usize,
}

/// Keys are digests or caller-given keys scoped by a digest; foldhash is seeded per process.
type Slots = HashMap<String, (Slot, usize), foldhash::fast::RandomState>;

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new(100_000)
    }
}

impl MemoryStore {
    /// The default byte budget.
    pub const DEFAULT_MAX_BYTES: usize = 64 << 20;

    /// A store keeping at most `capacity` keys (and [`DEFAULT_MAX_BYTES`](Self::DEFAULT_MAX_BYTES)).
    #[must_use]
    pub fn new(capacity: usize) -> Self {
        Self {
            inner: Mutex::new(Inner {
                slots: Slots::default(),
                bytes: 0,
            }),
            capacity: capacity.max(1),
            max_bytes: Self::DEFAULT_MAX_BYTES,
        }
    }

    /// Sets the most bytes the store keeps (keys, fingerprints and stored results).
    ///
    /// ```
    /// let store = toolsmith::MemoryStore::default().with_max_bytes(1 << 20);
    /// # let _ = store;
    /// ```
    #[must_use]
    pub fn with_max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes.max(SLOT_OVERHEAD * 16);
        self
    }

    /// The keys kept now (running, finished, and expired ones not yet evicted).
    ///
    /// ```
    /// assert_eq!(toolsmith::MemoryStore::default().len(), 0);
    /// ```
    #[must_use]
    pub fn len(&self) -> usize {
        self.inner.lock().map_or(0, |inner| inner.slots.len())
    }

    /// Whether no key is kept.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes the kept keys, fingerprints and results take, as the budget counts them.
    ///
    /// ```
    /// assert_eq!(toolsmith::MemoryStore::default().size_in_bytes(), 0);
    /// ```
    #[must_use]
    pub fn size_in_bytes(&self) -> usize {
        self.inner.lock().map_or(0, |inner| inner.bytes)
    }

    /// Keeps the store under its capacity and byte budget with room for `incoming` more
    /// bytes: expired slots go first, then the oldest finished ones (at least a tenth of them
    /// at once, so that a full store costs one scan per many inserts rather than one per
    /// insert). Running slots are never evicted.
    fn make_room(&self, inner: &mut Inner, now: Instant, incoming: usize, new_key: bool) {
        let over = |inner: &Inner| {
            (new_key && inner.slots.len() >= self.capacity)
                || inner.bytes.saturating_add(incoming) > self.max_bytes
        };
        if !over(inner) {
            return;
        }
        let mut freed = 0;
        inner.slots.retain(|_, (slot, size)| {
            let keep = slot.until() > now;
            if !keep {
                freed += *size;
            }
            keep
        });
        inner.bytes -= freed;
        if !over(inner) {
            return;
        }
        // The finished slots, oldest first: enough of them go to free a tenth of the keys
        // and the bytes needed (and a tenth of the budget), in one pass without copying keys.
        let mut done: Vec<(Instant, usize)> = inner
            .slots
            .values()
            .filter(|(s, _)| matches!(s, Slot::Done { .. }))
            .map(|(s, size)| (s.until(), *size))
            .collect();
        if done.is_empty() {
            return;
        }
        done.sort_unstable_by_key(|(until, _)| *until);
        let keys = (self.capacity / 10).max(1);
        let bytes = (inner.bytes + incoming).saturating_sub(self.max_bytes) + self.max_bytes / 10;
        let (mut count, mut sum, mut cutoff) = (0, 0, done[0].0);
        for (until, size) in &done {
            if count >= keys && sum >= bytes {
                break;
            }
            count += 1;
            sum += size;
            cutoff = *until;
        }
        let mut freed = 0;
        inner.slots.retain(|_, (slot, size)| {
            let evict = matches!(slot, Slot::Done { until, .. } if *until <= cutoff);
            if evict {
                freed += *size;
            }
            !evict
        });
        inner.bytes -= freed;
    }

    /// The envelope kept for a finished call: the call's own, or, when it is larger than a
    /// sixteenth of the budget, a replay that says the call was done and its result not kept.
    fn kept(&self, envelope: &str) -> std::borrow::Cow<'static, str> {
        if envelope.len() <= self.max_bytes / 16 {
            return std::borrow::Cow::Owned(envelope.to_owned());
        }
        let note = serde_json::json!({
            "status": "success",
            "data": {
                "already_done": true,
                "result": format!(
                    "This call was already done. Its result ({} bytes) was larger than the {} bytes the idempotency store keeps per result, so it is not repeated here; the action was not run again.",
                    envelope.len(),
                    self.max_bytes / 16
                ),
            },
        });
        std::borrow::Cow::Owned(note.to_string())
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
            let mut inner = self.inner.lock().map_err(|_| poisoned())?;
            let now = Instant::now();
            match inner.slots.get(key).map(|(slot, _)| slot) {
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
            let size = Slot::size(key, fingerprint, "");
            self.make_room(&mut inner, now, size, true);
            let slot = Slot::Running {
                fingerprint: fingerprint.to_owned(),
                until: now + ttl,
            };
            inner.bytes += size;
            if let Some((_, old)) = inner.slots.insert(key.to_owned(), (slot, size)) {
                inner.bytes -= old;
            }
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
        let kept = self.kept(envelope);
        let result = self.inner.lock().map_err(|_| poisoned()).map(|mut inner| {
            let now = Instant::now();
            let size = Slot::size(key, fingerprint, &kept);
            let done = Slot::Done {
                fingerprint: fingerprint.to_owned(),
                envelope: kept.into_owned(),
                until: now + ttl,
            };
            // Usually the call's own reservation: replaced in place, its key kept.
            let old = inner.slots.get(key).map(|(_, size)| *size);
            self.make_room(
                &mut inner,
                now,
                size.saturating_sub(old.unwrap_or(0)),
                old.is_none(),
            );
            let inner = &mut *inner;
            match inner.slots.get_mut(key) {
                Some(slot) => {
                    inner.bytes -= slot.1;
                    *slot = (done, size);
                }
                None => {
                    inner.slots.insert(key.to_owned(), (done, size));
                }
            }
            inner.bytes += size;
        });
        Box::pin(async move { result })
    }

    fn release<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        let result = self.inner.lock().map_err(|_| poisoned()).map(|mut inner| {
            if matches!(inner.slots.get(key), Some((Slot::Running { .. }, _)))
                && let Some((_, size)) = inner.slots.remove(key)
            {
                inner.bytes -= size;
            }
        });
        Box::pin(async move { result })
    }

    fn lookup<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<Reservation>, StoreError>> {
        let result = self.inner.lock().map_err(|_| poisoned()).map(|inner| {
            let now = Instant::now();
            inner
                .slots
                .get(key)
                .map(|(slot, _)| slot)
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

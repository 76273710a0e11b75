//! The in-memory store: bounded in bytes, oldest entries evicted first.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use super::error::StoreError;
use super::idempotency::{IdempotencyStore, Reservation};
use crate::tool::BoxFuture;

enum Slot {
    Running {
        fingerprint: String,
        until: Instant,
        /// The fencing token of the agent run's worker that reserved it (0: none).
        fence: u64,
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
/// let store = toolsmith::state::MemoryIdempotencyStore::new(10_000).with_max_bytes(16 << 20);
/// # let _ = store;
/// ```
pub struct MemoryIdempotencyStore {
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

impl Default for MemoryIdempotencyStore {
    fn default() -> Self {
        Self::new(100_000)
    }
}

impl MemoryIdempotencyStore {
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
    /// let store = toolsmith::state::MemoryIdempotencyStore::default().with_max_bytes(1 << 20);
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
    /// assert_eq!(toolsmith::state::MemoryIdempotencyStore::default().len(), 0);
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
    /// assert_eq!(toolsmith::state::MemoryIdempotencyStore::default().size_in_bytes(), 0);
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

impl MemoryIdempotencyStore {
    fn reserve_with(
        &self,
        key: &str,
        fingerprint: &str,
        ttl: Duration,
        fence: u64,
    ) -> Result<Reservation, StoreError> {
        {
            let mut inner = self.inner.lock().map_err(|_| poisoned())?;
            let now = Instant::now();
            match inner.slots.get_mut(key).map(|(slot, _)| slot) {
                // Left running by an older owner of the same run: taken over.
                Some(Slot::Running {
                    fingerprint: fp,
                    until,
                    fence: held,
                }) if *until > now && fp == fingerprint && *held < fence => {
                    *held = fence;
                    *until = now + ttl;
                    return Ok(Reservation::Reserved);
                }
                Some(Slot::Running {
                    fingerprint: fp,
                    until,
                    ..
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
                fence,
            };
            inner.bytes += size;
            if let Some((_, old)) = inner.slots.insert(key.to_owned(), (slot, size)) {
                inner.bytes -= old;
            }
            Ok(Reservation::Reserved)
        }
    }
}

impl IdempotencyStore for MemoryIdempotencyStore {
    fn reserve<'a>(
        &'a self,
        key: &'a str,
        fingerprint: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Reservation, StoreError>> {
        let result = self.reserve_with(key, fingerprint, ttl, 0);
        Box::pin(async move { result })
    }

    fn reserve_fenced<'a>(
        &'a self,
        key: &'a str,
        fingerprint: &'a str,
        ttl: Duration,
        fence: u64,
    ) -> BoxFuture<'a, Result<Reservation, StoreError>> {
        let result = self.reserve_with(key, fingerprint, ttl, fence);
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

    fn renew<'a>(
        &'a self,
        key: &'a str,
        fingerprint: &'a str,
        lease: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let result = self.inner.lock().map_err(|_| poisoned()).map(|mut inner| {
            if let Some((
                Slot::Running {
                    fingerprint: fp,
                    until,
                    ..
                },
                _,
            )) = inner.slots.get_mut(key)
                && fp == fingerprint
            {
                *until = Instant::now() + lease;
            }
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

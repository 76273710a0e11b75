//! Where the agent loop keeps each run's last checkpoint, by key, with the lease that makes
//! one worker at a time the run's owner and the decisions people made on its calls.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::error::StoreError;
use crate::tool::BoxFuture;

/// The largest checkpoint a store takes: a run's sealed state, as JSON. A run whose state
/// grows past it stops with an error (its state still whole in the caller's hands) rather
/// than being kept in part.
pub const MAX_CHECKPOINT_BYTES: usize = 16 << 20;

/// Keeps the last checkpoint of each run, so that a run goes on in any process after the one
/// running it stopped or died ([`Agent::with_checkpoints`](crate::agent::Agent::with_checkpoints)):
/// [`MemoryCheckpointStore`] for one process, [`RedisStore`](super::RedisStore) (feature
/// `redis`) for a fleet and for runs that survive the process.
///
/// A checkpoint is a sealed [`RunState`](crate::agent::RunState): a store never has to trust
/// what it hands back, since a state edited in the store, or saved by an agent with another
/// key, is refused when it is resumed. The keys the agent uses are derived from the run's
/// principal and run id, so one principal's run id never names another's checkpoint.
pub trait CheckpointStore: Send + Sync + 'static {
    /// Keeps `state` under `key` for `ttl`, replacing what was there.
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when the store cannot be reached or is full: the run stops before its
    /// next step, with nothing lost.
    fn save<'a>(
        &'a self,
        key: &'a str,
        state: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// The checkpoint under `key`, if one is kept.
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when the store cannot be reached.
    fn load<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>>;

    /// Forgets the checkpoint under `key` and the decisions kept for it (the run's fencing
    /// counter stays, so a token once given out is never given again).
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when the store cannot be reached.
    fn remove<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Takes the lease on run `key` for `owner` for `ttl`, unless another owner holds it:
    /// the one step that makes a worker the run's owner. Each take gets a fencing token
    /// greater than every token given out for the run before, so a worker that lost its
    /// lease (paused, partitioned, presumed dead) holds a token older than its successor's,
    /// and its writes are refused ([`save_fenced`](Self::save_fenced)).
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when the store cannot be reached.
    fn acquire<'a>(
        &'a self,
        key: &'a str,
        owner: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Acquired, StoreError>>;

    /// Holds `lease` for `ttl` more from now. `false` when it is no longer held (it expired
    /// and another owner took the run): the holder must stop writing.
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when the store cannot be reached.
    fn renew<'a>(
        &'a self,
        key: &'a str,
        lease: &'a Lease,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Gives `lease` up, so the next worker takes the run at once (nothing when it is no
    /// longer held).
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when the store cannot be reached.
    fn release<'a>(
        &'a self,
        key: &'a str,
        lease: &'a Lease,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// [`save`](Self::save), only while `fence` is the newest token given out for the run:
    /// in one atomic step, the token compared and the state kept, or nothing kept and
    /// [`Fenced::Stale`] answered. A worker that lost its lease can never write over a newer
    /// owner's state.
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when the store cannot be reached or is full.
    fn save_fenced<'a>(
        &'a self,
        key: &'a str,
        state: &'a str,
        ttl: Duration,
        fence: u64,
    ) -> BoxFuture<'a, Result<Fenced, StoreError>>;

    /// Keeps a person's decision on the call `call` of run `key`, beside the checkpoint and
    /// never written over by it: every later load of the run finds it, whoever saves the
    /// run's state in between. A second decision on the same call replaces the first.
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when the store cannot be reached or is full.
    fn keep_decision<'a>(
        &'a self,
        key: &'a str,
        call: &'a str,
        decision: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// The decisions kept for run `key`, by call.
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when the store cannot be reached.
    fn decisions<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Vec<(String, String)>, StoreError>>;
}

/// A worker's hold on a run: who holds it and the fencing token of this take.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Lease {
    /// Who holds the lease (one id per take: a worker that takes the run again gets a new one).
    pub owner: String,
    /// The fencing token: greater than every token given out for the run before.
    pub fence: u64,
}

impl Lease {
    /// A lease held by `owner` with token `fence`, as a store hands it out.
    #[must_use]
    pub fn new(owner: impl Into<String>, fence: u64) -> Self {
        Self {
            owner: owner.into(),
            fence,
        }
    }
}

/// What [`CheckpointStore::acquire`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Acquired {
    /// The run is this worker's until the lease expires (renewed while it works).
    Taken(Lease),
    /// Another worker holds the run.
    Busy {
        /// How long its lease has left, unless it is renewed or given up.
        expires_in: Duration,
    },
}

/// What [`CheckpointStore::save_fenced`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fenced {
    /// The state is the run's checkpoint.
    Kept,
    /// Nothing was kept: a newer token was given out (another worker owns the run now).
    Stale,
}

/// A fencing token newer than `last`: one more, or the wall clock in milliseconds when that
/// is greater, so a run whose counter expired with its checkpoint still never hands out a
/// token it gave out before.
fn next_fence(last: u64) -> u64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    last.saturating_add(1).max(now)
}

impl<T: CheckpointStore + ?Sized> CheckpointStore for std::sync::Arc<T> {
    fn save<'a>(
        &'a self,
        key: &'a str,
        state: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        (**self).save(key, state, ttl)
    }

    fn load<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        (**self).load(key)
    }

    fn remove<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        (**self).remove(key)
    }

    fn acquire<'a>(
        &'a self,
        key: &'a str,
        owner: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Acquired, StoreError>> {
        (**self).acquire(key, owner, ttl)
    }

    fn renew<'a>(
        &'a self,
        key: &'a str,
        lease: &'a Lease,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        (**self).renew(key, lease, ttl)
    }

    fn release<'a>(
        &'a self,
        key: &'a str,
        lease: &'a Lease,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        (**self).release(key, lease)
    }

    fn save_fenced<'a>(
        &'a self,
        key: &'a str,
        state: &'a str,
        ttl: Duration,
        fence: u64,
    ) -> BoxFuture<'a, Result<Fenced, StoreError>> {
        (**self).save_fenced(key, state, ttl, fence)
    }

    fn keep_decision<'a>(
        &'a self,
        key: &'a str,
        call: &'a str,
        decision: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        (**self).keep_decision(key, call, decision, ttl)
    }

    fn decisions<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Vec<(String, String)>, StoreError>> {
        (**self).decisions(key)
    }
}

/// Checkpoints in this process's memory, bounded to `max_bytes` in all (256 MiB by
/// default). When a new checkpoint would not fit, expired ones are dropped; if it still does
/// not fit, the save fails: a live run's checkpoint is never dropped to make room for
/// another's. Good for one process (a run that stopped on an error or a limit goes on from
/// its last step); it does not survive the process (the Redis store does).
///
/// ```
/// use std::time::Duration;
/// use toolsmith::state::{CheckpointStore, MemoryCheckpointStore};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = MemoryCheckpointStore::with_max_bytes(10);
/// store.save("run-a", "0123456789", Duration::from_secs(60)).await.unwrap();
/// // Full of a live run's checkpoint: the next one is refused, the first is kept.
/// assert!(store.save("run-b", "xyz", Duration::from_secs(60)).await.is_err());
/// assert_eq!(store.load("run-a").await.unwrap().as_deref(), Some("0123456789"));
/// // A run's new checkpoint replaces its last one.
/// store.save("run-a", "abc", Duration::from_secs(60)).await.unwrap();
/// store.save("run-b", "xyz", Duration::from_secs(60)).await.unwrap();
/// # });
/// ```
pub struct MemoryCheckpointStore {
    max_bytes: usize,
    kept: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    by_key: HashMap<String, (String, Instant)>,
    /// Each run's decisions, by call, beside its checkpoint (counted in `bytes`).
    decisions: HashMap<String, BTreeMap<String, String>>,
    /// Each run's lease, and the newest fencing token given out for it.
    leases: HashMap<String, Held>,
    bytes: usize,
}

/// A run's lease: the newest token given out, and who holds it until when.
struct Held {
    fence: u64,
    owner: Option<(String, Instant)>,
}

impl Kept {
    fn remove(&mut self, key: &str) {
        if let Some((state, _)) = self.by_key.remove(key) {
            self.bytes -= state.len();
        }
        if let Some(decisions) = self.decisions.remove(key) {
            self.bytes -= decisions
                .iter()
                .map(|(call, text)| call.len() + text.len())
                .sum::<usize>();
        }
    }

    /// The lease of `key` while `owner` holds it with token `fence`.
    fn held(&mut self, key: &str, lease: &Lease) -> Option<&mut Held> {
        self.leases.get_mut(key).filter(|held| {
            held.fence == lease.fence
                && held
                    .owner
                    .as_ref()
                    .is_some_and(|(owner, until)| *owner == lease.owner && Instant::now() < *until)
        })
    }
}

impl MemoryCheckpointStore {
    /// The default bound: 256 MiB.
    pub const DEFAULT_MAX_BYTES: usize = 256 << 20;

    /// A store bounded to `max_bytes` of checkpoints in all.
    #[must_use]
    pub fn with_max_bytes(max_bytes: usize) -> Self {
        Self {
            max_bytes,
            kept: Mutex::new(Kept::default()),
        }
    }

    fn kept(&self) -> Result<std::sync::MutexGuard<'_, Kept>, StoreError> {
        self.kept
            .lock()
            .map_err(|_| StoreError("the checkpoint store was poisoned".into()))
    }

    /// [`put`](Self::put) while `fence` is still the newest token, checked under the lock
    /// that keeps the state.
    fn put_fenced(
        &self,
        key: &str,
        state: &str,
        ttl: Duration,
        fence: u64,
    ) -> Result<Fenced, StoreError> {
        self.put_if(key, state, ttl, Some(fence))
            .map(|kept| if kept { Fenced::Kept } else { Fenced::Stale })
    }

    fn put(&self, key: &str, state: &str, ttl: Duration) -> Result<(), StoreError> {
        self.put_if(key, state, ttl, None).map(|_| ())
    }

    /// Keeps `state` under `key`; with a `fence`, only while no newer token was given out
    /// (`false` then, nothing kept).
    fn put_if(
        &self,
        key: &str,
        state: &str,
        ttl: Duration,
        fence: Option<u64>,
    ) -> Result<bool, StoreError> {
        if state.len() > MAX_CHECKPOINT_BYTES.min(self.max_bytes) {
            return Err(StoreError(format!(
                "a checkpoint of {} bytes is larger than the store takes ({} bytes)",
                state.len(),
                MAX_CHECKPOINT_BYTES.min(self.max_bytes)
            )));
        }
        let mut kept = self.kept()?;
        if let Some(fence) = fence
            && fence < kept.leases.get(key).map_or(0, |held| held.fence)
        {
            return Ok(false);
        }
        let now = Instant::now();
        let replaced = kept.by_key.get(key).map_or(0, |(old, _)| old.len());
        if kept.bytes - replaced + state.len() > self.max_bytes {
            let expired: Vec<String> = kept
                .by_key
                .iter()
                .filter(|(_, (_, until))| *until <= now)
                .map(|(key, _)| key.clone())
                .collect();
            for key in expired {
                kept.remove(&key);
            }
        }
        let replaced = kept.by_key.get(key).map_or(0, |(old, _)| old.len());
        if kept.bytes - replaced + state.len() > self.max_bytes {
            return Err(StoreError(format!(
                "the checkpoint store is full ({} bytes of live runs); finish or remove runs, or give it more room",
                kept.bytes
            )));
        }
        if let Some((old, _)) = kept.by_key.remove(key) {
            kept.bytes -= old.len();
        }
        kept.bytes += state.len();
        kept.by_key
            .insert(key.to_owned(), (state.to_owned(), far(now, ttl)));
        Ok(true)
    }
}

impl Default for MemoryCheckpointStore {
    fn default() -> Self {
        Self::with_max_bytes(Self::DEFAULT_MAX_BYTES)
    }
}

impl std::fmt::Debug for MemoryCheckpointStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryCheckpointStore")
            .field("max_bytes", &self.max_bytes)
            .finish_non_exhaustive()
    }
}

impl MemoryCheckpointStore {
    fn take(&self, key: &str, owner: &str, ttl: Duration) -> Result<Acquired, StoreError> {
        let mut kept = self.kept()?;
        let now = Instant::now();
        if kept.leases.len() >= MAX_LEASES {
            // Forget the leases nobody holds: their counters restart from the clock.
            kept.leases
                .retain(|_, held| held.owner.as_ref().is_some_and(|(_, until)| now < *until));
        }
        let held = kept.leases.entry(key.to_owned()).or_insert(Held {
            fence: 0,
            owner: None,
        });
        if let Some((_, until)) = &held.owner
            && now < *until
        {
            return Ok(Acquired::Busy {
                expires_in: *until - now,
            });
        }
        held.fence = next_fence(held.fence);
        held.owner = Some((owner.to_owned(), far(now, ttl)));
        Ok(Acquired::Taken(Lease::new(owner, held.fence)))
    }
}

/// `now + ttl`, or far ahead when that overflows.
fn far(now: Instant, ttl: Duration) -> Instant {
    now.checked_add(ttl)
        .unwrap_or(now + Duration::from_secs(1 << 32))
}

/// The most runs whose leases a memory store remembers before it forgets the free ones.
const MAX_LEASES: usize = 1 << 16;

impl CheckpointStore for MemoryCheckpointStore {
    fn save<'a>(
        &'a self,
        key: &'a str,
        state: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let result = self.put(key, state, ttl);
        Box::pin(async move { result })
    }

    fn load<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        let result = self.kept().map(|kept| {
            kept.by_key
                .get(key)
                .filter(|(_, until)| Instant::now() < *until)
                .map(|(state, _)| state.clone())
        });
        Box::pin(async move { result })
    }

    fn remove<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        let result = self.kept().map(|mut kept| kept.remove(key));
        Box::pin(async move { result })
    }

    fn acquire<'a>(
        &'a self,
        key: &'a str,
        owner: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Acquired, StoreError>> {
        let result = self.take(key, owner, ttl);
        Box::pin(async move { result })
    }

    fn renew<'a>(
        &'a self,
        key: &'a str,
        lease: &'a Lease,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let result = self.kept().map(|mut kept| match kept.held(key, lease) {
            Some(held) => {
                held.owner = Some((lease.owner.clone(), far(Instant::now(), ttl)));
                true
            }
            None => false,
        });
        Box::pin(async move { result })
    }

    fn release<'a>(
        &'a self,
        key: &'a str,
        lease: &'a Lease,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let result = self.kept().map(|mut kept| {
            if let Some(held) = kept.held(key, lease) {
                held.owner = None;
            }
        });
        Box::pin(async move { result })
    }

    fn save_fenced<'a>(
        &'a self,
        key: &'a str,
        state: &'a str,
        ttl: Duration,
        fence: u64,
    ) -> BoxFuture<'a, Result<Fenced, StoreError>> {
        // The token is compared and the state kept under one lock: no save slips between.
        let result = self.put_fenced(key, state, ttl, fence);
        Box::pin(async move { result })
    }

    fn keep_decision<'a>(
        &'a self,
        key: &'a str,
        call: &'a str,
        decision: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        // In memory a run's decisions go with its checkpoint: removed with it, or when it
        // expires and its room is needed.
        let _ = ttl;
        let result = self.kept().and_then(|mut kept| {
            let size = call.len() + decision.len();
            if size > MAX_DECISION_BYTES {
                return Err(StoreError(format!(
                    "a decision of {size} bytes is larger than a decision can be ({MAX_DECISION_BYTES} bytes)"
                )));
            }
            if kept.bytes + size > self.max_bytes {
                return Err(StoreError(format!(
                    "the checkpoint store is full ({} bytes of live runs); finish or remove runs, or give it more room",
                    kept.bytes
                )));
            }
            let kept = &mut *kept;
            let calls = kept.decisions.entry(key.to_owned()).or_default();
            if calls.len() >= MAX_DECISIONS && !calls.contains_key(call) {
                return Err(StoreError(format!(
                    "the run already has {MAX_DECISIONS} decisions kept"
                )));
            }
            if let Some(old) = calls.insert(call.to_owned(), decision.to_owned()) {
                kept.bytes -= call.len() + old.len();
            }
            kept.bytes += size;
            Ok(())
        });
        Box::pin(async move { result })
    }

    fn decisions<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Vec<(String, String)>, StoreError>> {
        let result = self.kept().map(|kept| {
            kept.decisions
                .get(key)
                .map(|calls| calls.iter().map(|(c, d)| (c.clone(), d.clone())).collect())
                .unwrap_or_default()
        });
        Box::pin(async move { result })
    }
}

/// The largest decision a store keeps (the call's id and the signed record together).
pub const MAX_DECISION_BYTES: usize = 64 << 10;

/// The most decisions a store keeps for one run.
pub const MAX_DECISIONS: usize = 1024;

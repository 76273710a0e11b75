//! Where the agent loop keeps each run's last checkpoint, by key.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

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

    /// Forgets the checkpoint under `key`.
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when the store cannot be reached.
    fn remove<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StoreError>>;
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
    bytes: usize,
}

impl Kept {
    fn remove(&mut self, key: &str) {
        if let Some((state, _)) = self.by_key.remove(key) {
            self.bytes -= state.len();
        }
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

    fn put(&self, key: &str, state: &str, ttl: Duration) -> Result<(), StoreError> {
        if state.len() > MAX_CHECKPOINT_BYTES.min(self.max_bytes) {
            return Err(StoreError(format!(
                "a checkpoint of {} bytes is larger than the store takes ({} bytes)",
                state.len(),
                MAX_CHECKPOINT_BYTES.min(self.max_bytes)
            )));
        }
        let mut kept = self.kept()?;
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
        kept.remove(key);
        kept.bytes += state.len();
        let until = now
            .checked_add(ttl)
            .unwrap_or(now + Duration::from_secs(1 << 32));
        kept.by_key
            .insert(key.to_owned(), (state.to_owned(), until));
        Ok(())
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
}

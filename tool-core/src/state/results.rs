//! Where results too large to give a model inline are kept, by id.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::error::StoreError;
use crate::tool::BoxFuture;

/// Keeps large results for a while, by id, so that a model (or the application) can read
/// them after the call: [`MemoryResultStore`] by default, [`RedisStore`](super::RedisStore)
/// (feature `redis`) for several processes.
pub trait ResultStore: Send + Sync + 'static {
    /// Keeps `data` under `id` for `ttl`.
    fn put<'a>(
        &'a self,
        id: &'a str,
        data: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// The data kept under `id`, if it is still there.
    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>>;
}

impl<T: ResultStore + ?Sized> ResultStore for std::sync::Arc<T> {
    fn put<'a>(
        &'a self,
        id: &'a str,
        data: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        (**self).put(id, data, ttl)
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        (**self).get(id)
    }
}

/// Results in this process's memory, bounded: at most `max_bytes` in all (64 MiB by default);
/// past that the oldest are dropped first, and each is dropped after its time to live.
///
/// ```
/// use std::time::Duration;
/// use toolsmith::state::{MemoryResultStore, ResultStore};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = MemoryResultStore::with_max_bytes(10);
/// store.put("a", "0123456789", Duration::from_secs(60)).await.unwrap();
/// store.put("b", "xyz", Duration::from_secs(60)).await.unwrap();
/// assert_eq!(store.get("a").await.unwrap(), None, "dropped to make room");
/// assert_eq!(store.get("b").await.unwrap().as_deref(), Some("xyz"));
/// # });
/// ```
pub struct MemoryResultStore {
    max_bytes: usize,
    state: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    by_id: HashMap<String, (String, Instant)>,
    order: VecDeque<String>,
    bytes: usize,
}

impl Kept {
    fn remove(&mut self, id: &str) {
        if let Some((data, _)) = self.by_id.remove(id) {
            self.bytes -= data.len();
        }
    }
}

impl MemoryResultStore {
    /// The default bound: 64 MiB.
    pub const DEFAULT_MAX_BYTES: usize = 64 * 1024 * 1024;

    /// A store bounded to `max_bytes` of results in all.
    #[must_use]
    pub fn with_max_bytes(max_bytes: usize) -> Self {
        Self {
            max_bytes,
            state: Mutex::new(Kept::default()),
        }
    }
}

impl Default for MemoryResultStore {
    fn default() -> Self {
        Self::with_max_bytes(Self::DEFAULT_MAX_BYTES)
    }
}

impl ResultStore for MemoryResultStore {
    fn put<'a>(
        &'a self,
        id: &'a str,
        data: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let result = (|| {
            if data.len() > self.max_bytes {
                return Err(StoreError(format!(
                    "a result of {} bytes is larger than the store ({} bytes)",
                    data.len(),
                    self.max_bytes
                )));
            }
            let mut kept = self
                .state
                .lock()
                .map_err(|_| StoreError("poisoned".into()))?;
            let now = Instant::now();
            kept.remove(id);
            // Expired first, then the oldest, until the new one fits.
            while kept.bytes + data.len() > self.max_bytes
                || kept
                    .order
                    .front()
                    .and_then(|oldest| kept.by_id.get(oldest))
                    .is_some_and(|(_, until)| *until <= now)
            {
                let Some(oldest) = kept.order.pop_front() else {
                    break;
                };
                kept.remove(&oldest);
            }
            kept.bytes += data.len();
            kept.by_id
                .insert(id.to_owned(), (data.to_owned(), now + ttl));
            kept.order.push_back(id.to_owned());
            Ok(())
        })();
        Box::pin(async move { result })
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        let result = self
            .state
            .lock()
            .map_err(|_| StoreError("poisoned".into()))
            .map(|kept| {
                kept.by_id
                    .get(id)
                    .filter(|(_, until)| *until > Instant::now())
                    .map(|(data, _)| data.clone())
            });
        Box::pin(async move { result })
    }
}

//! Where MCP tasks are seen by every replica of a fleet: each task's last known state, and the
//! messages (a cancellation, the answers to what its tool asked) left for the replica that
//! runs it.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::error::StoreError;
use crate::tool::BoxFuture;

/// Messages waiting for one task, at most: past that, [`TaskStore::post`] is refused until
/// the replica that runs the task has taken them (it does every poll interval).
pub const MAX_TASK_MESSAGES: usize = 64;

/// The tasks of an MCP server as a fleet shares them: the replica that runs a task publishes
/// its state (a JSON record) whenever it changes, and takes the messages other replicas leave
/// for it; any replica answers `tasks/get` from the record and turns `tasks/update` and
/// `tasks/cancel` into messages. [`MemoryTaskStore`] by default (one process, or several
/// servers in it that share one [`State`](super::State)), [`RedisStore`](super::RedisStore)
/// (feature `redis`) for a fleet.
///
/// Records and messages are opaque text to the store; the server writes and reads them.
pub trait TaskStore: Send + Sync + 'static {
    /// Keeps `record`, the task `id`'s state, for `ttl` (replacing the one before).
    fn publish<'a>(
        &'a self,
        id: &'a str,
        record: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// The task `id`'s last record, while it is kept.
    fn read<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>>;

    /// Leaves `message` for the replica that runs the task `id`, kept for `ttl`. Refused (an
    /// error) when [`MAX_TASK_MESSAGES`] are already waiting.
    fn post<'a>(
        &'a self,
        id: &'a str,
        message: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Takes the messages left for the task `id`, oldest first.
    fn take<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Vec<String>, StoreError>>;
}

impl<T: TaskStore + ?Sized> TaskStore for std::sync::Arc<T> {
    fn publish<'a>(
        &'a self,
        id: &'a str,
        record: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        (**self).publish(id, record, ttl)
    }

    fn read<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        (**self).read(id)
    }

    fn post<'a>(
        &'a self,
        id: &'a str,
        message: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        (**self).post(id, message, ttl)
    }

    fn take<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Vec<String>, StoreError>> {
        (**self).take(id)
    }
}

/// The refusal of a message when [`MAX_TASK_MESSAGES`] already wait.
pub(crate) fn inbox_full() -> StoreError {
    StoreError("too many messages wait for this task; try again in a moment".into())
}

/// Tasks in this process's memory, bounded: at most `max_bytes` of records and messages in
/// all (64 MiB by default); past that the oldest tasks are dropped first, and each is dropped
/// after its time to live.
///
/// ```
/// use std::time::Duration;
/// use toolsmith::state::{MemoryTaskStore, TaskStore};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = MemoryTaskStore::default();
/// let minute = Duration::from_secs(60);
/// store.publish("t1", r#"{"status":"working"}"#, minute).await.unwrap();
/// store.post("t1", "cancel", minute).await.unwrap();
/// assert_eq!(store.take("t1").await.unwrap(), ["cancel"]);
/// assert!(store.take("t1").await.unwrap().is_empty(), "taken once");
/// assert!(store.read("t1").await.unwrap().is_some());
/// # });
/// ```
pub struct MemoryTaskStore {
    max_bytes: usize,
    state: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    tasks: HashMap<String, Entry>,
    /// Task ids in the order they were first published: the oldest are dropped first.
    order: VecDeque<String>,
    bytes: usize,
}

struct Entry {
    record: String,
    until: Instant,
    messages: VecDeque<String>,
}

impl Entry {
    fn bytes(&self) -> usize {
        self.record.len() + self.messages.iter().map(String::len).sum::<usize>()
    }
}

impl Kept {
    fn remove(&mut self, id: &str) {
        if let Some(entry) = self.tasks.remove(id) {
            self.bytes -= entry.bytes();
        }
    }

    /// Drops what has expired, then the oldest tasks until `room` more bytes fit.
    fn make_room(&mut self, room: usize, max_bytes: usize) {
        let now = Instant::now();
        let expired: Vec<String> = self
            .tasks
            .iter()
            .filter(|(_, e)| e.until <= now)
            .map(|(id, _)| id.clone())
            .collect();
        for id in &expired {
            self.remove(id);
        }
        while self.bytes + room > max_bytes {
            let Some(id) = self.order.pop_front() else {
                break;
            };
            self.remove(&id);
        }
        let tasks = &self.tasks;
        self.order.retain(|id| tasks.contains_key(id));
    }

    fn live(&mut self, id: &str) -> Option<&mut Entry> {
        let now = Instant::now();
        if self.tasks.get(id).is_some_and(|e| e.until <= now) {
            self.remove(id);
        }
        self.tasks.get_mut(id)
    }
}

impl MemoryTaskStore {
    /// A store that keeps at most `max_bytes` of records and messages.
    #[must_use]
    pub fn with_max_bytes(max_bytes: usize) -> Self {
        Self {
            max_bytes,
            state: Mutex::new(Kept::default()),
        }
    }

    fn kept(&self) -> Result<std::sync::MutexGuard<'_, Kept>, StoreError> {
        self.state
            .lock()
            .map_err(|_| StoreError("the task store is unavailable".into()))
    }
}

impl Default for MemoryTaskStore {
    fn default() -> Self {
        Self::with_max_bytes(64 << 20)
    }
}

impl TaskStore for MemoryTaskStore {
    fn publish<'a>(
        &'a self,
        id: &'a str,
        record: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let mut kept = self.kept()?;
            let until = Instant::now() + ttl;
            // A task published again keeps its waiting messages, and makes room for what it
            // grew by like a new one (it is the newest now).
            let messages = match kept.live(id) {
                Some(entry) => std::mem::take(&mut entry.messages),
                None => VecDeque::new(),
            };
            // The messages leave with the old entry and come back with the new one.
            kept.bytes -= messages.iter().map(String::len).sum::<usize>();
            kept.remove(id);
            let size = record.len() + messages.iter().map(String::len).sum::<usize>();
            if size > self.max_bytes {
                return Err(StoreError(
                    "the task's record is larger than the store".into(),
                ));
            }
            kept.make_room(size, self.max_bytes);
            kept.bytes += size;
            kept.order.push_back(id.to_owned());
            kept.tasks.insert(
                id.to_owned(),
                Entry {
                    record: record.to_owned(),
                    until,
                    messages,
                },
            );
            Ok(())
        })
    }

    fn read<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        Box::pin(async move { Ok(self.kept()?.live(id).map(|e| e.record.clone())) })
    }

    fn post<'a>(
        &'a self,
        id: &'a str,
        message: &'a str,
        _ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let mut kept = self.kept()?;
            let max_bytes = self.max_bytes;
            let total = kept.bytes;
            // A message for a task no one keeps has no one to read it.
            let Some(entry) = kept.live(id) else {
                return Ok(());
            };
            if entry.messages.len() >= MAX_TASK_MESSAGES || total + message.len() > max_bytes {
                return Err(inbox_full());
            }
            entry.messages.push_back(message.to_owned());
            kept.bytes += message.len();
            Ok(())
        })
    }

    fn take<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Vec<String>, StoreError>> {
        Box::pin(async move {
            let mut kept = self.kept()?;
            let Some(entry) = kept.live(id) else {
                return Ok(Vec::new());
            };
            let messages: Vec<String> = entry.messages.drain(..).collect();
            kept.bytes -= messages.iter().map(String::len).sum::<usize>();
            Ok(messages)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a runtime")
            .block_on(f)
    }

    #[test]
    fn the_oldest_task_makes_room_and_an_expired_one_is_gone() {
        run(async {
            let store = MemoryTaskStore::with_max_bytes(10);
            let minute = Duration::from_secs(60);
            store.publish("a", "aaaaaa", minute).await.unwrap();
            store.publish("b", "bbbbbb", minute).await.unwrap();
            assert_eq!(store.read("a").await.unwrap(), None);
            assert_eq!(store.read("b").await.unwrap().as_deref(), Some("bbbbbb"));
            store.publish("c", "c", Duration::ZERO).await.unwrap();
            assert_eq!(store.read("c").await.unwrap(), None);
            assert!(
                store
                    .publish("d", "x".repeat(11).as_str(), minute)
                    .await
                    .is_err()
            );
            // A record that grows makes room like a new one, and keeps its messages.
            let store = MemoryTaskStore::with_max_bytes(10);
            store.publish("e", "ee", minute).await.unwrap();
            store.post("e", "m", minute).await.unwrap();
            store.publish("f", "ff", minute).await.unwrap();
            store.publish("e", "eeeeeeee", minute).await.unwrap();
            assert_eq!(store.read("f").await.unwrap(), None, "made room");
            assert_eq!(
                store.kept().unwrap().bytes,
                8 + 1,
                "the record and its message"
            );
            assert_eq!(store.take("e").await.unwrap(), ["m"]);
        });
    }

    #[test]
    fn messages_are_bounded_and_a_message_for_no_task_is_dropped() {
        run(async {
            let store = MemoryTaskStore::default();
            let minute = Duration::from_secs(60);
            store.post("nobody", "cancel", minute).await.unwrap();
            assert!(store.take("nobody").await.unwrap().is_empty());
            store.publish("t", "{}", minute).await.unwrap();
            for _ in 0..MAX_TASK_MESSAGES {
                store.post("t", "m", minute).await.unwrap();
            }
            assert_eq!(store.post("t", "m", minute).await, Err(inbox_full()));
            assert_eq!(store.take("t").await.unwrap().len(), MAX_TASK_MESSAGES);
            store.post("t", "again", minute).await.unwrap();
            assert_eq!(store.kept().unwrap().bytes, 2 + 5);
        });
    }
}

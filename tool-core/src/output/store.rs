//! Where results too large to give a model inline are kept, and how they are referred to.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

use crate::tool::BoxFuture;

/// The scheme and path of a stored result's URI: `toolsmith://results/<id>`.
pub const RESULT_URI_PREFIX: &str = "toolsmith://results/";

/// The store could not keep or give back a result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResultStoreError(pub String);

impl fmt::Display for ResultStoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "result store: {}", self.0)
    }
}

impl std::error::Error for ResultStoreError {}

/// Keeps large results for a while, by id, so that a model (or the application) can read
/// them after the call: [`MemoryResultStore`] by default, [`RedisStore`](crate::idempotency::RedisStore)
/// (feature `redis`) for several processes.
pub trait ResultStore: Send + Sync + 'static {
    /// Keeps `data` under `id` for `ttl`.
    fn put<'a>(
        &'a self,
        id: &'a str,
        data: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), ResultStoreError>>;

    /// The data kept under `id`, if it is still there.
    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<String>, ResultStoreError>>;
}

impl<T: ResultStore + ?Sized> ResultStore for std::sync::Arc<T> {
    fn put<'a>(
        &'a self,
        id: &'a str,
        data: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), ResultStoreError>> {
        (**self).put(id, data, ttl)
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<String>, ResultStoreError>> {
        (**self).get(id)
    }
}

/// Results in this process's memory, bounded: at most `max_bytes` in all (64 MiB by default);
/// past that the oldest are dropped first, and each is dropped after its time to live.
///
/// ```
/// use std::time::Duration;
/// use toolsmith::output::{MemoryResultStore, ResultStore};
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
    ) -> BoxFuture<'a, Result<(), ResultStoreError>> {
        let result = (|| {
            if data.len() > self.max_bytes {
                return Err(ResultStoreError(format!(
                    "a result of {} bytes is larger than the store ({} bytes)",
                    data.len(),
                    self.max_bytes
                )));
            }
            let mut kept = self
                .state
                .lock()
                .map_err(|_| ResultStoreError("poisoned".into()))?;
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

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<String>, ResultStoreError>> {
        let result = self
            .state
            .lock()
            .map_err(|_| ResultStoreError("poisoned".into()))
            .map(|kept| {
                kept.by_id
                    .get(id)
                    .filter(|(_, until)| *until > Instant::now())
                    .map(|(data, _)| data.clone())
            });
        Box::pin(async move { result })
    }
}

#[cfg(feature = "redis")]
impl ResultStore for crate::idempotency::RedisStore {
    /// `SET toolsmith:result:<id> <data> PX <ttl>`: one command.
    fn put<'a>(
        &'a self,
        id: &'a str,
        data: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), ResultStoreError>> {
        Box::pin(async move {
            let mut cmd = redis::cmd("SET");
            cmd.arg(format!("toolsmith:result:{id}"))
                .arg(data)
                .arg("PX")
                .arg(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1));
            self.command::<()>(cmd)
                .await
                .map_err(|e| ResultStoreError(e.0))
        })
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<String>, ResultStoreError>> {
        Box::pin(async move {
            let mut cmd = redis::cmd("GET");
            cmd.arg(format!("toolsmith:result:{id}"));
            self.command::<Option<String>>(cmd)
                .await
                .map_err(|e| ResultStoreError(e.0))
        })
    }
}

/// The id a result is kept under: a [`new_id`], and, for a result of a call with a principal,
/// a tag binding it to that principal (`<id>.<tag>`), so that only that principal reads it.
pub(crate) fn owned_id(key: &[u8; 32], owner: Option<&str>) -> String {
    let id = new_id();
    match owner {
        Some(owner) => {
            let tag = owner_tag(key, &id, owner);
            format!("{id}.{tag}")
        }
        None => id,
    }
}

/// Whether `principal` may read the result kept under `id`: one kept without an owner is
/// read by whoever has its URI; one kept for an owner only by that owner.
pub(crate) fn may_read(key: &[u8; 32], id: &str, principal: Option<&str>) -> bool {
    match id.split_once('.') {
        None => true,
        Some((random, tag)) => principal.is_some_and(|principal| {
            let expected = owner_tag(key, random, principal);
            // Compared in constant time: the tag is a MAC.
            expected.len() == tag.len()
                && expected
                    .bytes()
                    .zip(tag.bytes())
                    .fold(0u8, |diff, (a, b)| diff | (a ^ b))
                    == 0
        }),
    }
}

/// HMAC-SHA256 of a result's random id and its owner, under the toolbox's key, in hex (128
/// bits).
fn owner_tag(key: &[u8; 32], id: &str, owner: &str) -> String {
    use hmac::{Hmac, Mac};
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(key) else {
        return String::new();
    };
    mac.update(b"toolsmith/result/v1\n");
    mac.update(id.as_bytes());
    mac.update(b"\n");
    mac.update(owner.as_bytes());
    mac.finalize().into_bytes()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A new, unguessable id: 128 bits of a [`random_key`], in hex. The URI of a result kept
/// without an owner is a capability: whoever has it can read the result.
pub(crate) fn new_id() -> String {
    random_key()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// 32 bytes no one can guess: the process's random hash keys (from the OS), a counter and the
/// clock, through SHA-256.
pub(crate) fn random_key() -> [u8; 32] {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = Sha256::new();
    for _ in 0..2 {
        let mut seed = std::collections::hash_map::RandomState::new().build_hasher();
        seed.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        hasher.update(seed.finish().to_le_bytes());
    }
    hasher.update(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
            .to_le_bytes(),
    );
    hasher.finalize().into()
}

/// A 32-byte key made from `secret` (SHA-256), for keys that several processes share.
/// The shortest secret a signing or sealing key is made from.
pub(crate) const MIN_SECRET: usize = 32;

/// Refuses, where a toolbox or server is built, a secret too short to be a key.
pub(crate) fn check_secret(setter: &str, secret: &[u8]) {
    assert!(
        secret.len() >= MIN_SECRET,
        "{setter}: the secret is {} bytes long; give at least {MIN_SECRET} random bytes (a short secret can be guessed, and with it every signature forged)",
        secret.len()
    );
}

pub(crate) fn key_from_secret(secret: &[u8]) -> [u8; 32] {
    Sha256::digest(secret).into()
}

/// What a stored result is, in a sentence: its shape and size.
pub(crate) fn summary(json: &str) -> String {
    let shape = match serde_json::from_str::<serde_json::Value>(json) {
        Ok(serde_json::Value::Array(items)) => {
            let keys = items
                .first()
                .and_then(serde_json::Value::as_object)
                .map(keys)
                .map(|k| format!("; the first item has the keys {k}"))
                .unwrap_or_default();
            format!("a JSON array of {} items{keys}", items.len())
        }
        Ok(serde_json::Value::Object(map)) => {
            format!("a JSON object with {} keys: {}", map.len(), keys(&map))
        }
        Ok(serde_json::Value::String(text)) => {
            format!("a text of {} characters", text.chars().count())
        }
        _ => "a JSON value".to_owned(),
    };
    format!(
        "{shape} ({} bytes of JSON); stored, not shown in full: the preview is its start",
        json.len()
    )
}

/// The first keys of an object, quoted, at most ten.
fn keys(map: &serde_json::Map<String, serde_json::Value>) -> String {
    let shown: Vec<String> = map
        .keys()
        .take(10)
        .map(|k| format!("`{}`", crate::echo::echo_to(k, 40)))
        .collect();
    let more = if map.len() > 10 { ", ..." } else { "" };
    format!("{}{more}", shown.join(", "))
}

/// The start of `json`, at most `max` bytes, cut at a character boundary, with `…` when cut.
pub(crate) fn preview(json: &str, max: usize) -> String {
    if json.len() <= max {
        return json.to_owned();
    }
    let mut end = max;
    while !json.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &json[..end])
}

//! The Redis store: `SET key value NX PX ttl` reserves atomically, so processes sharing one
//! Redis (and a restarted process) see each other's keys.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::Mutex;

use super::store::{IdempotencyStore, Reservation, StoreError};
use crate::tool::BoxFuture;

/// How long one Redis operation may take before the store reports itself unavailable.
const OP_TIMEOUT: Duration = Duration::from_secs(2);

/// An [`IdempotencyStore`] in Redis (feature `redis`). Keys are `toolsmith:idem:<key>`.
///
/// When Redis cannot be reached, every operation fails with a [`StoreError`], which the toolbox
/// turns into a retryable error: the call is not run, so it cannot run twice.
pub struct RedisStore {
    client: redis::Client,
    connection: Mutex<Option<redis::aio::MultiplexedConnection>>,
    prefix: String,
}

impl RedisStore {
    /// A store on the Redis at `url` (`redis://127.0.0.1:6379/`). Connects on first use.
    ///
    /// # Errors
    ///
    /// When the URL is not a Redis URL.
    pub fn open(url: &str) -> Result<Self, StoreError> {
        let client =
            redis::Client::open(url).map_err(|e| StoreError(format!("bad Redis URL: {e}")))?;
        Ok(Self {
            client,
            connection: Mutex::new(None),
            prefix: "toolsmith:idem:".to_owned(),
        })
    }

    async fn connection(&self) -> Result<redis::aio::MultiplexedConnection, StoreError> {
        let mut slot = self.connection.lock().await;
        if let Some(conn) = slot.as_ref() {
            return Ok(conn.clone());
        }
        let conn = tokio::time::timeout(OP_TIMEOUT, self.client.get_multiplexed_async_connection())
            .await
            .map_err(|_| StoreError("Redis did not answer in time".into()))?
            .map_err(|e| StoreError(format!("Redis is unreachable: {e}")))?;
        *slot = Some(conn.clone());
        Ok(conn)
    }

    /// Runs one command; on failure the connection is dropped so the next call reconnects.
    async fn run<T: redis::FromRedisValue>(&self, cmd: redis::Cmd) -> Result<T, StoreError> {
        let mut conn = self.connection().await?;
        let result = tokio::time::timeout(OP_TIMEOUT, cmd.query_async::<T>(&mut conn)).await;
        match result {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => {
                *self.connection.lock().await = None;
                Err(StoreError(format!("Redis failed: {e}")))
            }
            Err(_) => {
                *self.connection.lock().await = None;
                Err(StoreError("Redis did not answer in time".into()))
            }
        }
    }

    /// Runs one command with the store's deadline and reconnection (the result store uses
    /// the same connection).
    pub(crate) async fn command<T: redis::FromRedisValue>(
        &self,
        cmd: redis::Cmd,
    ) -> Result<T, StoreError> {
        self.run(cmd).await
    }

    fn key(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }
}

fn millis(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1)
}

fn parse(text: &str) -> Result<Reservation, StoreError> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| StoreError(format!("unreadable entry: {e}")))?;
    let fingerprint = value["fp"].as_str().unwrap_or_default().to_owned();
    match value["state"].as_str() {
        Some("running") => Ok(Reservation::InProgress { fingerprint }),
        Some("done") => Ok(Reservation::Done {
            fingerprint,
            envelope: value["envelope"].as_str().unwrap_or_default().to_owned(),
        }),
        _ => Err(StoreError("unreadable entry: no state".into())),
    }
}

/// GCRA in one script (atomic): the next call's theoretical arrival time per key, in
/// microseconds of the Redis server's clock (the same for every process).
/// ARGV: the interval and the burst tolerance, in microseconds. Returns 0 when the call may
/// go, else the microseconds to wait.
const GCRA: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local allowed_from = tat - tolerance
if now < allowed_from then return allowed_from - now end
local next_tat = tat + interval
redis.call('SET', KEYS[1], string.format('%.0f', next_tat), 'PX', math.ceil((next_tat - now) / 1000) + 1)
return 0
";

impl crate::state::RateLimiter for RedisStore {
    fn acquire<'a>(
        &'a self,
        key: &'a str,
        limit: &'a crate::spec::RateLimit,
    ) -> BoxFuture<'a, Result<Option<Duration>, crate::state::StateError>> {
        Box::pin(async move {
            let micros = |d: Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
            let interval = limit.interval();
            let tolerance = interval * limit.burst.max(1).saturating_sub(1);
            let mut cmd = redis::cmd("EVAL");
            cmd.arg(GCRA)
                .arg(1)
                .arg(format!("toolsmith:rate:{key}"))
                .arg(micros(interval))
                .arg(micros(tolerance));
            let wait: u64 = self
                .run(cmd)
                .await
                .map_err(|e| crate::state::StateError(e.0))?;
            Ok((wait > 0).then(|| Duration::from_micros(wait)))
        })
    }
}

impl IdempotencyStore for RedisStore {
    fn reserve<'a>(
        &'a self,
        key: &'a str,
        fingerprint: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Reservation, StoreError>> {
        Box::pin(async move {
            let entry = json!({"fp": fingerprint, "state": "running"}).to_string();
            for _ in 0..3 {
                let mut set = redis::cmd("SET");
                set.arg(self.key(key))
                    .arg(&entry)
                    .arg("NX")
                    .arg("PX")
                    .arg(millis(ttl));
                let reserved: Option<String> = self.run(set).await?;
                if reserved.is_some() {
                    return Ok(Reservation::Reserved);
                }
                let mut get = redis::cmd("GET");
                get.arg(self.key(key));
                if let Some(text) = self.run::<Option<String>>(get).await? {
                    return parse(&text);
                }
                // Expired between the two commands: try again.
            }
            Err(StoreError("the key kept changing; try again".into()))
        })
    }

    fn complete<'a>(
        &'a self,
        key: &'a str,
        fingerprint: &'a str,
        envelope: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let entry =
                json!({"fp": fingerprint, "state": "done", "envelope": envelope}).to_string();
            let mut set = redis::cmd("SET");
            set.arg(self.key(key)).arg(entry).arg("PX").arg(millis(ttl));
            self.run::<()>(set).await
        })
    }

    fn release<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let mut del = redis::cmd("DEL");
            del.arg(self.key(key));
            self.run::<()>(del).await
        })
    }

    fn lookup<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<Reservation>, StoreError>> {
        Box::pin(async move {
            let mut get = redis::cmd("GET");
            get.arg(self.key(key));
            match self.run::<Option<String>>(get).await? {
                Some(text) => parse(&text).map(Some),
                None => Ok(None),
            }
        })
    }
}

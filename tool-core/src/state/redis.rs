//! The one Redis type of the state family: every store trait, on one connection, so the
//! processes of a fleet (and a restarted process) share idempotency keys, large results, rate
//! limits, run budgets and circuits.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::Mutex;

use super::error::StoreError;
use super::idempotency::{IdempotencyStore, Reservation};
use crate::tool::BoxFuture;

/// How long one Redis operation may take before the store reports itself unavailable.
const OP_TIMEOUT: Duration = Duration::from_secs(2);

/// Every store of the state family in Redis (feature `redis`): idempotency keys
/// (`toolsmith:idem:<key>`, reserved with `SET NX PX`), large results, rate limits, run
/// budgets and circuits; give it to a toolbox with
/// [`State::shared`](crate::state::State::shared), and to
/// [`SharedApprovals`](crate::policy::SharedApprovals) for approvals.
///
/// When Redis cannot be reached, every operation fails with a [`StoreError`]: a call the
/// store guards is not run (a retryable error), so it cannot run twice or past its limits.
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

/// Extends a running reservation's lease. KEYS: the key; ARGV: its call's fingerprint, the
/// lease in ms.
const RENEW: &str = r"
local cur = redis.call('GET', KEYS[1])
if not cur then return 0 end
local ok, e = pcall(cjson.decode, cur)
if ok and e.state == 'running' and e.fp == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
";

/// Reserves a key for a call of an agent run's worker with a fencing token, taking over a
/// running reservation of the same call made under an older token. KEYS: the key; ARGV: the
/// running entry, the fingerprint, the token, the lease in ms. `''` when reserved, else what
/// the key holds.
const RESERVE_FENCED: &str = r"
local cur = redis.call('GET', KEYS[1])
if cur then
  local ok, e = pcall(cjson.decode, cur)
  if not (ok and e.state == 'running' and e.fp == ARGV[2] and tonumber(e.fence or 0) < tonumber(ARGV[3])) then
    return cur
  end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[4])
return ''
";

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

impl super::limits::RateLimiter for RedisStore {
    fn acquire<'a>(
        &'a self,
        key: &'a str,
        limit: &'a crate::spec::RateLimit,
    ) -> BoxFuture<'a, Result<Option<Duration>, StoreError>> {
        Box::pin(async move {
            let interval = limit.interval();
            let tolerance = interval * limit.burst.max(1).saturating_sub(1);
            let mut cmd = script(GCRA, &[format!("toolsmith:rate:{key}")]);
            cmd.arg(micros(interval)).arg(micros(tolerance));
            let wait: u64 = self.run(cmd).await.map_err(state_error)?;
            Ok((wait > 0).then(|| Duration::from_micros(wait)))
        })
    }
}

/// How long a run's counts are kept after its last change.
const RUN_TTL_MS: u64 = 3_600_000;

/// One call of a run: its call count raised, and its usage returned (`[calls, tool_us]`).
const COUNT_CALL: &str = r"
local calls = redis.call('HINCRBY', KEYS[1], 'calls', 1)
local us = tonumber(redis.call('HGET', KEYS[1], 'tool_us') or '0')
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return {calls, us}
";

/// A circuit's admission: `0` to go, else the microseconds to wait. KEYS: the circuit, its
/// probe lease; ARGV: the cooldown in ms.
const CIRCUIT_ADMIT: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local state = redis.call('HMGET', KEYS[1], 'open_until', 'failures')
local open_until = tonumber(state[1] or '0')
if open_until == 0 then
  if tonumber(state[2] or '0') == 0 then return -1 end
  return 0
end
if now < open_until then return open_until - now end
if redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[1]) then return 0 end
return 1000000
";

/// A circuit's record. KEYS: the circuit, its probe lease; ARGV: failed (1/0), failures to
/// open, cooldown in µs, how long to keep the state in ms.
const CIRCUIT_RECORD: &str = r"
if ARGV[1] == '0' then
  redis.call('DEL', KEYS[1], KEYS[2])
  return 0
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local open_until = tonumber(redis.call('HGET', KEYS[1], 'open_until') or '0')
local failures = redis.call('HINCRBY', KEYS[1], 'failures', 1)
if open_until > 0 or failures >= tonumber(ARGV[2]) then
  redis.call('HSET', KEYS[1], 'open_until', string.format('%.0f', now + tonumber(ARGV[3])), 'failures', 0)
  redis.call('DEL', KEYS[2])
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 0
";

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

fn state_error(err: StoreError) -> StoreError {
    StoreError(err.0)
}

fn script(source: &str, keys: &[String]) -> redis::Cmd {
    let mut cmd = redis::cmd("EVAL");
    cmd.arg(source).arg(keys.len());
    for key in keys {
        cmd.arg(key);
    }
    cmd
}

impl super::runs::BudgetStore for RedisStore {
    fn count_call<'a>(
        &'a self,
        run: &'a str,
    ) -> BoxFuture<'a, Result<super::runs::RunUsage, StoreError>> {
        Box::pin(async move {
            let mut cmd = script(COUNT_CALL, &[format!("toolsmith:run:{run}")]);
            cmd.arg(RUN_TTL_MS);
            let (calls, us): (u64, u64) = self.run(cmd).await.map_err(state_error)?;
            Ok(super::runs::RunUsage {
                calls: u32::try_from(calls).unwrap_or(u32::MAX),
                tool_time: Duration::from_micros(us),
            })
        })
    }

    fn count_retry<'a>(
        &'a self,
        run: &'a str,
        tool: &'a str,
    ) -> BoxFuture<'a, Result<u32, StoreError>> {
        Box::pin(async move {
            let mut cmd = redis::cmd("HINCRBY");
            cmd.arg(format!("toolsmith:run:{run}"))
                .arg(format!("retries:{tool}"))
                .arg(1);
            let retries: u64 = self.run(cmd).await.map_err(state_error)?;
            Ok(u32::try_from(retries).unwrap_or(u32::MAX))
        })
    }

    fn add_time<'a>(
        &'a self,
        run: &'a str,
        took: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let mut cmd = redis::cmd("HINCRBY");
            cmd.arg(format!("toolsmith:run:{run}"))
                .arg("tool_us")
                .arg(micros(took));
            self.run::<i64>(cmd).await.map_err(state_error)?;
            Ok(())
        })
    }
}

impl super::circuits::CircuitStore for RedisStore {
    fn admit<'a>(
        &'a self,
        tool: &'a str,
        cooldown: Duration,
    ) -> BoxFuture<'a, Result<super::circuits::Admission, StoreError>> {
        use super::circuits::Admission;
        Box::pin(async move {
            let keys = [
                format!("toolsmith:circuit:{tool}"),
                format!("toolsmith:circuit:{tool}:probe"),
            ];
            let mut cmd = script(CIRCUIT_ADMIT, &keys);
            cmd.arg(millis(cooldown).max(1));
            let answer: i64 = self.run(cmd).await.map_err(state_error)?;
            Ok(match u64::try_from(answer) {
                Err(_) => Admission::Clear,
                Ok(0) => Admission::Go,
                Ok(wait) => Admission::Wait(Duration::from_micros(wait)),
            })
        })
    }

    fn record<'a>(
        &'a self,
        tool: &'a str,
        failed: bool,
        failures: u32,
        cooldown: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let keys = [
                format!("toolsmith:circuit:{tool}"),
                format!("toolsmith:circuit:{tool}:probe"),
            ];
            let mut cmd = script(CIRCUIT_RECORD, &keys);
            cmd.arg(u8::from(failed))
                .arg(failures.max(1))
                .arg(micros(cooldown))
                .arg(millis(cooldown).saturating_mul(10).max(60_000));
            self.run::<i64>(cmd).await.map_err(state_error)?;
            Ok(())
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

    /// One script: the key's lease is extended only while it still holds this call's
    /// running entry.
    fn renew<'a>(
        &'a self,
        key: &'a str,
        fingerprint: &'a str,
        lease: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let mut eval = redis::cmd("EVAL");
            eval.arg(RENEW)
                .arg(1)
                .arg(self.key(key))
                .arg(fingerprint)
                .arg(millis(lease));
            self.run::<()>(eval).await
        })
    }

    /// One script: free, or left running under an older token by the same call, the key is
    /// reserved with this token.
    fn reserve_fenced<'a>(
        &'a self,
        key: &'a str,
        fingerprint: &'a str,
        ttl: Duration,
        fence: u64,
    ) -> BoxFuture<'a, Result<Reservation, StoreError>> {
        Box::pin(async move {
            let entry = json!({"fp": fingerprint, "state": "running", "fence": fence}).to_string();
            let mut eval = redis::cmd("EVAL");
            eval.arg(RESERVE_FENCED)
                .arg(1)
                .arg(self.key(key))
                .arg(entry)
                .arg(fingerprint)
                .arg(fence)
                .arg(millis(ttl));
            let held: String = self.run(eval).await?;
            if held.is_empty() {
                Ok(Reservation::Reserved)
            } else {
                parse(&held)
            }
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

impl super::results::ResultStore for RedisStore {
    /// `SET toolsmith:result:<id> <data> PX <ttl>`: one command.
    fn put<'a>(
        &'a self,
        id: &'a str,
        data: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let mut cmd = redis::cmd("SET");
            cmd.arg(format!("toolsmith:result:{id}"))
                .arg(data)
                .arg("PX")
                .arg(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1));
            self.command::<()>(cmd).await.map_err(|e| StoreError(e.0))
        })
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        Box::pin(async move {
            let mut cmd = redis::cmd("GET");
            cmd.arg(format!("toolsmith:result:{id}"));
            self.command::<Option<String>>(cmd)
                .await
                .map_err(|e| StoreError(e.0))
        })
    }
}

/// A message for a task: `-1` when no replica keeps the task (dropped), `0` when the inbox is
/// full, `1` when left. KEYS: the task's record, its inbox; ARGV: the message, the most
/// messages, the inbox's time to live in ms.
const TASK_POST: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('LLEN', KEYS[2]) >= tonumber(ARGV[2]) then return 0 end
redis.call('RPUSH', KEYS[2], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 1
";

/// Takes a task's messages at once. KEYS: its inbox.
const TASK_TAKE: &str = r"
local messages = redis.call('LRANGE', KEYS[1], 0, -1)
redis.call('DEL', KEYS[1])
return messages
";

impl super::tasks::TaskStore for RedisStore {
    /// `SET toolsmith:task:<id> <record> PX <ttl>`: one command.
    fn publish<'a>(
        &'a self,
        id: &'a str,
        record: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let mut cmd = redis::cmd("SET");
            cmd.arg(format!("toolsmith:task:{id}"))
                .arg(record)
                .arg("PX")
                .arg(millis(ttl));
            self.run::<()>(cmd).await
        })
    }

    fn read<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        Box::pin(async move {
            let mut cmd = redis::cmd("GET");
            cmd.arg(format!("toolsmith:task:{id}"));
            self.run::<Option<String>>(cmd).await
        })
    }

    fn post<'a>(
        &'a self,
        id: &'a str,
        message: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let keys = [
                format!("toolsmith:task:{id}"),
                format!("toolsmith:task:{id}:inbox"),
            ];
            let mut cmd = script(TASK_POST, &keys);
            cmd.arg(message)
                .arg(super::tasks::MAX_TASK_MESSAGES)
                .arg(millis(ttl));
            match self.run::<i64>(cmd).await? {
                0 => Err(super::tasks::inbox_full()),
                _ => Ok(()),
            }
        })
    }

    fn take<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Vec<String>, StoreError>> {
        Box::pin(async move {
            let cmd = script(TASK_TAKE, &[format!("toolsmith:task:{id}:inbox")]);
            self.run::<Vec<String>>(cmd).await
        })
    }
}

/// A run's lease, taken unless held. KEYS: the lease, the run's fencing counter; ARGV: the
/// owner, the lease in ms. Returns `{1, token}` when taken, `{0, ms left}` when held. The
/// token is one more than the last, or the server's clock in ms when that is greater, so a
/// counter that expired never hands a token out again.
const LEASE_ACQUIRE: &str = r"
local held = redis.call('PTTL', KEYS[1])
if held > 0 then return {0, held} end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local fence = tonumber(redis.call('GET', KEYS[2]) or '0') + 1
if now > fence then fence = now end
local token = string.format('%.0f', fence)
redis.call('SET', KEYS[2], token, 'PX', 2592000000)
redis.call('SET', KEYS[1], token .. ' ' .. ARGV[1], 'PX', ARGV[2])
return {1, fence}
";

/// A lease held on. KEYS: the lease; ARGV: `<token> <owner>`, the lease in ms. `1` when
/// still held (and extended), `0` when lost.
const LEASE_RENEW: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
";

/// A lease given up. KEYS: the lease; ARGV: `<token> <owner>`.
const LEASE_RELEASE: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 0
";

/// A checkpoint kept while its token is the newest. KEYS: the checkpoint, the run's fencing
/// counter; ARGV: the state, its time to live in ms, the token. `1` kept, `0` stale.
const SAVE_FENCED: &str = r"
local newest = tonumber(redis.call('GET', KEYS[2]) or '0')
if tonumber(ARGV[3]) < newest then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
";

/// A decision kept beside its run's checkpoint. KEYS: the run's decisions; ARGV: the call,
/// the decision, its time to live in ms, the most decisions. `0` when the run has too many.
const KEEP_DECISION: &str = r"
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 and redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[4]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
";

impl RedisStore {
    fn lease_keys(key: &str) -> [String; 2] {
        [
            format!("toolsmith:lease:{key}"),
            format!("toolsmith:fence:{key}"),
        ]
    }
}

impl super::checkpoints::CheckpointStore for RedisStore {
    /// `SET toolsmith:checkpoint:<key> <state> PX <ttl>`: one command, so a checkpoint is replaced
    /// whole or not at all.
    fn save<'a>(
        &'a self,
        key: &'a str,
        state: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            checkpoint_fits(state)?;
            let mut cmd = redis::cmd("SET");
            cmd.arg(format!("toolsmith:checkpoint:{key}"))
                .arg(state)
                .arg("PX")
                .arg(millis(ttl));
            self.run::<()>(cmd).await
        })
    }

    fn load<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        Box::pin(async move {
            let mut cmd = redis::cmd("GET");
            cmd.arg(format!("toolsmith:checkpoint:{key}"));
            self.run::<Option<String>>(cmd).await
        })
    }

    fn remove<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let mut cmd = redis::cmd("DEL");
            cmd.arg(format!("toolsmith:checkpoint:{key}"))
                .arg(format!("toolsmith:decisions:{key}"));
            self.run::<()>(cmd).await
        })
    }

    fn acquire<'a>(
        &'a self,
        key: &'a str,
        owner: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<super::checkpoints::Acquired, StoreError>> {
        use super::checkpoints::{Acquired, Lease};
        Box::pin(async move {
            let mut cmd = script(LEASE_ACQUIRE, &Self::lease_keys(key));
            cmd.arg(owner).arg(millis(ttl));
            let (taken, value): (i64, i64) = self.run(cmd).await?;
            let value = u64::try_from(value).unwrap_or(0);
            Ok(if taken == 1 {
                Acquired::Taken(Lease::new(owner, value))
            } else {
                Acquired::Busy {
                    expires_in: Duration::from_millis(value),
                }
            })
        })
    }

    fn renew<'a>(
        &'a self,
        key: &'a str,
        lease: &'a super::checkpoints::Lease,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let [lease_key, _] = Self::lease_keys(key);
            let mut cmd = script(LEASE_RENEW, &[lease_key]);
            cmd.arg(format!("{} {}", lease.fence, lease.owner))
                .arg(millis(ttl));
            Ok(self.run::<i64>(cmd).await? == 1)
        })
    }

    fn release<'a>(
        &'a self,
        key: &'a str,
        lease: &'a super::checkpoints::Lease,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let [lease_key, _] = Self::lease_keys(key);
            let mut cmd = script(LEASE_RELEASE, &[lease_key]);
            cmd.arg(format!("{} {}", lease.fence, lease.owner));
            self.run::<i64>(cmd).await.map(|_| ())
        })
    }

    fn save_fenced<'a>(
        &'a self,
        key: &'a str,
        state: &'a str,
        ttl: Duration,
        fence: u64,
    ) -> BoxFuture<'a, Result<super::checkpoints::Fenced, StoreError>> {
        use super::checkpoints::Fenced;
        Box::pin(async move {
            checkpoint_fits(state)?;
            let [_, fence_key] = Self::lease_keys(key);
            let mut cmd = script(
                SAVE_FENCED,
                &[format!("toolsmith:checkpoint:{key}"), fence_key],
            );
            cmd.arg(state).arg(millis(ttl)).arg(fence);
            Ok(if self.run::<i64>(cmd).await? == 1 {
                Fenced::Kept
            } else {
                Fenced::Stale
            })
        })
    }

    fn keep_decision<'a>(
        &'a self,
        key: &'a str,
        call: &'a str,
        decision: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        use super::checkpoints::{MAX_DECISION_BYTES, MAX_DECISIONS};
        Box::pin(async move {
            let size = call.len() + decision.len();
            if size > MAX_DECISION_BYTES {
                return Err(StoreError(format!(
                    "a decision of {size} bytes is larger than a decision can be ({MAX_DECISION_BYTES} bytes)"
                )));
            }
            let mut cmd = script(KEEP_DECISION, &[format!("toolsmith:decisions:{key}")]);
            cmd.arg(call)
                .arg(decision)
                .arg(millis(ttl))
                .arg(MAX_DECISIONS);
            match self.run::<i64>(cmd).await? {
                0 => Err(StoreError(format!(
                    "the run already has {MAX_DECISIONS} decisions kept"
                ))),
                _ => Ok(()),
            }
        })
    }

    fn decisions<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Vec<(String, String)>, StoreError>> {
        Box::pin(async move {
            let mut cmd = redis::cmd("HGETALL");
            cmd.arg(format!("toolsmith:decisions:{key}"));
            let kept: Vec<(String, String)> = self.run(cmd).await?;
            Ok(kept)
        })
    }
}

/// A checkpoint no larger than a store takes.
fn checkpoint_fits(state: &str) -> Result<(), StoreError> {
    if state.len() > super::checkpoints::MAX_CHECKPOINT_BYTES {
        return Err(StoreError(format!(
            "a checkpoint of {} bytes is larger than the store takes ({} bytes)",
            state.len(),
            super::checkpoints::MAX_CHECKPOINT_BYTES
        )));
    }
    Ok(())
}

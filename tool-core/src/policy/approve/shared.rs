//! Approvals in Redis: a decision given through one process is seen by all, and a single-use
//! approval lets exactly one call through across them (one script takes it).

use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{
    ApprovalDecision, ApprovalError, ApprovalNote, ApprovalRequest, Approver, PendingApproval,
    Ticket, Verdict,
};
use crate::spec::{Annotations, Effect};
use crate::state::RedisStore;
use crate::tool::BoxFuture;

/// Takes a decision: `{"approved", note}`, `{"denied", note}`, or `{"pending"}` after
/// recording the request (once). A grant is `approved:<uses>` or `approved:any` or `denied`,
/// then a line with who decided and why (JSON) and, for a denial, the reason; the note handed
/// back is what follows the first line. The waiting requests are bounded: an index (a sorted set by expiry) and
/// their sizes (a hash) let the script drop the expired ones and then the oldest, while more
/// than ARGV[4] requests or ARGV[5] bytes are kept. KEYS: the grant, the pending request, the
/// index, the sizes; ARGV: the request's record, how long it waits in ms, now in ms, the
/// bounds.
const DECIDE: &str = r"
local g = redis.call('GET', KEYS[1])
if g then
  local nl = string.find(g, '\n', 1, true)
  local head = g
  local rest = ''
  if nl then
    head = string.sub(g, 1, nl - 1)
    rest = string.sub(g, nl + 1)
  end
  if string.sub(head, 1, 6) == 'denied' then
    if not nl then rest = '\n' .. string.sub(g, 8) end
    return {'denied', rest}
  end
  if head ~= 'approved:any' then
    local left = tonumber(string.sub(head, 10))
    if left <= 1 then
      redis.call('DEL', KEYS[1])
    elseif nl then
      redis.call('SET', KEYS[1], 'approved:' .. (left - 1) .. '\n' .. rest, 'KEEPTTL')
    else
      redis.call('SET', KEYS[1], 'approved:' .. (left - 1), 'KEEPTTL')
    end
  end
  return {'approved', rest}
end
if redis.call('EXISTS', KEYS[2]) == 1 then return {'pending', ''} end
local now = tonumber(ARGV[3])
for _, k in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)) do
  redis.call('HDEL', KEYS[4], k)
end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
local size = string.len(ARGV[1])
local total = 0
for _, v in ipairs(redis.call('HVALS', KEYS[4])) do total = total + tonumber(v) end
while redis.call('ZCARD', KEYS[3]) > 0 and (redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[4]) or total + size > tonumber(ARGV[5])) do
  local oldest = redis.call('ZPOPMIN', KEYS[3])
  local k = oldest[1]
  total = total - tonumber(redis.call('HGET', KEYS[4], k) or '0')
  redis.call('HDEL', KEYS[4], k)
  redis.call('DEL', k)
end
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
redis.call('ZADD', KEYS[3], now + tonumber(ARGV[2]), KEYS[2])
redis.call('HSET', KEYS[4], KEYS[2], size)
return {'pending', ''}
";

/// Records a decision and takes its request off the waiting list, in one step. KEYS: the
/// grant, the pending request, the index, the sizes; ARGV: the decision, how long it holds in
/// ms.
const RECORD: &str = r"
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('DEL', KEYS[2])
redis.call('ZREM', KEYS[3], KEYS[2])
redis.call('HDEL', KEYS[4], KEYS[2])
return 0
";

/// A waiting request no longer listed: decided elsewhere. KEYS: the request, the index, the
/// sizes.
const SETTLED: &str = r"
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], KEYS[1])
redis.call('HDEL', KEYS[3], KEYS[1])
return 0
";

/// The sorted set of waiting requests by expiry, and the hash of their sizes.
const INDEX: &str = "toolsmith:approval:pending-index";
const SIZES: &str = "toolsmith:approval:pending-sizes";

/// Waiting requests kept in Redis, at most, and their bytes: past either, the oldest are
/// dropped (their calls stay refused until made again, which records them again).
pub(crate) const MAX_SHARED_PENDING: usize = 4_096;
pub(crate) const MAX_SHARED_PENDING_BYTES: usize = 64 << 20;

/// An [`Approver`] whose decisions and waiting requests live in Redis (feature `redis`): a
/// person approves through any process, and the call runs on whichever process it reaches
/// next. A single-use approval (the default) lets exactly one identical call through across
/// the fleet. Approvals expire after 15 minutes ([`with_ttl`](Self::with_ttl)); waiting
/// requests are kept as long. When Redis cannot be reached, calls are refused with a
/// retryable error.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use toolsmith::state::RedisStore;
/// use toolsmith::policy::SharedApprovals;
///
/// let approvals = SharedApprovals::new(Arc::new(RedisStore::open("redis://127.0.0.1:6379/")?));
/// let toolbox = toolsmith::Toolbox::new().with_approver(approvals.clone());
/// // Elsewhere, a person's review screen:
/// for pending in approvals.pending().await? {
///     approvals.approve(&pending).await?;
/// }
/// # let _ = toolbox;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct SharedApprovals {
    store: Arc<RedisStore>,
    ttl: Duration,
    ttl_for: Arc<std::collections::HashMap<String, Duration>>,
    reusable: bool,
}

impl std::fmt::Debug for SharedApprovals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedApprovals")
            .field("ttl", &self.ttl)
            .field("reusable", &self.reusable)
            .finish_non_exhaustive()
    }
}

/// A waiting request as Redis keeps it.
#[derive(Serialize, Deserialize)]
struct Record {
    tool: String,
    title: Option<String>,
    description: String,
    arguments: Value,
    arguments_hash: String,
    effect: Option<String>,
    annotations: Map<String, Value>,
    data_classification: Option<String>,
    principal: Option<String>,
    run_id: Option<String>,
    call_id: Option<String>,
    requested_at_ms: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    repairs: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires_at_ms: Option<u64>,
}

fn unix_ms(time: std::time::SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl Record {
    fn of(pending: &PendingApproval) -> Self {
        Self {
            tool: pending.tool.clone(),
            title: pending.title.clone(),
            description: pending.description.clone(),
            arguments: pending.arguments.clone(),
            arguments_hash: pending.arguments_hash.clone(),
            effect: pending.effect.map(|e| e.as_str().to_owned()),
            annotations: pending.annotations.to_mcp(),
            data_classification: pending.data_classification.clone(),
            principal: pending.principal.clone(),
            run_id: pending.run_id.clone(),
            call_id: pending.call_id.clone(),
            requested_at_ms: unix_ms(pending.requested_at),
            repairs: pending.repairs.clone(),
            expires_at_ms: pending.expires_at.map(unix_ms),
        }
    }

    fn into_pending(self) -> PendingApproval {
        let hint = |name: &str| self.annotations.get(name).and_then(Value::as_bool);
        let annotations = Annotations {
            read_only: hint("readOnlyHint"),
            destructive: hint("destructiveHint"),
            idempotent: hint("idempotentHint"),
            open_world: hint("openWorldHint"),
        };
        let effect = match self.effect.as_deref() {
            Some("read") => Some(Effect::Read),
            Some("write") => Some(Effect::Write),
            Some("destructive") => Some(Effect::Destructive),
            _ => None,
        };
        PendingApproval {
            ticket: Ticket {
                principal: self.principal.clone(),
                run: self.run_id.clone(),
                tool: self.tool.clone(),
                hash: self.arguments_hash.clone(),
            },
            tool: self.tool,
            title: self.title,
            description: self.description,
            arguments: self.arguments,
            arguments_hash: self.arguments_hash,
            effect,
            annotations,
            data_classification: self.data_classification,
            principal: self.principal,
            run_id: self.run_id,
            call_id: self.call_id,
            requested_at: UNIX_EPOCH + Duration::from_millis(self.requested_at_ms),
            repairs: self.repairs,
            status: super::ApprovalStatus::Pending,
            approver: None,
            reason: None,
            decided_at: None,
            token: String::new(),
            expires_at: self
                .expires_at_ms
                .map(|ms| UNIX_EPOCH + Duration::from_millis(ms)),
        }
    }
}

/// The name a decision goes by in Redis: a hash of who, in which run, what and which
/// arguments.
fn key(kind: &str, ticket: &Ticket) -> String {
    use sha2::Digest;
    let who =
        serde_json::json!([ticket.principal, ticket.run, ticket.tool, ticket.hash]).to_string();
    let digest = sha2::Sha256::digest(who.as_bytes());
    let mut hex = String::with_capacity(64);
    crate::json::canonical::push_hex(&mut hex, &digest);
    format!("toolsmith:approval:{kind}:{hex}")
}

/// A grant as it is kept: its head (`approved:<uses>`, `approved:any` or `denied`), then, when
/// known, a line with who decided and why (JSON) and, for a denial, the reason.
fn grant_text(head: &str, note: Option<&ApprovalNote>, denied: Option<&str>) -> String {
    let note = note
        .and_then(|note| serde_json::to_string(note).ok())
        .unwrap_or_default();
    if note.is_empty() && denied.is_none() {
        head.to_owned()
    } else {
        format!("{head}\n{note}\n{}", denied.unwrap_or_default())
    }
}

/// A grant's note, as [`SharedApprovals::decide`] wrote it.
fn read_note(text: &str) -> Option<ApprovalNote> {
    let note: Value = serde_json::from_str(text).ok()?;
    let field = |name: &str| note[name].as_str().map(str::to_owned);
    let denied = (note["decision"] == "denied").then(|| field("reason").unwrap_or_default());
    let mut read = ApprovalNote::of(denied.as_ref(), field("approver").as_ref(), None);
    read.reason = field("reason");
    Some(read)
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

impl SharedApprovals {
    /// Approvals in `store`: single-use, for 15 minutes.
    #[must_use]
    pub fn new(store: Arc<RedisStore>) -> Self {
        Self {
            store,
            ttl: Duration::from_secs(15 * 60),
            ttl_for: Arc::default(),
            reusable: false,
        }
    }

    /// Approvals of `tool` (its registered name) expire after `ttl`, and its requests wait
    /// as long ([`Approvals::with_ttl_for`](super::Approvals::with_ttl_for)).
    #[must_use]
    pub fn with_ttl_for(mut self, tool: impl Into<String>, ttl: Duration) -> Self {
        Arc::make_mut(&mut self.ttl_for).insert(tool.into(), ttl);
        self
    }

    fn ttl_of(&self, tool: &str) -> Duration {
        self.ttl_for.get(tool).copied().unwrap_or(self.ttl)
    }

    /// Approvals given from now on expire after `ttl` (and requests wait as long).
    #[must_use]
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// Approvals given from now on let any number of identical calls through until they
    /// expire.
    #[must_use]
    pub fn reusable(mut self) -> Self {
        self.reusable = true;
        self
    }

    /// The requests waiting for a decision, oldest first.
    ///
    /// # Errors
    ///
    /// A [`StoreError`](crate::state::StoreError) when Redis cannot be reached.
    pub async fn pending(&self) -> Result<Vec<PendingApproval>, crate::state::StoreError> {
        let mut found = Vec::new();
        let mut cursor: u64 = 0;
        loop {
            let mut scan = redis::cmd("SCAN");
            scan.arg(cursor)
                .arg("MATCH")
                .arg("toolsmith:approval:pending:*")
                .arg("COUNT")
                .arg(256);
            let (next, keys): (u64, Vec<String>) = self.store.command(scan).await?;
            for key in keys {
                let mut get = redis::cmd("GET");
                get.arg(&key);
                let text: Option<String> = self.store.command(get).await?;
                if let Some(record) = text.and_then(|t| serde_json::from_str::<Record>(&t).ok()) {
                    found.push(record.into_pending());
                }
            }
            if next == 0 {
                break;
            }
            cursor = next;
        }
        found.sort_by_key(|p| p.requested_at);
        Ok(found)
    }

    /// Records `verdict` on the pending call, for the whole fleet, with who decided and why
    /// (the call's audit record carries them).
    ///
    /// # Errors
    ///
    /// A [`StoreError`](crate::state::StoreError) when Redis cannot be reached.
    pub async fn decide(
        &self,
        pending: &PendingApproval,
        verdict: &Verdict,
    ) -> Result<(), crate::state::StoreError> {
        let head = match (&verdict.denied, self.reusable) {
            (Some(_), _) => "denied",
            (None, true) => "approved:any",
            (None, false) => "approved:1",
        };
        let note = ApprovalNote::of(
            verdict.denied.as_ref(),
            verdict.approver.as_ref(),
            verdict.reason.as_ref(),
        );
        let grant = grant_text(head, Some(&note), verdict.denied.as_deref());
        self.decide_on(&pending.ticket, &grant).await
    }

    /// Approves the pending call, for the whole fleet.
    ///
    /// # Errors
    ///
    /// A [`StoreError`](crate::state::StoreError) when Redis cannot be reached.
    pub async fn approve(&self, pending: &PendingApproval) -> Result<(), crate::state::StoreError> {
        self.decide(pending, &Verdict::approve()).await
    }

    /// Declines the pending call, for the whole fleet.
    ///
    /// # Errors
    ///
    /// A [`StoreError`](crate::state::StoreError) when Redis cannot be reached.
    pub async fn deny(
        &self,
        pending: &PendingApproval,
        reason: impl Into<String>,
    ) -> Result<(), crate::state::StoreError> {
        self.decide(pending, &Verdict::deny(reason)).await
    }

    async fn decide_on(
        &self,
        ticket: &Ticket,
        grant: &str,
    ) -> Result<(), crate::state::StoreError> {
        let mut cmd = redis::cmd("EVAL");
        cmd.arg(RECORD)
            .arg(4)
            .arg(key("grant", ticket))
            .arg(key("pending", ticket))
            .arg(INDEX)
            .arg(SIZES)
            .arg(grant)
            .arg(millis(self.ttl_of(&ticket.tool)));
        self.store.command::<i64>(cmd).await?;
        Ok(())
    }
}

impl Approver for SharedApprovals {
    fn list_waiting(&self) -> BoxFuture<'_, Result<Vec<PendingApproval>, ApprovalError>> {
        Box::pin(async move {
            self.pending()
                .await
                .map_err(|err| ApprovalError::Unavailable(err.0))
        })
    }

    /// The request must still wait (listed in Redis); the decision is then recorded for the
    /// whole fleet.
    fn record_verdict<'a>(
        &'a self,
        pending: &'a PendingApproval,
        verdict: &'a Verdict,
    ) -> BoxFuture<'a, Result<(), ApprovalError>> {
        Box::pin(async move {
            let mut exists = redis::cmd("EXISTS");
            exists.arg(key("pending", &pending.ticket));
            let waits: i64 = self
                .store
                .command(exists)
                .await
                .map_err(|err| ApprovalError::Unavailable(err.0))?;
            if waits == 0 {
                return Err(ApprovalError::NotPending);
            }
            self.decide(pending, verdict)
                .await
                .map_err(|err| ApprovalError::Unavailable(err.0))
        })
    }

    /// The approval given back for the whole fleet; when Redis cannot be reached, the person
    /// is asked again later (logged).
    fn unused<'a>(
        &'a self,
        request: &'a ApprovalRequest<'a>,
        note: Option<&'a ApprovalNote>,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let head = if self.reusable {
                "approved:any"
            } else {
                "approved:1"
            };
            // Kept with who approved and why, as `decide` writes a grant.
            let grant = grant_text(head, note, None);
            if let Err(err) = self.decide_on(&Ticket::of(request), &grant).await {
                tracing::warn!(%err, tool = request.tool, "an unused approval could not be kept");
            }
        })
    }

    /// The request taken off the fleet's list; when Redis cannot be reached it stays listed
    /// until it expires (logged).
    fn settled<'a>(&'a self, request: &'a ApprovalRequest<'a>) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let mut cmd = redis::cmd("EVAL");
            cmd.arg(SETTLED)
                .arg(3)
                .arg(key("pending", &Ticket::of(request)))
                .arg(INDEX)
                .arg(SIZES);
            if let Err(err) = self.store.command::<i64>(cmd).await {
                tracing::warn!(%err, tool = request.tool, "a decided request could not be taken off the list");
            }
        })
    }

    fn decide<'a>(&'a self, request: &'a ApprovalRequest<'a>) -> BoxFuture<'a, ApprovalDecision> {
        Box::pin(async move { self.decide_noted(request).await.0 })
    }

    fn decide_noted<'a>(
        &'a self,
        request: &'a ApprovalRequest<'a>,
    ) -> BoxFuture<'a, (ApprovalDecision, Option<ApprovalNote>)> {
        Box::pin(async move {
            let ticket = Ticket::of(request);
            let wait = self.ttl_of(request.tool);
            let mut pending = PendingApproval::new(request);
            pending.expires_at = Some(std::time::SystemTime::now() + wait);
            let record = Record::of(&pending);
            let mut cmd = redis::cmd("EVAL");
            let now = std::time::SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
            cmd.arg(DECIDE)
                .arg(4)
                .arg(key("grant", &ticket))
                .arg(key("pending", &ticket))
                .arg(INDEX)
                .arg(SIZES)
                .arg(serde_json::to_string(&record).unwrap_or_default())
                .arg(millis(wait))
                .arg(now)
                .arg(MAX_SHARED_PENDING)
                .arg(MAX_SHARED_PENDING_BYTES);
            match self.store.command::<(String, String)>(cmd).await {
                Ok((decision, rest)) if decision == "approved" => {
                    let (note, _) = rest.split_once('\n').unwrap_or((&rest, ""));
                    (ApprovalDecision::Approved, read_note(note))
                }
                Ok((decision, rest)) if decision == "denied" => {
                    let (note, reason) = rest.split_once('\n').unwrap_or(("", &rest));
                    (ApprovalDecision::Denied(reason.to_owned()), read_note(note))
                }
                Ok(_) => (ApprovalDecision::Pending, None),
                Err(err) => (ApprovalDecision::Unavailable(err.0), None),
            }
        })
    }
}

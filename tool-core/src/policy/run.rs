//! One call through the policy, step by step.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use tokio::time::Instant;
use tracing::Instrument;

use super::audit::{AuditRecord, redact};
use super::{
    ApprovalDecision, ApprovalRequest, Backoff, ToolPolicy, arguments_hash, is_failure, may_retry,
};
use crate::context::ToolContext;
use crate::error::{ErrorCode, ToolError};
use crate::idempotency::Reservation;
use crate::outcome::{Degradation, ToolOutcome};
use crate::tool::{Arguments, Effect, Emit, Emitted, Tool, ToolDefinition};
use crate::toolbox::{CatchUnwind, Toolbox};

/// A call's result inside the pipeline: an outcome, or success data an inline tool has
/// already written into the caller's buffer (`Toolbox::call_into`).
pub(crate) enum Ran {
    Outcome(ToolOutcome),
    Written,
}

/// What a call carries through the pipeline besides its arguments: the caller's buffer
/// (`Toolbox::call_into`) and a first attempt already made on the fast path.
#[derive(Default)]
pub(crate) struct Carry<'b> {
    pub(crate) out: Option<&'b mut Vec<u8>>,
    pub(crate) first: Option<Ran>,
}

impl Ran {
    fn error(&self) -> Option<&ToolError> {
        match self {
            Self::Outcome(outcome) => outcome.error(),
            Self::Written => None,
        }
    }

    fn status(&self) -> &'static str {
        match self {
            Self::Outcome(ToolOutcome::Success(_)) | Self::Written => "success",
            Self::Outcome(ToolOutcome::Degraded(..)) => "degraded",
            Self::Outcome(ToolOutcome::Replayed(_)) => "replayed",
            Self::Outcome(ToolOutcome::Error(_)) => "error",
        }
    }
}

impl Toolbox {
    /// The whole policy for an inline tool in a toolbox where every other step would do
    /// nothing: no tracing subscriber for the span, no audit sink, authorizer, enablement or
    /// override, no approval or idempotency (reads), no circuit that ever failed, no
    /// sequential or concurrency-limited tool. Synchronous: no future is built or moved.
    ///
    /// `Ok` is the call's result: success, or an error that is final. `Err(first)` hands a
    /// first attempt that may be retried, trip a circuit or fall back to the full path, which
    /// goes on from it; `Err(None)` means the conditions do not hold.
    pub(crate) fn run_fast(
        &self,
        name: &str,
        arguments: &Arguments<'_>,
        ctx: &ToolContext,
        out: Option<&mut Vec<u8>>,
    ) -> Result<Ran, Option<Ran>> {
        let settings = &self.settings;
        let Some(tool) = self.get(name) else {
            return Err(None);
        };
        let def = tool.definition();
        let plain = def.is_inline()
            && settings.sinks.is_empty()
            && settings.authorizer.is_none()
            && settings.enablement.is_empty()
            && settings.overrides.is_empty()
            && !settings.has_sequential
            && def.policy().concurrency.is_none()
            && !needs_approval(def)
            && !is_write(def)
            && !self.state.circuits_used()
            && !tracing::level_enabled!(tracing::Level::INFO);
        if !plain {
            return Err(None);
        }
        if let Err(err) = self.state.start_call(ctx, &settings.budget) {
            let mut err = err;
            err.finish(name, ctx.trace_id());
            return Ok(Ran::Outcome(ToolOutcome::Error(err)));
        }
        let Some(ran) = run_inline(tool.as_ref(), arguments.reborrow(), ctx, out) else {
            return Err(None);
        };
        match ran {
            Ran::Outcome(ToolOutcome::Error(mut err)) if !may_retry(&err) && !is_failure(&err) => {
                err.finish(name, ctx.trace_id());
                Ok(Ran::Outcome(ToolOutcome::Error(err)))
            }
            Ran::Outcome(ToolOutcome::Error(_)) => Err(Some(ran)),
            done => Ok(done),
        }
    }

    /// The whole policy around one call, with its audit record and tracing span. With `out`,
    /// an inline tool's success data is appended to it (`Ran::Written`).
    pub(crate) async fn run_policy(
        &self,
        name: &str,
        arguments: Arguments<'_>,
        ctx: &ToolContext,
        carry: Carry<'_>,
    ) -> Ran {
        // The name (and, over MCP, the call id) is the client's: logged cut and escaped.
        let shown = crate::echo::echo(name);
        let call_id = ctx.call_id().map(crate::echo::echo);
        let span = tracing::info_span!(
            "tool_call",
            tool = &*shown,
            run_id = ctx.run_id(),
            call_id = call_id.as_deref(),
            trace_id = ctx.trace_id(),
            principal = ctx.principal(),
            status = tracing::field::Empty,
            error_code = tracing::field::Empty,
            attempts = tracing::field::Empty,
            duration_ms = tracing::field::Empty,
        );
        // Clocks only for someone who reads them: a subscriber of the span, or an audit sink.
        let audited = !self.settings.sinks.is_empty();
        let started = (audited || !span.is_disabled()).then(Instant::now);
        let time = audited.then(SystemTime::now);
        let (mut ran, attempts) = self
            .execute(name, arguments.clone(), ctx, carry)
            .instrument(span.clone())
            .await;
        if let Ran::Outcome(ToolOutcome::Error(err)) = &mut ran {
            let _entered = span.enter();
            err.finish(name, ctx.trace_id());
        }
        let Some(started) = started else {
            return ran;
        };
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let status = ran.status();
        let error_code = ran.error().map(|e| e.code().as_str());
        span.record("status", status);
        span.record("error_code", error_code);
        span.record("attempts", attempts);
        span.record("duration_ms", duration_ms);
        if let Some(time) = time {
            let sensitive = self
                .get(name)
                .map(|t| t.definition().sensitive_params().to_vec())
                .unwrap_or_default();
            let limits = self
                .get(name)
                .map_or(&crate::limits::InputLimits::DEFAULT, |t| {
                    crate::validate::limits_for(t.definition(), Some(ctx))
                });
            let mut arguments = arguments_value(&arguments, limits);
            redact(&mut arguments, &sensitive);
            let record = AuditRecord {
                time_unix_ms: unix_ms(time),
                run_id: ctx.run_id().map(str::to_owned),
                call_id: ctx.call_id().map(str::to_owned),
                trace_id: ctx.trace_id().to_owned(),
                principal: ctx.principal().map(str::to_owned),
                tool: name.to_owned(),
                arguments,
                status,
                error_code,
                attempts,
                duration_ms,
            };
            for sink in &self.settings.sinks {
                sink.record(&record);
            }
        }
        ran
    }

    async fn execute(
        &self,
        name: &str,
        arguments: Arguments<'_>,
        ctx: &ToolContext,
        carry: Carry<'_>,
    ) -> (Ran, u32) {
        // Enablement: a disabled tool is refused exactly as an unknown one, and the tools
        // listed to the model are those enabled for it.
        let tool = match self.get(name) {
            Some(tool)
                if self.settings.enablement.is_empty() || self.is_enabled(name, ctx).await =>
            {
                tool
            }
            _ => {
                let names: Vec<&str> = self
                    .definitions_for(ctx)
                    .await
                    .iter()
                    .map(|d| d.name())
                    .collect();
                return (
                    Ran::Outcome(ToolOutcome::Error(self.unknown(name, &names))),
                    0,
                );
            }
        };
        let def = tool.definition();
        // Authorization, before the arguments are read; says nothing about what exists.
        if let Some(authorizer) = &self.settings.authorizer
            && !authorizer.authorize(ctx, def).await
        {
            return (
                Ran::Outcome(ToolOutcome::Error(ToolError::permission_denied(format!(
                    "You are not allowed to use `{name}`. Do not retry; tell the user it needs other permissions."
                )))),
                0,
            );
        }
        // Validation and approval, for calls a person must approve.
        if needs_approval(def)
            && let Err(err) = self.approve(def, &arguments, ctx).await
        {
            return (Ran::Outcome(ToolOutcome::Error(err)), 0);
        }
        if !is_write(def) {
            return self
                .execute_reserved(name, tool, def, arguments, ctx, carry)
                .await;
        }
        // Idempotency, for writes: replay a finished call, wait for a running one, refuse a
        // key reused with other arguments. The store keeps the envelope, so a write's data
        // is never written straight into the caller's buffer.
        let key = match self.reserve(def, &arguments, ctx).await {
            Ok(Reserved::Run(key)) => key,
            Ok(Reserved::Replay(outcome)) => return (Ran::Outcome(outcome), 0),
            Err(err) => return (Ran::Outcome(ToolOutcome::Error(err)), 0),
        };
        let keyed = ctx.clone().with_idempotency_key(&key.visible);
        let (ran, attempts) = self
            .execute_reserved(name, tool, def, arguments, &keyed, Carry::default())
            .await;
        if let Ran::Outcome(outcome) = &ran {
            self.settle(&key, outcome).await;
        }
        (ran, attempts)
    }

    async fn execute_reserved(
        &self,
        name: &str,
        tool: &Arc<dyn Tool>,
        def: &ToolDefinition,
        arguments: Arguments<'_>,
        ctx: &ToolContext,
        carry: Carry<'_>,
    ) -> (Ran, u32) {
        // A first attempt made on the fast path has counted its call already.
        if carry.first.is_none()
            && let Err(err) = self.state.start_call(ctx, &self.settings.budget)
        {
            return (Ran::Outcome(ToolOutcome::Error(err)), 0);
        }
        if let Err(err) = self.state.enter_circuit(name) {
            return (Ran::Outcome(ToolOutcome::Error(err)), 0);
        }
        let policy = self.settings.policy(def);
        let (ran, attempts) = {
            // The sequential lock exists for toolboxes with a sequential tool.
            let _order = if policy.sequential {
                Some(Lock::Alone(self.state.sequential.write().await))
            } else if self.settings.has_sequential {
                Some(Lock::Shared(self.state.sequential.read().await))
            } else {
                None
            };
            // An inline tool never waits, so it holds no slot of the toolbox's limit.
            let _global = if def.is_inline() {
                None
            } else {
                Some(Arc::clone(&self.state.global).acquire_owned().await)
            };
            let limiter = policy
                .concurrency
                .and_then(|n| self.state.tool_limiter(name, n));
            let _own = match limiter {
                Some(limiter) => Some(limiter.acquire_owned().await),
                None => None,
            };
            self.attempts(tool, def, &policy, arguments.clone(), ctx, carry)
                .await
        };
        self.state.leave_circuit(
            name,
            ran.error().is_some_and(is_failure),
            &self.settings.circuit,
        );
        if let Some(err) = ran.error()
            && (may_retry(err) || is_failure(err))
            && let Some(fallback) = policy.fallback.as_deref().filter(|f| *f != name)
            && let Some(fallback_tool) = self.get(fallback)
        {
            let timeout = policy.timeout.unwrap_or(self.settings.timeout);
            if let ToolOutcome::Success(data) =
                run_once(fallback_tool.as_ref(), fallback, arguments, ctx, timeout).await
            {
                let degradation = Degradation {
                    fallback: fallback.to_owned(),
                    reason: err.code().as_str().to_owned(),
                    at_unix_ms: unix_ms(SystemTime::now()),
                };
                return (
                    Ran::Outcome(ToolOutcome::Degraded(data, degradation)),
                    attempts,
                );
            }
        }
        (ran, attempts)
    }

    /// Attempts with timeouts, retried by the policy.
    async fn attempts(
        &self,
        tool: &Arc<dyn Tool>,
        def: &ToolDefinition,
        policy: &ToolPolicy,
        arguments: Arguments<'_>,
        ctx: &ToolContext,
        carry: Carry<'_>,
    ) -> (Ran, u32) {
        let name = def.name();
        let timeout = policy.timeout.unwrap_or(self.settings.timeout);
        let retry = policy.retry.as_ref().unwrap_or(&self.settings.retry);
        let max = policy.max_attempts.unwrap_or(retry.max_attempts).max(1);
        // A write is retried only when repeating it cannot do it twice.
        // A write with an idempotency key is retried: the key goes with every attempt.
        let retry_safe = match def.effect() {
            Some(Effect::Write | Effect::Destructive) => {
                def.annotations().idempotent == Some(true) || ctx.idempotency_key().is_some()
            }
            _ => true,
        };
        let Carry { mut out, mut first } = carry;
        let mut backoff = None;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let inline = if let Some(ran) = first.take() {
                Some(ran)
            } else if def.is_inline() {
                run_inline(tool.as_ref(), arguments.reborrow(), ctx, out.as_deref_mut())
            } else {
                None
            };
            let ran = match inline {
                Some(ran) => ran,
                None => Ran::Outcome(
                    run_once(tool.as_ref(), name, arguments.clone(), ctx, timeout).await,
                ),
            };
            let Some(err) = ran.error() else {
                return (ran, attempt);
            };
            if attempt >= max || !retry_safe || !may_retry(err) {
                return (ran, attempt);
            }
            if let Err(exhausted) = self.state.take_retry(ctx, name, &self.settings.budget) {
                return (Ran::Outcome(ToolOutcome::Error(exhausted)), attempt);
            }
            let delay = backoff.get_or_insert_with(|| Backoff::new(retry)).next(err);
            if let Some(delay) = timer(delay) {
                delay.await;
            }
        }
    }

    /// Validates the arguments, then asks the approver about this exact call.
    async fn approve(
        &self,
        def: &ToolDefinition,
        arguments: &Arguments<'_>,
        ctx: &ToolContext,
    ) -> Result<(), ToolError> {
        let limits = crate::validate::limits_for(def, Some(ctx));
        let value = crate::validate::validate_full(def, arguments, limits)?;
        let hash = arguments_hash(&value);
        let request = ApprovalRequest {
            tool: def.name(),
            arguments: &value,
            arguments_hash: &hash,
            ctx,
        };
        let decision = match &self.settings.approver {
            Some(approver) => approver.decide(&request).await,
            None => ApprovalDecision::Pending,
        };
        let name = def.name();
        match decision {
            ApprovalDecision::Approved => Ok(()),
            ApprovalDecision::Pending => Err(ToolError::approval_required(format!(
                "`{name}` needs a person's approval for these exact arguments ({hash}). Ask the user to approve it, then call again with the same arguments."
            ))),
            ApprovalDecision::Expired => Err(ToolError::new(
                ErrorCode::ApprovalExpired,
                format!(
                    "The approval of this `{name}` call has expired. Ask the user to approve it again."
                ),
            )),
            ApprovalDecision::Denied(reason) => Err(ToolError::new(
                ErrorCode::ApprovalDenied,
                format!(
                    "A person declined this `{name}` call: {reason}. Do not retry it; tell the user."
                ),
            )),
        }
    }
}

enum Reserved {
    Run(crate::idempotency::CallKey),
    Replay(ToolOutcome),
}

fn is_write(def: &ToolDefinition) -> bool {
    matches!(def.effect(), Some(Effect::Write | Effect::Destructive))
}

impl Toolbox {
    /// Reserves the call's key, or explains why it must not run now.
    async fn reserve(
        &self,
        def: &ToolDefinition,
        arguments: &Arguments<'_>,
        ctx: &ToolContext,
    ) -> Result<Reserved, ToolError> {
        let limits = crate::validate::limits_for(def, Some(ctx));
        let value = crate::validate::validate_full(def, arguments, limits)?;
        let scope = crate::idempotency::KeyScope {
            principal: ctx.principal(),
            run: if self.settings.idempotency.per_run {
                ctx.run_id()
            } else {
                None
            },
        };
        let key = crate::idempotency::call_key(def.name(), &value, scope);
        let store = &self.settings.store;
        let policy = &self.settings.idempotency;
        let unavailable = |err: crate::idempotency::StoreError| {
            tracing::warn!(tool = def.name(), %err, "idempotency store unavailable");
            ToolError::upstream_error(format!(
                "`{}` was not run: its idempotency store is unavailable, and running it without one could do it twice. Retry later.",
                def.name()
            ))
        };
        let waited_from = Instant::now();
        loop {
            match store
                .reserve(&key.stored, &key.fingerprint, policy.ttl)
                .await
                .map_err(unavailable)?
            {
                Reservation::Reserved => return Ok(Reserved::Run(key)),
                Reservation::InProgress { fingerprint } | Reservation::Done { fingerprint, .. }
                    if fingerprint != key.fingerprint =>
                {
                    return Err(ToolError::idempotency_conflict(format!(
                        "The idempotency key `{}` was already used for `{}` with other arguments. Use a new key for a new action, or repeat the first call's arguments exactly.",
                        key.visible,
                        def.name()
                    ))
                    .human_review(true));
                }
                Reservation::Done { envelope, .. } => {
                    return Ok(Reserved::Replay(replay(&envelope)));
                }
                Reservation::InProgress { .. } => {
                    if waited_from.elapsed() >= policy.wait {
                        return Err(ToolError::new(
                            ErrorCode::InProgress,
                            format!("The same `{}` call is still running. Retry shortly to get its result.", def.name()),
                        )
                        .retry_after(Duration::from_secs(1)));
                    }
                    if let Some(pause) = timer(Duration::from_millis(25)) {
                        pause.await;
                    } else {
                        tokio::task::yield_now().await;
                    }
                }
            }
        }
    }

    /// Stores the outcome under the key, or frees the key for a retry after a transient failure.
    async fn settle(&self, key: &crate::idempotency::CallKey, outcome: &ToolOutcome) {
        let store = &self.settings.store;
        let transient = match outcome {
            ToolOutcome::Success(_) | ToolOutcome::Replayed(_) => false,
            ToolOutcome::Degraded(..) => true,
            ToolOutcome::Error(err) => may_retry(err) || is_failure(err),
        };
        let result = if transient {
            store.release(&key.stored).await
        } else {
            store
                .complete(
                    &key.stored,
                    &key.fingerprint,
                    &outcome.to_json(),
                    self.settings.idempotency.ttl,
                )
                .await
        };
        if let Err(err) = result {
            tracing::warn!(%err, "the idempotency store could not record a result");
        }
    }
}

/// A stored envelope, replayed: success is marked as a replay; a stored failure is returned
/// as it was.
fn replay(envelope: &str) -> ToolOutcome {
    match serde_json::from_str::<ToolOutcome>(envelope) {
        Ok(
            ToolOutcome::Success(data)
            | ToolOutcome::Degraded(data, _)
            | ToolOutcome::Replayed(data),
        ) => ToolOutcome::Replayed(data),
        Ok(err @ ToolOutcome::Error(_)) => err,
        Err(err) => ToolOutcome::Error(ToolError::internal(format_args!(
            "a stored result does not read back: {err}"
        ))),
    }
}

/// Held for its `Drop`: the sequential lock is released when the call ends.
#[allow(dead_code)]
enum Lock<'a> {
    Alone(tokio::sync::RwLockWriteGuard<'a, ()>),
    Shared(tokio::sync::RwLockReadGuard<'a, ()>),
}

/// Tools that need a person's approval: declared, or destructive by default.
fn needs_approval(def: &ToolDefinition) -> bool {
    def.requires_approval() || def.effect() == Some(Effect::Destructive)
}

/// One attempt: the tool's own cancellation signal fires when it runs out of time. A sync tool
/// on the blocking pool cannot be stopped; it sees `ctx.is_cancelled()` and its result is dropped.
async fn run_once(
    tool: &dyn Tool,
    name: &str,
    arguments: Arguments<'_>,
    ctx: &ToolContext,
    timeout: Duration,
) -> ToolOutcome {
    let token = ctx.cancellation().child_token();
    let attempt_ctx = ctx.clone().with_cancellation(token.clone());
    // A tool may do work before its future (generated tools read their arguments there).
    let call = match catch_unwind(AssertUnwindSafe(|| tool.call(arguments, &attempt_ctx))) {
        Ok(future) => CatchUnwind(future),
        Err(payload) => {
            return ToolOutcome::Error(crate::__macro_support::panic_error(payload.as_ref()));
        }
    };
    let result = match timer(timeout) {
        Some(deadline) => Race { call, deadline }.await,
        None => Ok(call.await),
    };
    match result {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(payload)) => {
            ToolOutcome::Error(crate::__macro_support::panic_error(payload.as_ref()))
        }
        Err(_) => {
            token.cancel();
            ToolOutcome::Error(ToolError::timeout(format!(
                "`{name}` did not answer within {} ms. Try again later, or with a smaller request.",
                timeout.as_millis()
            )))
        }
    }
}

/// One attempt of an inline tool, in place: no future, no timer (it could not be stopped
/// anyway), a panic caught and the buffer left as it was. `None` when the tool does not run
/// inline after all.
fn run_inline(
    tool: &dyn Tool,
    arguments: Arguments<'_>,
    ctx: &ToolContext,
    mut out: Option<&mut Vec<u8>>,
) -> Option<Ran> {
    let len = out.as_deref().map(Vec::len);
    let result = catch_unwind(AssertUnwindSafe(|| {
        let emit = match out.as_deref_mut() {
            Some(buf) => Emit::Into(buf),
            None => Emit::Raw,
        };
        tool.call_inline(arguments, ctx, emit)
    }));
    match result {
        Ok(None) => None,
        Ok(Some(Ok(Emitted::Raw(data)))) => Some(Ran::Outcome(ToolOutcome::Success(data))),
        Ok(Some(Ok(Emitted::Written))) => Some(Ran::Written),
        Ok(Some(Err(err))) => Some(Ran::Outcome(ToolOutcome::Error(err))),
        Err(payload) => {
            if let (Some(buf), Some(len)) = (out, len) {
                buf.truncate(len);
            }
            Some(Ran::Outcome(ToolOutcome::Error(
                crate::__macro_support::panic_error(payload.as_ref()),
            )))
        }
    }
}

/// A timer for `after`, or `None` on a runtime built without timers (`enable_time`): the
/// call then runs without a time limit (and says so once in the log) instead of panicking.
pub(crate) fn timer(after: Duration) -> Option<std::pin::Pin<Box<tokio::time::Sleep>>> {
    use std::sync::atomic::{AtomicBool, Ordering};
    static WARNED: AtomicBool = AtomicBool::new(false);
    let made = std::panic::catch_unwind(|| Box::pin(tokio::time::sleep(after)));
    if made.is_err() && !WARNED.swap(true, Ordering::Relaxed) {
        tracing::warn!(
            "the tokio runtime has no timers (`enable_time`): tool timeouts and retry delays are off"
        );
    }
    made.ok()
}

/// The call, unless the deadline passes first (`Err(())`).
struct Race<F> {
    call: F,
    deadline: std::pin::Pin<Box<tokio::time::Sleep>>,
}

impl<F: std::future::Future + Unpin> std::future::Future for Race<F> {
    type Output = Result<F::Output, ()>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        use std::task::Poll;
        if let Poll::Ready(out) = std::pin::Pin::new(&mut self.call).poll(cx) {
            return Poll::Ready(Ok(out));
        }
        match self.deadline.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(())),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// The arguments as a value, for the audit record: read under the call's limits (and without
/// repeated keys), so that recording a refused call costs no more than refusing it.
fn arguments_value(arguments: &Arguments<'_>, limits: &crate::limits::InputLimits) -> Value {
    fn read(text: &str, limits: &crate::limits::InputLimits, unwrap: bool) -> Option<Value> {
        if text.trim().is_empty() {
            return Some(Value::Object(serde_json::Map::new()));
        }
        match crate::reader::read(text, limits).ok()?.value {
            // OpenAI's arguments: a JSON string holding the object's text.
            Value::String(inner) if unwrap => read(&inner, limits, false),
            value => Some(value),
        }
    }
    let value = match arguments {
        Arguments::Text(text) => read(text, limits, true),
        Arguments::Value(value) => match &**value {
            Value::String(inner) => read(inner, limits, false),
            value => crate::limits::check_value(value, limits)
                .broken
                .is_none()
                .then(|| value.clone()),
        },
    };
    value.unwrap_or_else(|| {
        Value::String("(not recorded: the arguments were not JSON within the limits)".into())
    })
}

fn unix_ms(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

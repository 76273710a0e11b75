//! The attempts at the end of every plan: each with its time limit and its panic caught,
//! retried as the retry policy and the run's budget allow. An inline tool's attempt runs in
//! place, with no future and no timer.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::sync::Semaphore;

use crate::arguments::Arguments;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::outcome::ToolOutcome;
use crate::output::{Checked, OutputChecks};
use crate::spec::{Effect, RateLimit, RetryPolicy};
use crate::state::RateLimiter;
use crate::tool::{Emit, Emitted, Tool};

use super::budget::Budgets;
use super::retry::{Backoff, may_retry};
use super::step::{Call, Done, Flow, Next, Ran, Step};

/// The rate limits an attempt takes its turn from: the tool's own, its upstream's.
pub(crate) struct Throttle {
    pub(crate) limiter: Arc<dyn RateLimiter>,
    /// Each limit with its key in the limiter (`tool:<name>`, `upstream:<name>`).
    pub(crate) limits: Vec<(String, RateLimit)>,
}

impl Throttle {
    /// Takes this attempt's turn from every limit; the error when it must wait (or the
    /// limiter cannot be reached). A turn taken from a limit before another refused is
    /// spent: the limits are checked in a fixed order, tool first.
    async fn take(&self, tool: &str) -> Result<(), ToolError> {
        for (key, limit) in &self.limits {
            match self.limiter.acquire(key, limit).await {
                Ok(None) => {}
                Ok(Some(wait)) => return Err(ToolError::throttled(tool, key, wait)),
                Err(err) => return Err(ToolError::state_unreachable(&err)),
            }
        }
        Ok(())
    }
}

/// The attempts of one tool's calls.
pub(crate) struct Attempts {
    /// The rate limits each attempt takes its turn from, when the tool has any.
    pub(crate) throttle: Option<Throttle>,
    pub(crate) tool: Arc<dyn Tool>,
    pub(crate) timeout: Duration,
    pub(crate) retry: RetryPolicy,
    pub(crate) max_attempts: u32,
    /// The run budgets, when the toolbox has one: retries and time in tools count.
    pub(crate) budgets: Option<Arc<Budgets>>,
    /// The toolbox's limit on calls running at once. An inline tool never waits, so it
    /// holds no slot of it.
    pub(crate) slots: Option<Arc<Semaphore>>,
    /// The checks every result goes through before anything else sees it.
    pub(crate) output: Arc<OutputChecks>,
}

impl Step for Attempts {
    /// The last step: it does not go on. An inline tool's first attempt runs in place; when it
    /// ends the call (a success, or an error nothing acts on) the call ends at once, else the
    /// attempts go on with a future, that attempt counted as the first.
    fn run<'a>(&'a self, mut call: Call<'a>, _next: Next<'a>) -> Flow<'a> {
        if !self.in_place() {
            return Flow::later(self.attempts(call, None));
        }
        let Some(ran) = run_inline(
            self.tool.as_ref(),
            &self.output,
            call.arguments.reborrow(),
            call.ctx,
            call.out.as_deref_mut(),
        ) else {
            return Flow::later(self.attempts(call, None));
        };
        // A result to store in the result store waits for the store; a batch's failed items
        // may be retried.
        let output = &self.output;
        let large = output.is_batch()
            || matches!(&ran, Ran::Outcome(o) if o.data().is_some_and(|d| output.is_large(d.get().len())));
        if ran.is_final() && !large {
            return Flow::Now(Done::new(ran, 1));
        }
        Flow::later(self.attempts(call, Some(ran)))
    }
}

impl Attempts {
    /// Whether the first attempt runs in place: an inline tool that waits for nothing before
    /// it (no rate limit's turn) and whose time is not counted (no run budget).
    fn in_place(&self) -> bool {
        self.tool.definition().is_inline() && self.throttle.is_none() && self.budgets.is_none()
    }

    /// Attempts with time limits, retried by the policy; `first` is an attempt already made
    /// in place.
    async fn attempts(&self, mut call: Call<'_>, mut first: Option<Ran>) -> Done {
        let _slot = match &self.slots {
            Some(slots) => Arc::clone(slots).acquire_owned().await.ok(),
            None => None,
        };
        let def = self.tool.definition();
        let name = call.name;
        let ctx = call.ctx;
        // A write is retried only when repeating it cannot do it twice: it is declared
        // idempotent, or it carries an idempotency key that goes with every attempt.
        let retry_safe = match def.effect() {
            Some(Effect::Write | Effect::Destructive) => {
                def.annotations().idempotent == Some(true) || ctx.idempotency_key().is_some()
            }
            _ => true,
        };
        let max = self.max_attempts.max(1);
        let mut backoff = None;
        let mut attempt = 0;
        // A batch's items done so far, while its failed ones are retried.
        let mut batch: Option<serde_json::Value> = None;
        loop {
            attempt += 1;
            let started = self.budgets.as_ref().map(|_| tokio::time::Instant::now());
            // Over a rate limit, the attempt is not made: its error says when to try.
            let throttled = match &self.throttle {
                Some(throttle) if first.is_none() => throttle.take(name).await.err(),
                _ => None,
            };
            let inline = match (throttled, first.take()) {
                (Some(err), _) => Some(Ran::Outcome(ToolOutcome::Error(err))),
                (None, Some(ran)) => Some(ran),
                (None, None) if def.is_inline() => run_inline(
                    self.tool.as_ref(),
                    &self.output,
                    call.arguments.reborrow(),
                    ctx,
                    call.out.as_deref_mut(),
                ),
                (None, None) => None,
            };
            let ran = match inline {
                Some(ran) => ran,
                None => Ran::Outcome(
                    self.output.outcome(
                        run_once(
                            self.tool.as_ref(),
                            name,
                            call.arguments.clone(),
                            &scoped(ctx, &self.output),
                            self.timeout,
                        )
                        .await,
                    ),
                ),
            };
            if let (Some(budgets), Some(started)) = (&self.budgets, started) {
                budgets.spend(ctx, started.elapsed()).await;
            }
            let Some(err) = ran.error() else {
                let ran = match ran {
                    Ran::Outcome(outcome) => {
                        // A batch whose failed items may succeed on a retry: only those again.
                        let outcome = match self.output.tally(&outcome) {
                            Some((data, tally)) => {
                                let data = match batch.take() {
                                    Some(mut earlier) => {
                                        crate::output::merge_batch(&mut earlier, data);
                                        earlier
                                    }
                                    None => data,
                                };
                                let more = attempt < max && retry_safe && tally.retry.is_some();
                                let allowed = more
                                    && match &self.budgets {
                                        Some(b) => b.take_retry(ctx, name).await.is_ok(),
                                        None => true,
                                    };
                                if let (true, Some((arguments, err))) = (allowed, tally.retry) {
                                    call.arguments = Arguments::from(arguments);
                                    batch = Some(data);
                                    // Waits as a retry of the whole call would for this error.
                                    let delay = backoff
                                        .get_or_insert_with(|| Backoff::new(&self.retry))
                                        .next(&err);
                                    if let Some(delay) = timer(delay) {
                                        delay.await;
                                    }
                                    continue;
                                }
                                if attempt > 1 {
                                    self.output.merged(&data)
                                } else {
                                    outcome
                                }
                            }
                            None => outcome,
                        };
                        Ran::Outcome(self.output.spill(outcome).await)
                    }
                    written @ (Ran::Written | Ran::Marked(..)) => written,
                };
                return Done::new(ran, attempt);
            };
            if let Some(earlier) = batch.take() {
                // Retrying a batch's failed items failed as a whole: the batch as it was, its
                // done items kept, its failures still failures.
                let outcome = self.output.merged(&earlier);
                return Done::new(Ran::Outcome(self.output.spill(outcome).await), attempt);
            }
            // An attempt refused by a rate limit never ran: trying again is always safe.
            let never_ran = err.is_throttled();
            if attempt >= max || !(retry_safe || never_ran) || !may_retry(err) {
                return Done::new(ran, attempt);
            }
            if let Some(budgets) = &self.budgets
                && let Err(exhausted) = budgets.take_retry(ctx, name).await
            {
                return Done::new(Ran::Outcome(ToolOutcome::Error(exhausted)), attempt);
            }
            let delay = backoff
                .get_or_insert_with(|| Backoff::new(&self.retry))
                .next(err);
            if let Some(delay) = timer(delay) {
                delay.await;
            }
        }
    }
}

/// The context a tool's attempt gets: for a paging tool, bound to its cursors.
fn scoped<'c>(ctx: &'c ToolContext, output: &OutputChecks) -> std::borrow::Cow<'c, ToolContext> {
    match output.scope() {
        Some(scope) => std::borrow::Cow::Owned(ctx.scoped(scope)),
        None => std::borrow::Cow::Borrowed(ctx),
    }
}

/// One attempt: the tool's own cancellation signal fires when it runs out of time. A sync tool
/// on the blocking pool cannot be stopped; it sees `ctx.is_cancelled()` and its result is dropped.
pub(crate) async fn run_once(
    tool: &dyn Tool,
    name: &str,
    arguments: Arguments<'_>,
    ctx: &ToolContext,
    timeout: Duration,
) -> ToolOutcome {
    let (attempt_ctx, attempt) = ctx.for_attempt();
    let started = tokio::time::Instant::now();
    // A tool may do work before its future (generated tools read their arguments there).
    let mut call = match catch_unwind(AssertUnwindSafe(|| tool.call(arguments, &attempt_ctx))) {
        Ok(future) => CatchUnwind(future),
        Err(payload) => {
            return ToolOutcome::Error(ToolError::from_panic(payload.as_ref()));
        }
    };
    // Many calls finish on their first poll; only one that does not gets a timer, set to the
    // same deadline, counted from before the first poll.
    let first = std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut call).poll(cx))).await;
    let result = match first {
        Poll::Ready(out) => Ok(out),
        Poll::Pending => match timer_at(started + timeout) {
            Some(deadline) => Race { call, deadline }.await,
            None => Ok(call.await),
        },
    };
    match result {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(payload)) => ToolOutcome::Error(ToolError::from_panic(payload.as_ref())),
        Err(()) => {
            attempt.fire();
            ToolOutcome::Error(ToolError::timeout(format!(
                "`{name}` did not answer within {} ms. Try again later, or with a smaller request.",
                timeout.as_millis()
            )))
        }
    }
}

/// One attempt of an inline tool, in place: no future, no timer (it could not be stopped
/// anyway), a panic caught and the buffer left as it was, the result checked by `output`
/// (data written into the buffer is checked there). `None` when the tool does not run inline
/// after all.
pub(crate) fn run_inline(
    tool: &dyn Tool,
    output: &OutputChecks,
    arguments: Arguments<'_>,
    ctx: &ToolContext,
    mut out: Option<&mut Vec<u8>>,
) -> Option<Ran> {
    let len = out.as_deref().map(Vec::len);
    let scoped_ctx = output.scope().map(|scope| ctx.scoped(scope));
    let ctx = scoped_ctx.as_ref().unwrap_or(ctx);
    let result = catch_unwind(AssertUnwindSafe(|| {
        let emit = match out.as_deref_mut() {
            Some(buf) => Emit::Into(buf),
            None => Emit::Raw,
        };
        tool.call_inline(arguments, ctx, emit)
    }));
    match result {
        Ok(None) => None,
        Ok(Some(Ok(Emitted::Raw(data)))) => {
            Some(Ran::Outcome(output.outcome(ToolOutcome::Success(data))))
        }
        Ok(Some(Ok(Emitted::Written))) => {
            let (Some(buf), Some(len)) = (out, len) else {
                return Some(Ran::Written);
            };
            if output.is_large(buf.len() - len) || output.is_batch() {
                // To be stored, or a batch to tally: taken out of the buffer, as a value the
                // plan can keep.
                let data = String::from_utf8(buf.split_off(len)).ok();
                let outcome = match data.map(serde_json::value::RawValue::from_string) {
                    Some(Ok(raw)) => ToolOutcome::Success(raw),
                    _ => ToolOutcome::Error(ToolError::internal(
                        "the tool wrote data that is not JSON",
                    )),
                };
                return Some(Ran::Outcome(output.outcome(outcome)));
            }
            if output.is_clean_bytes(&buf[len..]) {
                return Some(Ran::Written);
            }
            let checked = match std::str::from_utf8(&buf[len..]) {
                Ok(data) => output.data(data),
                Err(_) => Checked::Changed(ToolOutcome::Error(ToolError::internal(
                    "the tool wrote data that is not UTF-8",
                ))),
            };
            match checked {
                Checked::Clean => Some(Ran::Written),
                // Marked untrusted and nothing else: the data stays where it was written.
                Checked::CleanMark => match output.clean_mark() {
                    Some((notes, fields)) => {
                        Some(Ran::Marked(Arc::clone(notes), Arc::clone(fields)))
                    }
                    None => Some(Ran::Written),
                },
                Checked::Mark(notes) => {
                    let data = String::from_utf8(buf.split_off(len)).ok();
                    Some(Ran::Outcome(
                        match data.map(serde_json::value::RawValue::from_string) {
                            Some(Ok(raw)) => ToolOutcome::Checked(raw, notes),
                            _ => ToolOutcome::Error(ToolError::internal(
                                "the tool wrote data that is not JSON",
                            )),
                        },
                    ))
                }
                Checked::Changed(outcome) => {
                    buf.truncate(len);
                    Some(Ran::Outcome(outcome))
                }
            }
        }
        Ok(Some(Err(err))) => Some(Ran::Outcome(output.outcome(ToolOutcome::Error(err)))),
        Err(payload) => {
            if let (Some(buf), Some(len)) = (out, len) {
                buf.truncate(len);
            }
            Some(Ran::Outcome(ToolOutcome::Error(ToolError::from_panic(
                payload.as_ref(),
            ))))
        }
    }
}

/// A timer for `after`, or `None` on a runtime built without timers (`enable_time`): the
/// call then runs without a time limit (and says so once in the log) instead of panicking.
pub(crate) fn timer(after: Duration) -> Option<Pin<Box<tokio::time::Sleep>>> {
    timer_at(tokio::time::Instant::now() + after)
}

/// [`timer`] until `deadline`.
fn timer_at(deadline: tokio::time::Instant) -> Option<Pin<Box<tokio::time::Sleep>>> {
    use std::sync::atomic::{AtomicBool, Ordering};
    static WARNED: AtomicBool = AtomicBool::new(false);
    let made = std::panic::catch_unwind(|| Box::pin(tokio::time::sleep_until(deadline)));
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
    deadline: Pin<Box<tokio::time::Sleep>>,
}

impl<F: Future + Unpin> Future for Race<F> {
    type Output = Result<F::Output, ()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Poll::Ready(out) = Pin::new(&mut self.call).poll(cx) {
            return Poll::Ready(Ok(out));
        }
        match self.deadline.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(())),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// A future whose panic is caught and handed back, so that a panicking tool becomes an
/// `internal_error` instead of taking the caller's task down.
///
/// `AssertUnwindSafe` is sound here: after a panic the inner future is dropped without being
/// polled again, so no state it left half-updated is observed.
struct CatchUnwind<F>(F);

impl<F: Future + Unpin> Future for CatchUnwind<F> {
    type Output = Result<F::Output, Box<dyn std::any::Any + Send>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = &mut self.0;
        match catch_unwind(AssertUnwindSafe(|| Pin::new(inner).poll(cx))) {
            Ok(Poll::Ready(out)) => Poll::Ready(Ok(out)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Err(payload)),
        }
    }
}

//! The attempts at the end of every plan: each takes its turn from the rate limits
//! (`throttle.rs`), runs with its time limit and its panic caught, and goes through the
//! output checks; the retry policy (`retry.rs`) and the run's budget decide whether another
//! follows. An inline tool's attempt runs in place, with no future and no timer.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::sync::Semaphore;

use crate::arguments::Arguments;
use crate::context::{ReadMark, ToolContext};
use crate::error::ToolError;
use crate::outcome::ToolOutcome;
use crate::output::OutputChecks;
use crate::spec::{Effect, RetryPolicy};
use crate::tool::{Emit, Emitted, Tool};

use super::budget::Budgets;
use super::checks;
use super::retry::{BatchItems, Policy, Retrying, Whole};
use super::step::{Call, Done, Flow, Guard, Next, Ran, Step};
use super::throttle::Throttle;

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
    /// Whether the tool runs in place (`#[tool(inline)]`).
    pub(crate) inline: bool,
}

impl Step for Attempts {
    /// The last step: it does not go on. An inline tool's first attempt runs in place; when it
    /// ends the call (a success, or an error nothing acts on) the call ends at once, else the
    /// attempts go on with a future, that attempt counted as the first.
    fn run<'a>(&'a self, call: Call<'a>, _next: Next<'a>) -> Flow<'a> {
        self.start(call, None)
    }
}

impl Attempts {
    /// The attempts of a call (what [`Step::run`] does): the first in place when it can be.
    /// `watch`, a guard that sees how the call ended (a plan's circuit), is told when the
    /// attempts end: inside their future when they wait, so that no future of its own is
    /// made around theirs.
    #[inline]
    pub(crate) fn start<'a>(
        &'a self,
        mut call: Call<'a>,
        watch: Option<&'a dyn Guard>,
    ) -> Flow<'a> {
        if !self.in_place() {
            return Flow::later(self.watched(call, None, watch));
        }
        let Some(ran) = run_inline(
            self.tool.as_ref(),
            &self.output,
            call.arguments.reborrow(),
            call.ctx,
            call.out.as_deref_mut(),
        ) else {
            return Flow::later(self.watched(call, None, watch));
        };
        if ran.is_final() && !checks::waits(&self.output, &ran) {
            if let Some(watch) = watch {
                watch.after(&ran);
            }
            return Flow::Now(Done::new(ran, 1));
        }
        Flow::later(self.watched(call, Some(ran), watch))
    }

    /// [`attempts`](Self::attempts), then `watch` told how they ended.
    async fn watched(&self, call: Call<'_>, first: Option<Ran>, watch: Option<&dyn Guard>) -> Done {
        let done = self.attempts(call, first).await;
        if let Some(watch) = watch {
            watch.after(&done.ran);
        }
        done
    }

    /// Whether the first attempt runs in place: an inline tool that waits for nothing before
    /// it (no rate limit's turn) and whose time is not counted (no run budget).
    #[inline]
    fn in_place(&self) -> bool {
        self.inline && self.throttle.is_none() && self.budgets.is_none()
    }

    /// Attempts with time limits, retried by the retry policy; `first` is an attempt already
    /// made in place.
    async fn attempts(&self, mut call: Call<'_>, mut first: Option<Ran>) -> Done {
        let _slot = match &self.slots {
            // A free slot is taken in place; only a full toolbox's call waits for one.
            Some(slots) => match Arc::clone(slots).try_acquire_owned() {
                Ok(slot) => Some(slot),
                Err(tokio::sync::TryAcquireError::NoPermits) => {
                    Arc::clone(slots).acquire_owned().await.ok()
                }
                Err(tokio::sync::TryAcquireError::Closed) => None,
            },
            None => None,
        };
        let def = self.tool.definition();
        // A write is retried only when repeating it cannot do it twice: it is declared
        // idempotent, or it carries an idempotency key that goes with every attempt.
        let safe = match def.effect() {
            Some(Effect::Write | Effect::Destructive) => {
                def.annotations().idempotent == Some(true) || call.ctx.idempotency_key().is_some()
            }
            _ => true,
        };
        let whole = Whole::new(&self.retry, self.max_attempts, safe);
        let mut policy = if self.output.is_batch() {
            Retrying::Batch(BatchItems::new(whole, &self.output))
        } else {
            Retrying::Whole(whole)
        };
        let mut attempts = 0;
        loop {
            attempts += 1;
            let mut ran = match first.take() {
                Some(ran) => ran,
                None => self.attempt(&mut call).await,
            };
            let Some(delay) = policy.retry(&mut call.arguments, &mut ran) else {
                return Done::new(
                    checks::spill(&self.output, ran, call.ctx.principal()).await,
                    attempts,
                );
            };
            // The rare steps' futures are boxed: each would otherwise take room in the
            // future of every call, which then no longer fits the allocator's fast sizes.
            if let Some(budgets) = &self.budgets
                && let Err(exhausted) = Box::pin(budgets.take_retry(call.ctx, call.name)).await
            {
                policy.refused(&mut ran, exhausted);
                return Done::new(
                    checks::spill(&self.output, ran, call.ctx.principal()).await,
                    attempts,
                );
            }
            if let Some(delay) = timer(delay) {
                delay.await;
            }
        }
    }

    /// One attempt: its turn from the rate limits, then the tool (in place when inline, else
    /// with its time limit), its result through the output checks, its time counted in the
    /// run's budget.
    async fn attempt(&self, call: &mut Call<'_>) -> Ran {
        let started = self.budgets.as_ref().map(|_| tokio::time::Instant::now());
        // Over a rate limit, the attempt is not made: its error says when to try.
        if let Some(throttle) = &self.throttle
            && let Err(err) = Box::pin(throttle.take(call.name)).await
        {
            return Ran::Outcome(ToolOutcome::Error(err));
        }
        let inline = if self.inline {
            run_inline(
                self.tool.as_ref(),
                &self.output,
                call.arguments.reborrow(),
                call.ctx,
                call.out.as_deref_mut(),
            )
        } else {
            None
        };
        let ran = match inline {
            Some(ran) => ran,
            // Boxed: the attempts' own future then stays well within the allocator's fast
            // sizes (768 bytes, against 1,032 with the attempt held in place).
            None => Ran::Outcome(
                self.output.outcome(
                    Box::pin(run_once(
                        self.tool.as_ref(),
                        call.name,
                        call.arguments.clone(),
                        as_read(call).then(|| ReadMark::of(self.tool.definition())),
                        &scoped(call.ctx, &self.output),
                        self.timeout,
                    ))
                    .await,
                ),
            ),
        };
        if let (Some(budgets), Some(started)) = (&self.budgets, started) {
            Box::pin(budgets.spend(call.ctx, started.elapsed())).await;
        }
        ran
    }
}

/// Whether the call's arguments are exactly as the toolbox read them (a batch retry may
/// have narrowed them since).
fn as_read(call: &Call<'_>) -> bool {
    match (call.read.get(), &call.arguments) {
        (Some(checked), Arguments::Value(std::borrow::Cow::Borrowed(value))) => {
            std::ptr::eq(*value, &checked.value)
        }
        _ => false,
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
    read: Option<ReadMark>,
    ctx: &ToolContext,
    timeout: Duration,
) -> ToolOutcome {
    let (attempt_ctx, attempt) = ctx.for_attempt(read, tool.definition().shows_partial());
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
    let outcome = match result {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(payload)) => ToolOutcome::Error(ToolError::from_panic(payload.as_ref())),
        Err(()) => {
            attempt.fire();
            ToolOutcome::Error(ToolError::timeout(format!(
                "`{name}` did not answer within {} ms. Try again later, or with a smaller request.",
                timeout.as_millis()
            )))
        }
    };
    match outcome {
        ToolOutcome::Error(err) => ToolOutcome::Error(with_last_partial(err, &attempt)),
        outcome => outcome,
    }
}

/// The largest partial result shown to the model, in bytes of JSON; a larger one is not.
const PARTIAL_SHOWN: usize = 16 * 1024;

/// `err` with the attempt's last partial result, for a tool that shows it: redacted and
/// escaped as the output checks do to data, and only when it is not too large.
fn with_last_partial(err: ToolError, attempt: &crate::context::Attempt) -> ToolError {
    let Some(mut partial) = attempt.take_partial() else {
        return err;
    };
    if partial.to_string().len() > PARTIAL_SHOWN {
        return err;
    }
    crate::output::sanitize(&mut partial);
    err.with_partial_result(partial)
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
        Ok(Some(Ok(Emitted::Outcome(outcome)))) => Some(Ran::Outcome(output.outcome(*outcome))),
        Ok(Some(Ok(Emitted::Written))) => Some(match (out, len) {
            (Some(buf), Some(len)) => checks::written(output, buf, len),
            _ => Ran::Written,
        }),
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

/// Runs `work`, calling `renew` every `every` while it runs (a lease held for it), until
/// `work` is done or `renew` answers `false` (the lease is gone: nothing more to renew). On
/// a runtime without timers nothing is renewed. `work` is polled first, so a finished `work`
/// never waits on a renewal.
pub(crate) async fn holding<T, F>(
    work: impl std::future::Future<Output = T>,
    every: Duration,
    mut renew: impl FnMut() -> F,
) -> T
where
    F: std::future::Future<Output = bool>,
{
    let beat = async {
        loop {
            match timer(every) {
                Some(pause) => pause.await,
                None => std::future::pending::<()>().await,
            }
            if !renew().await {
                std::future::pending::<()>().await;
            }
        }
    };
    let mut work = std::pin::pin!(work);
    let mut beat = std::pin::pin!(beat);
    std::future::poll_fn(|cx| {
        if let std::task::Poll::Ready(done) = work.as_mut().poll(cx) {
            return std::task::Poll::Ready(done);
        }
        let _ = beat.as_mut().poll(cx);
        std::task::Poll::Pending
    })
    .await
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

//! When a failed attempt is tried again, and after how long: exponential backoff with full
//! jitter, `retry_after_ms` honoured, never for errors that need a change or a person. Two
//! policies of one shape ([`Policy`]): the whole call again, and a batch's failed items again.

use std::time::Duration;

use backon::BackoffBuilder;
use serde_json::Value;

use crate::arguments::Arguments;
use crate::error::ToolError;
use crate::outcome::ToolOutcome;
use crate::output::OutputChecks;
use crate::spec::RetryPolicy;

use super::classify::may_retry;
use super::step::Ran;

/// The delays between attempts, with `retry_after_ms` honoured.
pub(crate) struct Backoff {
    delays: Box<dyn Iterator<Item = Duration> + Send>,
}

impl Backoff {
    pub(crate) fn new(retry: &RetryPolicy) -> Self {
        Self {
            delays: Box::new(delays(retry)),
        }
    }

    pub(crate) fn next(&mut self, err: &ToolError) -> Duration {
        let computed = self.delays.next().unwrap_or(Duration::ZERO);
        let asked = err
            .retry_after_ms()
            .map_or(Duration::ZERO, Duration::from_millis);
        computed.max(asked)
    }
}

fn delays(retry: &RetryPolicy) -> impl Iterator<Item = Duration> + Send + use<> {
    let mut builder = backon::ExponentialBuilder::default()
        .with_min_delay(retry.base)
        .with_max_delay(retry.cap)
        .with_factor(retry.factor)
        .without_max_times();
    if retry.jitter {
        builder = builder.with_jitter();
    }
    builder.build()
}

/// What the attempts do after each attempt, shaped like tower's `retry::Policy`: the policy
/// sees the call's arguments, which it may rewrite, and the attempt's result, which it may
/// replace with what it keeps, and says whether to try again and after how long. It counts
/// the attempts it allows. The run's budget is asked after the policy, and only when it wants
/// another attempt.
pub(crate) trait Policy {
    /// After an attempt that ended in `ran`: `Some(delay)` to try again after `delay` (with
    /// `arguments` as the policy left them), `None` to end with `ran` as the policy left it.
    fn retry(&mut self, arguments: &mut Arguments<'_>, ran: &mut Ran) -> Option<Duration>;

    /// The run's budget refused the attempt the policy asked for: what the call ends with.
    fn refused(&mut self, ran: &mut Ran, exhausted: ToolError);
}

/// The whole call again, for an error a retry may fix: as often as the retry policy allows,
/// for a write only when repeating it cannot do it twice, after the backoff's delay or the
/// error's `retry_after_ms`, whichever is longer.
pub(crate) struct Whole<'p> {
    retry: &'p RetryPolicy,
    max: u32,
    attempts: u32,
    /// Whether a repeat is safe: not a write, or a write declared idempotent or carrying an
    /// idempotency key that goes with every attempt.
    safe: bool,
    backoff: Option<Backoff>,
}

impl<'p> Whole<'p> {
    pub(crate) fn new(retry: &'p RetryPolicy, max: u32, safe: bool) -> Self {
        Self {
            retry,
            max: max.max(1),
            attempts: 0,
            safe,
            backoff: None,
        }
    }

    /// The delay before the next attempt after `err`.
    fn delay(&mut self, err: &ToolError) -> Duration {
        let retry = self.retry;
        self.backoff
            .get_or_insert_with(|| Backoff::new(retry))
            .next(err)
    }
}

impl Policy for Whole<'_> {
    fn retry(&mut self, _arguments: &mut Arguments<'_>, ran: &mut Ran) -> Option<Duration> {
        self.attempts += 1;
        let err = ran.error()?;
        // An attempt refused by a rate limit never ran: trying again is always safe.
        let safe = self.safe || err.is_throttled();
        if self.attempts >= self.max || !safe || !may_retry(err) {
            return None;
        }
        Some(self.delay(err))
    }

    fn refused(&mut self, ran: &mut Ran, exhausted: ToolError) {
        *ran = Ran::Outcome(ToolOutcome::Error(exhausted));
    }
}

/// A batch's failed items again, when the tool says how to redo them: the items done so far
/// are kept and merged with the retry's, and if a retry fails as a whole the batch as it was
/// is the answer. An error of the whole call is [`Whole`]'s.
pub(crate) struct BatchItems<'p> {
    whole: Whole<'p>,
    output: &'p OutputChecks,
    /// The batch's items done so far, while its failed ones are retried.
    earlier: Option<Value>,
}

impl<'p> BatchItems<'p> {
    pub(crate) fn new(whole: Whole<'p>, output: &'p OutputChecks) -> Self {
        Self {
            whole,
            output,
            earlier: None,
        }
    }
}

impl Policy for BatchItems<'_> {
    fn retry(&mut self, arguments: &mut Arguments<'_>, ran: &mut Ran) -> Option<Duration> {
        let tallied = match ran {
            Ran::Outcome(outcome) if outcome.error().is_none() => self.output.tally(outcome),
            _ => None,
        };
        let Some((data, tally)) = tallied else {
            // A retry of the failed items held back by a rate limit never ran: it waits its
            // turn and goes again, the items done so far kept.
            if self.earlier.is_some()
                && ran.error().is_some_and(ToolError::is_throttled)
                && let Some(delay) = self.whole.retry(arguments, ran)
            {
                return Some(delay);
            }
            if ran.error().is_some()
                && let Some(earlier) = self.earlier.take()
            {
                // Retrying the failed items failed as a whole: the batch as it was, its done
                // items kept, its failures still failures.
                self.whole.attempts += 1;
                *ran = Ran::Outcome(self.output.merged(&earlier));
                return None;
            }
            return self.whole.retry(arguments, ran);
        };
        self.whole.attempts += 1;
        let retried = self.earlier.is_some();
        let data = match self.earlier.take() {
            Some(mut earlier) => {
                crate::output::merge_batch(&mut earlier, data);
                earlier
            }
            None => data,
        };
        let more = self.whole.attempts < self.whole.max && self.whole.safe;
        if let (true, Some((redo, err))) = (more, tally.retry) {
            *arguments = Arguments::from(redo);
            self.earlier = Some(data);
            // Waits as a retry of the whole call would for this error.
            return Some(self.whole.delay(&err));
        }
        if retried {
            *ran = Ran::Outcome(self.output.merged(&data));
        }
        None
    }

    /// Out of budget: the batch as it stands.
    fn refused(&mut self, ran: &mut Ran, _exhausted: ToolError) {
        if let Some(earlier) = self.earlier.take() {
            *ran = Ran::Outcome(self.output.merged(&earlier));
        }
    }
}

/// The policy of one tool's calls: a batch tool's, or the whole call's.
pub(crate) enum Retrying<'p> {
    Whole(Whole<'p>),
    Batch(BatchItems<'p>),
}

impl Policy for Retrying<'_> {
    fn retry(&mut self, arguments: &mut Arguments<'_>, ran: &mut Ran) -> Option<Duration> {
        match self {
            Self::Whole(policy) => policy.retry(arguments, ran),
            Self::Batch(policy) => policy.retry(arguments, ran),
        }
    }

    fn refused(&mut self, ran: &mut Ran, exhausted: ToolError) {
        match self {
            Self::Whole(policy) => policy.refused(ran, exhausted),
            Self::Batch(policy) => policy.refused(ran, exhausted),
        }
    }
}

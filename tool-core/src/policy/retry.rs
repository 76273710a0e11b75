//! When a failed attempt is tried again, and after how long: exponential backoff with full
//! jitter, `retry_after_ms` honoured, never for errors that need a change or a person.

use std::time::Duration;

use backon::BackoffBuilder;

use crate::error::{ErrorCode, ToolError};
use crate::spec::RetryPolicy;

/// Whether an error may be retried by the policy (the error's own flag, and never for codes
/// that need a change or a person).
pub(crate) fn may_retry(err: &ToolError) -> bool {
    err.is_retryable()
        && !err.needs_human()
        && !matches!(
            err.code(),
            ErrorCode::InvalidArguments
                | ErrorCode::PermissionDenied
                | ErrorCode::ApprovalRequired
                | ErrorCode::ApprovalExpired
                | ErrorCode::ApprovalDenied
                | ErrorCode::BudgetExhausted
                | ErrorCode::CircuitOpen
        )
}

/// Whether an error counts against the tool's circuit: the tool or its dependencies failing,
/// not the caller's mistakes.
pub(crate) fn is_failure(err: &ToolError) -> bool {
    !err.is_throttled()
        && matches!(
            err.code(),
            ErrorCode::Timeout
                | ErrorCode::UpstreamError
                | ErrorCode::RateLimited
                | ErrorCode::InternalError
        )
}

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

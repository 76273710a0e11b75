//! How the execution policy reads an error: whether a retry may fix it, and whether it
//! counts against the tool's circuit. Every step that acts on failures asks here.

use crate::error::{ErrorCode, ToolError};

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

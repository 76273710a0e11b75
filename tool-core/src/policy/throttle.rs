//! The rate limits an attempt takes its turn from: the tool's own, and its upstream's. Taken
//! per attempt, so that an attempt held back never ran and can always be tried again.

use std::sync::Arc;

use crate::error::ToolError;
use crate::spec::RateLimit;
use crate::state::RateLimiter;

/// One tool's rate limits, in the limiter that counts them.
pub(crate) struct Throttle {
    pub(crate) limiter: Arc<dyn RateLimiter>,
    /// Each limit with its key in the limiter (`tool:<name>`, `upstream:<name>`).
    pub(crate) limits: Vec<(String, RateLimit)>,
}

impl Throttle {
    /// Takes this attempt's turn from every limit; the error when it must wait (or the
    /// limiter cannot be reached). A turn taken from a limit before another refused is
    /// spent: the limits are checked in a fixed order, tool first.
    pub(crate) async fn take(&self, tool: &str) -> Result<(), ToolError> {
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

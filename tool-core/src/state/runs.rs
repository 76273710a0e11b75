//! Run budgets shared by a fleet: the store trait and what it counts.

use std::time::Duration;

use super::error::StoreError;
use crate::tool::BoxFuture;

/// What a run has used so far, as a [`BudgetStore`] counts it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RunUsage {
    /// Tool calls, this one included.
    pub calls: u32,
    /// Time spent in the run's tool attempts.
    pub tool_time: Duration,
}

/// Where run budgets keep their counts when a fleet shares them (the Redis store, feature
/// `redis`); without one, each toolbox counts in its own memory. Every operation is one atomic
/// step on the store, so a run's limit holds exactly across processes.
pub trait BudgetStore: Send + Sync + 'static {
    /// Counts one call of the run `run`; the run's usage with it.
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when the store cannot be reached (the call is then refused, retryably).
    fn count_call<'a>(&'a self, run: &'a str) -> BoxFuture<'a, Result<RunUsage, StoreError>>;

    /// Counts one retry of `tool` in the run; the run's retries of that tool with it.
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when the store cannot be reached.
    fn count_retry<'a>(
        &'a self,
        run: &'a str,
        tool: &'a str,
    ) -> BoxFuture<'a, Result<u32, StoreError>>;

    /// Adds the time one attempt took to the run's.
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when the store cannot be reached (the time is then not counted).
    fn add_time<'a>(
        &'a self,
        run: &'a str,
        took: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
}

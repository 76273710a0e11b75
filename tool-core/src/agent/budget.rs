//! What a run may still spend, shared with the agents it delegates to: a delegated agent's
//! calls and tokens count against its parent's remaining limits as they happen.

use std::sync::{Arc, Mutex, PoisonError};

/// The calls and tokens a run's delegated agents may still spend during one batch of its
/// calls, and what they spent; chained to the budget of the run above, if any.
#[derive(Debug)]
pub(crate) struct RunBudget {
    parent: Option<Arc<RunBudget>>,
    calls_left: u32,
    tokens_left: Option<u64>,
    spent: Mutex<(u32, u64)>,
}

/// A run's budget as a context extension, for the agents its calls delegate to.
#[derive(Clone, Debug)]
pub(crate) struct ParentBudget(pub(crate) Arc<RunBudget>);

impl RunBudget {
    pub(crate) fn new(
        parent: Option<Arc<RunBudget>>,
        calls_left: u32,
        tokens_left: Option<u64>,
    ) -> Self {
        Self {
            parent,
            calls_left,
            tokens_left,
            spent: Mutex::new((0, 0)),
        }
    }

    fn spent(&self) -> (u32, u64) {
        *self.spent.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether `n` more calls fit here and in every budget above.
    pub(crate) fn fits_calls(&self, n: u32) -> bool {
        self.spent().0.saturating_add(n) <= self.calls_left
            && self.parent.as_ref().is_none_or(|p| p.fits_calls(n))
    }

    /// Whether the tokens are spent here or in a budget above.
    pub(crate) fn tokens_spent(&self) -> bool {
        self.tokens_left.is_some_and(|left| self.spent().1 >= left)
            || self.parent.as_ref().is_some_and(|p| p.tokens_spent())
    }

    /// Counts calls and tokens spent, here and in every budget above.
    pub(crate) fn spend(&self, calls: u32, tokens: u64) {
        {
            let mut spent = self.spent.lock().unwrap_or_else(PoisonError::into_inner);
            spent.0 = spent.0.saturating_add(calls);
            spent.1 = spent.1.saturating_add(tokens);
        }
        if let Some(parent) = &self.parent {
            parent.spend(calls, tokens);
        }
    }

    /// The calls spent through this budget.
    pub(crate) fn calls(&self) -> u32 {
        self.spent().0
    }
}

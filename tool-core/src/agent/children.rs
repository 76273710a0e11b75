//! The states of delegated agents while their parent's calls run.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::state::{RunState, Usage};

/// The states of delegated agents within one batch of a parent's calls, by the parent call's
/// id: saved ones go in before the calls run, waiting ones come out after.
pub(crate) struct Children {
    states: Mutex<HashMap<String, RunState>>,
    usage: Mutex<Usage>,
}

impl Children {
    pub(crate) fn new(saved: BTreeMap<String, RunState>) -> Self {
        Self {
            states: Mutex::new(saved.into_iter().collect()),
            usage: Mutex::new(Usage::default()),
        }
    }

    fn states(&self) -> MutexGuard<'_, HashMap<String, RunState>> {
        self.states.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn take(&self, id: &str) -> Option<RunState> {
        self.states().remove(id)
    }

    pub(crate) fn put(&self, id: String, state: RunState) {
        self.states().insert(id, state);
    }

    pub(crate) fn spend(&self, usage: Usage) {
        self.usage
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .add(usage);
    }

    /// Tokens the children used in this batch.
    pub(crate) fn usage(&self) -> Usage {
        *self.usage.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

//! The one error of every store.

use std::fmt;

/// A store could not be reached, or answered something it should not have: the one error of
/// every store of the state family. What the toolbox does with it depends on what the store
/// guards: a call it would have to count or remember is not run (a retryable error), a large
/// result is given inline, an audit of a lost record is logged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreError(pub String);

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StoreError {}

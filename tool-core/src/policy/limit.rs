//! Calls that must not overlap: a tool that runs alone (sequential), and a tool's own limit
//! on calls at once. (The toolbox's limit on calls at once is taken per attempt, in
//! `attempt.rs`.)

use std::sync::Arc;

use tokio::sync::{RwLock, Semaphore};

use super::step::{Call, Flow, Next, Step};

/// The step, for a toolbox that has a sequential tool or a tool with its own limit.
pub(crate) struct Limit {
    /// The toolbox's sequential lock, and whether this tool takes it alone.
    pub(crate) sequential: Option<(Arc<RwLock<()>>, bool)>,
    /// This tool's own limit on calls at once.
    pub(crate) own: Option<Arc<Semaphore>>,
}

/// Held for its `Drop`: the sequential lock is released when the call ends.
#[allow(dead_code)]
enum Lock {
    Alone(tokio::sync::OwnedRwLockWriteGuard<()>),
    Shared(tokio::sync::OwnedRwLockReadGuard<()>),
}

impl Step for Limit {
    fn run<'a>(&'a self, call: Call<'a>, next: Next<'a>) -> Flow<'a> {
        Flow::later(async move {
            let _order = match &self.sequential {
                Some((lock, true)) => Some(Lock::Alone(Arc::clone(lock).write_owned().await)),
                Some((lock, false)) => Some(Lock::Shared(Arc::clone(lock).read_owned().await)),
                None => None,
            };
            let _own = match &self.own {
                Some(own) => Arc::clone(own).acquire_owned().await.ok(),
                None => None,
            };
            next.run(call).await
        })
    }
}

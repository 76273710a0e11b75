//! Where an agent keeps its runs' checkpoints: the store, how long, and each run's key.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::state::{CheckpointStore, Lease};

/// Where an agent keeps its runs' checkpoints, and for how long.
#[derive(Clone)]
pub(super) struct Checkpoints {
    pub(super) store: Arc<dyn CheckpointStore>,
    pub(super) ttl: Duration,
    /// How long a worker's lease on a run lasts without renewal (renewed every third of it).
    pub(super) lease: Duration,
    /// How long a worker waits for a run another worker holds before it is told the run is
    /// busy.
    pub(super) busy_wait: Duration,
}

impl Checkpoints {
    pub(super) fn new(store: impl CheckpointStore) -> Self {
        Self {
            store: Arc::new(store),
            ttl: DEFAULT_TTL,
            lease: DEFAULT_LEASE,
            busy_wait: Duration::ZERO,
        }
    }
}

/// How long a run's lease lasts without renewal, by default: ten seconds. A worker renews it
/// every third of that while it works; a crashed worker's run is taken over by the next
/// worker at most this long after its last renewal.
pub(super) const DEFAULT_LEASE: Duration = Duration::from_secs(10);

/// How long a checkpoint is kept after a run's last step, by default: seven days.
const DEFAULT_TTL: Duration = Duration::from_secs(7 * 24 * 3600);

/// The store's key for a principal's run: a SHA-256 over both, each framed by its length, so
/// one principal's run id never names another's checkpoint.
pub(super) fn checkpoint_key(principal: Option<&str>, run_id: &str) -> String {
    let mut hash = Sha256::new();
    hash.update(b"toolsmith checkpoint\n");
    match principal {
        Some(p) => {
            hash.update([1]);
            hash.update((p.len() as u64).to_be_bytes());
            hash.update(p.as_bytes());
        }
        None => hash.update([0]),
    }
    hash.update((run_id.len() as u64).to_be_bytes());
    hash.update(run_id.as_bytes());
    let mut key = String::with_capacity(64);
    crate::json::canonical::push_hex(&mut key, &hash.finalize());
    key
}

/// A worker's hold on the run it works on: the lease, and whether the store still says so.
#[derive(Clone, Debug)]
pub(crate) struct Held {
    pub(crate) key: String,
    pub(crate) lease: Lease,
    /// Set when a renewal found the lease gone: the run stops before its next write.
    pub(crate) lost: Arc<AtomicBool>,
}

impl PartialEq for Held {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key && self.lease == other.lease
    }
}

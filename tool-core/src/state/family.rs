//! [`State`]: the stores a toolbox keeps its state in, and the key it signs with.

use std::fmt;
use std::sync::Arc;

use super::circuits::CircuitStore;
use super::idempotency::IdempotencyStore;
use super::limits::{MemoryRateLimiter, RateLimiter};
use super::memory::MemoryIdempotencyStore;
use super::results::{MemoryResultStore, ResultStore};
use super::runs::BudgetStore;
use super::tasks::{MemoryTaskStore, TaskStore};

/// Where a toolbox keeps its state, given to
/// [`Toolbox::with_state`](crate::toolbox::Toolbox::with_state): one value for every store,
/// in memory by default, one shared store for a fleet, and any store overridden on its own.
///
/// The key signs paging tools' cursors and the ids of stored results. By default each toolbox
/// makes a random one; the replicas of a fleet share one ([`with_key`](Self::with_key)), so a
/// cursor or a result id one replica gave out is good on another.
///
/// ```
/// use toolsmith::Toolbox;
/// use toolsmith::state::{MemoryIdempotencyStore, State};
///
/// // One process: the default, everything in memory.
/// let one = Toolbox::new().with_state(State::memory());
///
/// // A bounded idempotency store in memory, the rest as by default.
/// let bounded = State::memory().with_idempotency(MemoryIdempotencyStore::new(10_000));
/// let toolbox = Toolbox::new().with_state(bounded);
/// # let _ = (one, toolbox);
/// ```
///
/// For a fleet, one Redis for every store (feature `redis`), and one key:
///
/// ```no_run
/// # #[cfg(feature = "redis")]
/// # fn fleet() -> Result<(), toolsmith::state::StoreError> {
/// use std::sync::Arc;
/// use toolsmith::state::{RedisStore, State};
///
/// let redis = Arc::new(RedisStore::open("redis://127.0.0.1:6379/")?);
/// let state = State::shared(redis).with_key("the fleet's key: 32 random bytes or more");
/// let toolbox = toolsmith::Toolbox::new().with_state(state);
/// # let _ = toolbox;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct State {
    pub(crate) idempotency: Arc<dyn IdempotencyStore>,
    pub(crate) results: Arc<dyn ResultStore>,
    pub(crate) rate_limits: Arc<dyn RateLimiter>,
    pub(crate) budgets: Option<Arc<dyn BudgetStore>>,
    pub(crate) circuits: Option<Arc<dyn CircuitStore>>,
    pub(crate) tasks: Arc<dyn TaskStore>,
    pub(crate) key: Option<Arc<[u8; 32]>>,
    /// Where approvals are kept, once [`with_approvals`](Self::with_approvals) asks for it.
    pub(crate) approvals: Option<ApprovalHome>,
    /// The Redis store of a state made by [`shared`](Self::shared) over one.
    #[cfg(feature = "redis")]
    redis: Option<Arc<super::RedisStore>>,
}

/// Where a toolbox keeps approvals when its state keeps them ([`State::with_approvals`]): the
/// Redis store the rest of the state lives in, or a slot in this process's memory that the
/// first toolbox on the state fills with its store of approvals and every other one (and every
/// clone of the state) shares. The slot holds the store as `Any` because the approvals' types
/// live on the execution policy's floor, above the state's.
#[derive(Clone)]
pub(crate) enum ApprovalHome {
    Memory(Arc<std::sync::OnceLock<Arc<dyn std::any::Any + Send + Sync>>>),
    #[cfg(feature = "redis")]
    Redis(Arc<super::RedisStore>),
}

impl State {
    /// Everything in this process's memory: idempotency keys ([`MemoryIdempotencyStore`]),
    /// large results ([`MemoryResultStore`]), rate limits ([`MemoryRateLimiter`]), MCP tasks
    /// ([`MemoryTaskStore`]); run budgets and circuits counted by the toolbox itself; a random
    /// key.
    #[must_use]
    pub fn memory() -> Self {
        Self {
            idempotency: Arc::new(MemoryIdempotencyStore::default()),
            results: Arc::new(MemoryResultStore::default()),
            rate_limits: Arc::new(MemoryRateLimiter::new()),
            budgets: None,
            circuits: None,
            tasks: Arc::new(MemoryTaskStore::default()),
            key: None,
            approvals: None,
            #[cfg(feature = "redis")]
            redis: None,
        }
    }

    /// Every store in `store`, shared by the processes that use it (a fleet's replicas on one
    /// Redis: [`RedisStore`](crate::state::RedisStore), feature `redis`). The key is still
    /// this process's own until [`with_key`](Self::with_key) names the fleet's.
    #[must_use]
    pub fn shared<S>(store: Arc<S>) -> Self
    where
        S: IdempotencyStore + ResultStore + RateLimiter + BudgetStore + CircuitStore + TaskStore,
    {
        #[cfg(feature = "redis")]
        let redis = (Arc::clone(&store) as Arc<dyn std::any::Any + Send + Sync>)
            .downcast::<super::RedisStore>()
            .ok();
        Self {
            idempotency: store.clone(),
            results: store.clone(),
            rate_limits: store.clone(),
            budgets: Some(store.clone()),
            circuits: Some(store.clone()),
            tasks: store,
            key: None,
            approvals: None,
            #[cfg(feature = "redis")]
            redis,
        }
    }

    /// Keeps approvals in this state too: the calls waiting for a person and the decisions on
    /// them, for every toolbox on the state that has no approver of its own
    /// ([`Toolbox::with_approver`](crate::toolbox::Toolbox::with_approver) wins). On a state
    /// [`shared`](Self::shared) over a [`RedisStore`](crate::state::RedisStore) they are kept in
    /// that Redis (a `SharedApprovals`: a person decides through any replica, and a call runs
    /// once across the fleet); otherwise in this process's memory (an
    /// [`Approvals`](crate::policy::Approvals) store, shared by every toolbox on this state and
    /// its clones). Either store keeps its bounds: in memory, 1,024 decided requests and 16 MiB
    /// of history; in Redis, 4,096 waiting requests and 64 MiB. A UI lists the waiting ones
    /// through [`ApprovalDesk::waiting_for`](crate::toolbox::ApprovalDesk::waiting_for).
    ///
    /// ```
    /// use toolsmith::state::State;
    /// use toolsmith::{tool, ToolContext, Toolbox};
    ///
    /// /// Deletes a note. Destructive: it cannot be undone. Not for archiving.
    /// #[tool(effect = "destructive")]
    /// async fn delete_note(
    ///     /// The note.
    ///     id: u64,
    /// ) -> u64 {
    ///     id
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let toolbox = Toolbox::new().with(DeleteNote).with_state(State::memory().with_approvals());
    /// let ctx = ToolContext::new().with_principal("ada");
    /// let refused = toolbox.call("delete_note", r#"{"id": 7}"#, &ctx).await;
    /// assert!(refused.error().unwrap().message().contains("waiting"));
    /// assert_eq!(toolbox.approvals().waiting_for(Some("ada")).await.unwrap().len(), 1);
    /// # });
    /// ```
    #[must_use]
    pub fn with_approvals(mut self) -> Self {
        #[cfg(feature = "redis")]
        if let Some(redis) = &self.redis {
            self.approvals = Some(ApprovalHome::Redis(Arc::clone(redis)));
            return self;
        }
        self.approvals = Some(ApprovalHome::Memory(Arc::default()));
        self
    }

    /// Keeps idempotency keys and first results in `store`.
    #[must_use]
    pub fn with_idempotency(mut self, store: impl IdempotencyStore) -> Self {
        self.idempotency = Arc::new(store);
        self
    }

    /// Keeps large results in `store`.
    #[must_use]
    pub fn with_results(mut self, store: impl ResultStore) -> Self {
        self.results = Arc::new(store);
        self
    }

    /// Keeps rate limits' counts in `limiter`.
    #[must_use]
    pub fn with_rate_limits(mut self, limiter: impl RateLimiter) -> Self {
        self.rate_limits = Arc::new(limiter);
        self
    }

    /// Counts run budgets in `store`, shared by the processes that use it.
    #[must_use]
    pub fn with_budgets(mut self, store: impl BudgetStore) -> Self {
        self.budgets = Some(Arc::new(store));
        self
    }

    /// Keeps circuit breakers in `store`, shared by the processes that use it.
    #[must_use]
    pub fn with_circuits(mut self, store: impl CircuitStore) -> Self {
        self.circuits = Some(Arc::new(store));
        self
    }

    /// Keeps the state of MCP tasks in `store`, so that every server on it answers for a task
    /// any of them runs.
    ///
    /// ```
    /// use toolsmith::state::{MemoryTaskStore, State};
    /// // Two servers in one process, as two replicas: each answers for the other's tasks.
    /// let shared = State::memory().with_tasks(MemoryTaskStore::with_max_bytes(8 << 20));
    /// let one = toolsmith::Toolbox::new().with_state(shared.clone());
    /// let two = toolsmith::Toolbox::new().with_state(shared);
    /// # let _ = (one, two);
    /// ```
    #[must_use]
    pub fn with_tasks(mut self, store: impl TaskStore) -> Self {
        self.tasks = Arc::new(store);
        self
    }

    /// Signs cursors and stored results' ids with a key made from `secret`, instead of one
    /// this toolbox makes up: the replicas of a fleet share it. Keep `secret` as secret as a
    /// session key; at least 32 random bytes.
    ///
    /// # Panics
    ///
    /// When `secret` is shorter than 32 bytes: anyone could guess a short key and forge
    /// cursors, so it is refused where the state is built.
    #[must_use]
    pub fn with_key(mut self, secret: impl AsRef<[u8]>) -> Self {
        crate::keys::check_secret("State::with_key", secret.as_ref());
        self.key = Some(Arc::new(crate::keys::key_from_secret(secret.as_ref())));
        self
    }
}

impl Default for State {
    fn default() -> Self {
        Self::memory()
    }
}

impl fmt::Debug for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("State")
            .field("shared_budgets", &self.budgets.is_some())
            .field("shared_circuits", &self.circuits.is_some())
            .field("key", &self.key.as_ref().map(|_| "set"))
            .field("approvals", &self.approvals.is_some())
            .finish_non_exhaustive()
    }
}

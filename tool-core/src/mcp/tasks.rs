//! Tool calls as MCP tasks: the `io.modelcontextprotocol/tasks` extension of MCP 2026-07-28
//! (SEP-2663), on rmcp's [`TaskManager`](rmcp::task_manager::TaskManager).
//!
//! A call of a task tool from a client that takes tasks is answered with a task (its id,
//! status and time to live); the tool runs on, and the client polls `tasks/get` for its
//! status and result, answers what the tool asks through `tasks/update`, and may cancel it
//! with `tasks/cancel`.
//!
//! A fleet shares its tasks through the toolbox's [`TaskStore`]: the replica that runs a task
//! publishes its state whenever it changes and takes the messages other replicas leave for it
//! (a cancellation, answers), at most half a poll interval late (a quarter of a second by
//! default); any replica answers `tasks/get`, `tasks/update` and `tasks/cancel` for it.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use rmcp::model::{DetailedTask, TaskStatus};
use rmcp::task_manager::TaskContext;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{oneshot, watch};

use crate::state::TaskStore;

/// When a tool runs as an MCP task (`McpServer::with_task_tool`).
///
/// A task is offered only to a client that declares the tasks extension, on MCP 2026-07-28.
///
/// ```
/// use toolsmith::mcp::{McpServer, TaskSupport};
/// let server = McpServer::new(toolsmith::Toolbox::new())
///     .with_task_tool("export_report", TaskSupport::Optional);
/// # let _ = server;
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskSupport {
    /// A task from the start for a client that takes tasks; for any other client, an
    /// ordinary call.
    Optional,
    /// Only ever a task: a client that does not take tasks is refused with `-32021`
    /// (missing required client capability), naming the extension.
    Required,
    /// An ordinary call until the tool calls `ctx.detach()`; from there a task, for a client
    /// that takes tasks. What the tool asks the client before that goes the usual way (on
    /// MCP 2026-07-28, input-required results), and a call that ends first answers directly.
    OnDetach,
}

/// The task settings of one server.
#[derive(Clone)]
pub(crate) struct Tasks {
    pub(crate) tools: std::collections::HashMap<String, TaskSupport>,
    pub(crate) ttl: Duration,
    pub(crate) poll_interval: Duration,
    pub(crate) manager: rmcp::task_manager::TaskManager,
    /// Who each task started with a principal belongs to, until it expires.
    pub(crate) owners: Arc<Mutex<HashMap<String, (String, Instant)>>>,
    /// The tasks this server keeps (running, or finished and kept for their time to live),
    /// with the size of each result: bounded by [`MAX_TASKS`] and [`MAX_TASK_BYTES`].
    pub(crate) ledger: Arc<Mutex<VecDeque<Arc<Kept>>>>,
}

/// Tasks kept at once, at most (running, or finished within their time to live).
pub(crate) const MAX_TASKS: usize = 1_024;
/// Bytes of finished tasks' results kept at once, at most.
pub(crate) const MAX_TASK_BYTES: usize = 64 << 20;

/// One task as the ledger counts it: until when it may be kept, and its result's size once
/// it has one.
pub(crate) struct Kept {
    until: Instant,
    bytes: AtomicUsize,
}

impl Kept {
    /// The task's result is `bytes` long.
    pub(crate) fn finished(&self, bytes: usize) {
        self.bytes.store(bytes, Ordering::Relaxed);
    }
}

impl Default for Tasks {
    fn default() -> Self {
        Self {
            tools: std::collections::HashMap::new(),
            ttl: DEFAULT_TASK_TTL,
            poll_interval: DEFAULT_POLL_INTERVAL,
            manager: rmcp::task_manager::TaskManager::new(),
            owners: Arc::default(),
            ledger: Arc::default(),
        }
    }
}

/// How long a task and its result are kept: rmcp's default, five minutes.
pub(crate) const DEFAULT_TASK_TTL: Duration =
    Duration::from_millis(rmcp::task_manager::DEFAULT_TASK_TTL_MS);

/// How often a client is told to poll.
pub(crate) const DEFAULT_POLL_INTERVAL: Duration =
    Duration::from_millis(rmcp::task_manager::DEFAULT_POLL_INTERVAL_MS);

/// How long a cancelled task's tool has to wind down (it is told through its cancellation
/// token) before it is dropped.
pub(crate) const CANCEL_GRACE: Duration = Duration::from_secs(1);

impl Tasks {
    /// Binds the task `id`, started by `principal`, to it: only that principal can get,
    /// update or cancel it. A task started without a principal is bound to none (its id, a
    /// random UUID, is what a client holds).
    pub(crate) fn bind(&self, id: &str, principal: Option<&str>) {
        let Some(principal) = principal else {
            return;
        };
        let Ok(mut owners) = self.owners.lock() else {
            return;
        };
        let now = Instant::now();
        // Past its time to live a task is gone from the manager too.
        owners.retain(|_, (_, until)| *until > now);
        owners.insert(
            id.to_owned(),
            (principal.to_owned(), now + self.ttl + self.ttl),
        );
    }

    /// Whether `principal` may see the task `id`: it is not bound, or bound to `principal`.
    /// A task that is another principal's is answered as an unknown one (`-32602`, as
    /// rmcp's task manager answers an id it does not know), so that nothing says it exists.
    pub(crate) fn check(&self, id: &str, principal: Option<&str>) -> Result<(), rmcp::ErrorData> {
        let owner = self
            .owners
            .lock()
            .ok()
            .and_then(|owners| owners.get(id).map(|(owner, _)| owner.clone()));
        match owner {
            Some(owner) if Some(owner.as_str()) != principal => Err(unknown_task(id)),
            _ => Ok(()),
        }
    }

    /// How often the replica that runs a task publishes its changes and takes its messages:
    /// half the poll interval, between 25 ms and 1 s.
    fn tick(&self) -> Duration {
        (self.poll_interval / 2).clamp(Duration::from_millis(25), Duration::from_secs(1))
    }

    /// Shares the task `id`, just started by `owner`, through `store`: its first record is
    /// published before this returns (so that any replica answers for it once its id is
    /// out), then a watcher publishes each change and applies the messages left for it,
    /// until its final state is published or it is gone.
    pub(crate) async fn share(&self, id: &str, owner: Option<&str>, store: Arc<dyn TaskStore>) {
        let mirror = Mirror {
            id: id.to_owned(),
            owner: owner.map(str::to_owned),
            manager: self.manager.clone(),
            store,
            ttl: self.ttl + self.ttl,
            published: String::new(),
        };
        let mut mirror = mirror;
        let mut done = mirror.publish().await;
        let tick = self.tick();
        tokio::spawn(async move {
            while !done {
                tokio::time::sleep(tick).await;
                mirror.apply_messages().await;
                done = mirror.publish().await;
            }
        });
    }

    /// Room for one more task: `Err` with how long until the oldest kept task is let go,
    /// when the server keeps as many tasks, or as many bytes of results, as it may.
    pub(crate) fn admit(&self) -> Result<(), Duration> {
        let Ok(mut ledger) = self.ledger.lock() else {
            return Ok(());
        };
        let now = Instant::now();
        while ledger.front().is_some_and(|kept| kept.until <= now) {
            ledger.pop_front();
        }
        let bytes: usize = ledger.iter().map(|k| k.bytes.load(Ordering::Relaxed)).sum();
        if ledger.len() >= MAX_TASKS || bytes >= MAX_TASK_BYTES {
            let wait = ledger
                .front()
                .map_or(Duration::from_secs(1), |k| k.until - now);
            return Err(wait.max(Duration::from_secs(1)));
        }
        Ok(())
    }

    /// Counts a task just started: kept at most twice its time to live (it runs for at most
    /// one, and its result is kept for one after it ends).
    pub(crate) fn keep(&self) -> Arc<Kept> {
        let kept = Arc::new(Kept {
            until: Instant::now() + self.ttl + self.ttl,
            bytes: AtomicUsize::new(0),
        });
        if let Ok(mut ledger) = self.ledger.lock() {
            ledger.push_back(Arc::clone(&kept));
        }
        kept
    }

    pub(crate) fn options(&self) -> rmcp::task_manager::TaskOptions {
        rmcp::task_manager::TaskOptions::new()
            .with_ttl_ms(u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX))
            .with_poll_interval_ms(
                u64::try_from(self.poll_interval.as_millis())
                    .unwrap_or(u64::MAX)
                    .max(1),
            )
    }
}

/// The answer for a task this server does not know, or that is another principal's: the
/// same for both, so that nothing says the task exists. The id is echoed cut short.
pub(crate) fn unknown_task(id: &str) -> rmcp::ErrorData {
    rmcp::ErrorData::invalid_params(format!("unknown task: {}", crate::echo::echo(id)), None)
}

/// Whether `id` has the shape of a task id: a UUID in its hyphenated lowercase form.
fn is_task_id(id: &str) -> bool {
    id.len() == 36
        && id.bytes().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_digit() || (b'a'..=b'f').contains(&b),
        })
}

/// The answer when the task store cannot be read or written.
fn store_unavailable() -> rmcp::ErrorData {
    rmcp::ErrorData::internal_error("the task store is unavailable; try again later", None)
}

/// A task as every replica sees it: who it belongs to, and what `tasks/get` answers.
#[derive(Serialize, Deserialize)]
struct Record {
    owner: Option<String>,
    task: DetailedTask,
}

/// What a replica leaves for the one that runs a task.
#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Message {
    /// `tasks/cancel`.
    Cancel,
    /// `tasks/update`: the client's answers, by input request key.
    Answers {
        responses: std::collections::BTreeMap<String, Value>,
    },
}

/// The replica that runs a task, publishing it.
struct Mirror {
    id: String,
    owner: Option<String>,
    manager: rmcp::task_manager::TaskManager,
    store: Arc<dyn TaskStore>,
    ttl: Duration,
    /// The record last published.
    published: String,
}

impl Mirror {
    /// Publishes the task's state if it changed; `true` once there is nothing more to
    /// publish (its final state is out, or the task is gone).
    async fn publish(&mut self) -> bool {
        let Ok(task) = self.manager.get_task(&self.id) else {
            return true;
        };
        let finished = matches!(
            task.status(),
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        );
        let record = Record {
            owner: self.owner.clone(),
            task,
        };
        let Ok(text) = serde_json::to_string(&record) else {
            return true;
        };
        if text == self.published {
            return finished;
        }
        match self.store.publish(&self.id, &text, self.ttl).await {
            Ok(()) => {
                self.published = text;
                finished
            }
            Err(error) => {
                tracing::warn!(%error, task = %self.id, "a task's state was not shared; trying again");
                false
            }
        }
    }

    /// Applies what other replicas left for the task.
    async fn apply_messages(&self) {
        let messages = match self.store.take(&self.id).await {
            Ok(messages) => messages,
            Err(error) => {
                tracing::warn!(%error, task = %self.id, "a task's messages were not read; trying again");
                return;
            }
        };
        for message in messages {
            // Unknown ids are ignored: the task ended and was let go meanwhile.
            let _ = match serde_json::from_str::<Message>(&message) {
                Ok(Message::Cancel) => self.manager.cancel_task(&self.id),
                Ok(Message::Answers { responses }) => self.manager.update_task(&self.id, responses),
                Err(_) => Ok(()),
            };
        }
    }
}

/// A task another replica runs, as the store has it: its state, once its owner is checked.
///
/// # Errors
///
/// `-32602` when no replica shares it or it is another principal's; an internal error when
/// the store cannot be read.
pub(crate) async fn shared_task(
    store: &dyn TaskStore,
    id: &str,
    principal: Option<&str>,
) -> Result<DetailedTask, rmcp::ErrorData> {
    // Task ids are UUIDs (rmcp's task manager makes them): anything else names no task, and
    // never reaches the store, whose keys it would otherwise be spliced into.
    if !is_task_id(id) {
        return Err(unknown_task(id));
    }
    let text = store
        .read(id)
        .await
        .map_err(|_| store_unavailable())?
        .ok_or_else(|| unknown_task(id))?;
    let record: Record = serde_json::from_str(&text).map_err(|_| unknown_task(id))?;
    match record.owner {
        Some(owner) if Some(owner.as_str()) != principal => Err(unknown_task(id)),
        _ => Ok(record.task),
    }
}

/// Leaves `tasks/cancel` (`answers: None`) or `tasks/update` for the replica that runs the
/// task `id`, once its owner is checked. A task that has ended takes nothing, as on its own
/// replica.
///
/// # Errors
///
/// As [`shared_task`]; an internal error when the store refuses the message.
pub(crate) async fn message_task(
    store: &dyn TaskStore,
    id: &str,
    principal: Option<&str>,
    answers: Option<std::collections::BTreeMap<String, Value>>,
    ttl: Duration,
) -> Result<(), rmcp::ErrorData> {
    let task = shared_task(store, id, principal).await?;
    if matches!(
        task.status(),
        TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
    ) {
        return Ok(());
    }
    let message = match answers {
        None => Message::Cancel,
        Some(responses) => Message::Answers { responses },
    };
    let text = serde_json::to_string(&message).map_err(|_| store_unavailable())?;
    store.post(id, &text, ttl).await.map_err(|error| {
        tracing::warn!(%error, task = %id, "a message for a task was not left");
        rmcp::ErrorData::internal_error("the task was not reached; try again in a moment", None)
    })
}

/// Shared by a task tool's caller and the request handler: the tool's wish to go on as a
/// task, and the task once it exists.
pub(crate) struct Detach {
    task: OnceLock<TaskContext>,
    asked: std::sync::Mutex<Option<oneshot::Sender<()>>>,
    ready: watch::Sender<bool>,
}

impl Detach {
    /// A handle, and what the handler waits on for the tool's `ctx.detach()`.
    pub(crate) fn new() -> (Arc<Self>, oneshot::Receiver<()>) {
        let (asked, wish) = oneshot::channel();
        let handle = Self {
            task: OnceLock::new(),
            asked: std::sync::Mutex::new(Some(asked)),
            ready: watch::channel(false).0,
        };
        (Arc::new(handle), wish)
    }

    /// The task the call runs as, once it does.
    pub(crate) fn task(&self) -> Option<&TaskContext> {
        self.task.get()
    }

    /// The call is the task `task` from now on.
    pub(crate) fn became(&self, task: TaskContext) {
        let _ = self.task.set(task);
        self.ready.send_replace(true);
    }

    /// The tool's `ctx.detach()`: asks the handler once, then waits for the task.
    pub(crate) async fn detach(&self) -> bool {
        if self.task.get().is_some() {
            return true;
        }
        let asked = self.asked.lock().ok().and_then(|mut a| a.take());
        if let Some(asked) = asked
            && asked.send(()).is_err()
        {
            // The handler is gone (the request ended): the call cannot become a task.
            return false;
        }
        let mut ready = self.ready.subscribe();
        ready.wait_for(|made| *made).await.is_ok()
    }
}

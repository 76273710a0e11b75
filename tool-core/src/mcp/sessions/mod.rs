//! The HTTP sessions of MCP 2025-11-25 and earlier: a small record for each open session, and
//! rmcp's session worker only while the session is in use.
//!
//! rmcp serves a session through a worker task with its channels, buffers and a handler of
//! its own: tens of kilobytes each. Most open sessions are idle (a client between two turns
//! of its model), so a session's worker rests once the handshake is done and again whenever
//! the session has had no request and no open stream for
//! [`HttpOptions::session_worker_idle`](super::HttpOptions::session_worker_idle). What stays
//! is the record: the client's `initialize` parameters as JSON, its log level, and when it was
//! last seen. The next request wakes the session: a new worker is started and the handshake
//! replayed to it (as rmcp replays it when it restores a session from a store), before the
//! request is delivered; a client sees no difference. A session with an open stream (a
//! request being answered, a `GET` stream waiting for notifications) never rests.
//!
//! While a session rests no handler holds its peer, so a change of the toolbox's tools would
//! reach nobody: the record remembers where the list stood, and a session woken after a
//! change is sent `notifications/tools/list_changed` at once (on the stream the client opens
//! for notifications, as rmcp keeps them for it).
//!
//! Sessions are capped in number and closed (record and worker) after
//! [`HttpOptions::session_idle_timeout`](super::HttpOptions::session_idle_timeout) without a
//! request, as before.

use std::collections::HashMap;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{ClientJsonRpcMessage, GetExtensions as _, ServerJsonRpcMessage};
use rmcp::transport::WorkerTransport;
use rmcp::transport::common::server_side_http::{ServerSseMessage, SessionId, session_id};
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::{
    EventId, LocalSessionHandle, LocalSessionWorker, SessionConfig, SessionError,
    create_local_session,
};
use rmcp::transport::streamable_http_server::session::{
    SessionState, SessionStore, SessionStoreError,
};
use tokio::sync::{oneshot, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::caller;
use super::server::McpServer;
use held::{Busy, Held, Usage};

/// The `notifications/initialized` a woken worker is given after the replayed `initialize`.
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// The open sessions of one HTTP endpoint.
pub(super) struct Sessions {
    records: Mutex<HashMap<SessionId, Record>>,
    max: usize,
    /// A session without a request for this long is closed.
    idle: Duration,
    /// A session's worker without a request or an open stream for this long rests.
    worker_idle: Duration,
    /// What a woken session is served by.
    server: McpServer,
    /// The endpoint's shutdown: ends every worker.
    shutdown: CancellationToken,
}

/// One open session.
struct Record {
    /// When it was opened: its duration is recorded when it ends
    /// (`mcp.server.session.duration`, with the `otel` feature).
    #[cfg(feature = "otel")]
    opened: Instant,
    /// When its last request arrived.
    seen: Instant,
    /// The client's `initialize` parameters as JSON, once the handshake is done.
    hello: Option<Box<str>>,
    /// How the session is in use.
    usage: Arc<Usage>,
    /// Held while the worker is woken or put to rest, so that one never overtakes the other.
    wake: Arc<tokio::sync::Mutex<()>>,
    /// The worker, while awake.
    worker: Option<LocalSessionHandle>,
    /// What the client chose (its log level), kept while the worker rests.
    caller: Arc<caller::Session>,
    /// While resting: where the toolbox's list of tools stood when the worker went.
    changes: Option<watch::Receiver<u64>>,
    /// The principal the session was opened by (`Some(None)`: by no one in particular),
    /// once bound: a request from another is answered as for an unknown session.
    principal: Option<Option<String>>,
}

impl Record {
    /// The session ends: with the `otel` feature its duration is recorded.
    fn ended(&self) {
        #[cfg(feature = "otel")]
        crate::telemetry::record_mcp(
            "mcp.server.session.duration",
            self.opened.elapsed().as_secs_f64(),
            crate::telemetry::McpMeasure {
                protocol_version: self.hello.as_deref().and_then(|hello| {
                    let hello: serde_json::Value = serde_json::from_str(hello).ok()?;
                    Some(hello.get("protocolVersion")?.as_str()?.to_owned())
                }),
                transport: "tcp",
                ..Default::default()
            },
        );
    }
}

/// Why a session request failed.
#[derive(Debug)]
pub(super) enum SessionsError {
    Full,
    NotFound,
    Worker(SessionError),
    Wake(String),
}

impl std::fmt::Display for SessionsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Full => f.write_str("too many open sessions"),
            Self::NotFound => f.write_str("session not found"),
            Self::Worker(error) => error.fmt(f),
            Self::Wake(why) => write!(f, "the session could not be resumed: {why}"),
        }
    }
}

impl std::error::Error for SessionsError {}

impl From<SessionError> for SessionsError {
    fn from(error: SessionError) -> Self {
        Self::Worker(error)
    }
}

impl Sessions {
    /// The sessions of an endpoint serving `server`, and the task that puts idle workers to
    /// rest and closes idle sessions (it ends with the endpoint).
    pub(super) fn start(server: McpServer, shutdown: CancellationToken) -> Arc<Self> {
        let config = &server.config;
        let sessions = Arc::new(Self {
            records: Mutex::new(HashMap::new()),
            max: config.max_sessions.max(1),
            idle: config.session_idle,
            worker_idle: config.session_worker_idle,
            shutdown: shutdown.clone(),
            server,
        });
        let tick = sessions
            .worker_idle
            .min(sessions.idle)
            .div_f64(2.0)
            .clamp(Duration::from_millis(20), Duration::from_secs(1));
        let weak = Arc::downgrade(&sessions);
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = shutdown.cancelled() => break,
                    () = tokio::time::sleep(tick) => {}
                }
                let Some(sessions) = Weak::upgrade(&weak) else {
                    break;
                };
                sessions.sweep().await;
            }
        });
        sessions
    }

    /// The settings of every worker: idleness is handled here, not by the worker.
    fn worker_config() -> SessionConfig {
        let mut config = SessionConfig::default();
        config.keep_alive = None;
        config
    }

    /// Closes the sessions idle for longer than allowed, and puts idle workers to rest.
    async fn sweep(&self) {
        for worker in self.expire() {
            let _ = worker.close().await;
        }
        let now = Instant::now();
        let resting: Vec<SessionId> = match self.records.lock() {
            Ok(records) => records
                .iter()
                .filter(|(_, record)| {
                    record.worker.is_some()
                        && !record.usage.kept.load(Ordering::Acquire)
                        && record.usage.busy.load(Ordering::Acquire) == 0
                        && now.duration_since(record.seen) >= self.worker_idle
                })
                .map(|(id, _)| id.clone())
                .collect(),
            Err(_) => return,
        };
        for id in resting {
            self.rest(&id, false).await;
        }
    }

    /// Puts the session's worker to rest unless the session is in use; `first` rests the
    /// handshake's worker too.
    async fn rest(&self, id: &SessionId, first: bool) {
        let Some(wake) = self.with_record(id, |r| Arc::clone(&r.wake)) else {
            return;
        };
        // A request being woken holds the lock: it is in use, so let it be.
        let Ok(_waking) = wake.try_lock() else {
            return;
        };
        let toolbox = &self.server.config.toolbox;
        let worker = self.with_record(id, |record| {
            let usage = &record.usage;
            if usage.busy.load(Ordering::Acquire) > 0
                || (usage.kept.load(Ordering::Acquire) && !first)
            {
                return None;
            }
            let worker = record.worker.take()?;
            let mut changes = toolbox.subscribe_changes();
            changes.mark_unchanged();
            record.changes = Some(changes);
            usage.kept.store(false, Ordering::Release);
            Some(worker)
        });
        if let Some(worker) = worker.flatten() {
            let _ = worker.close().await;
        }
    }

    fn with_record<T>(&self, id: &SessionId, f: impl FnOnce(&mut Record) -> T) -> Option<T> {
        self.records.lock().ok()?.get_mut(id).map(f)
    }

    /// Marks the session in use and returns its worker, woken if it was resting.
    async fn enter(&self, id: &SessionId) -> Result<(LocalSessionHandle, Busy), SessionsError> {
        let (busy, wake) = self
            .with_record(id, |record| {
                record.seen = Instant::now();
                (Busy::new(&record.usage), Arc::clone(&record.wake))
            })
            .ok_or(SessionsError::NotFound)?;
        let _waking = wake.lock().await;
        let (worker, hello, caller, changes) = self
            .with_record(id, |record| {
                (
                    record.worker.clone(),
                    record.hello.clone(),
                    Arc::clone(&record.caller),
                    record.changes.take(),
                )
            })
            .ok_or(SessionsError::NotFound)?;
        if let Some(worker) = worker {
            return Ok((worker, busy));
        }
        let hello = hello.ok_or(SessionsError::NotFound)?;
        let worker = self.wake(id, &hello, caller, changes).await?;
        self.with_record(id, |record| record.worker = Some(worker.clone()))
            .ok_or(SessionsError::NotFound)?;
        Ok((worker, busy))
    }

    /// Starts a worker for a resting session and replays the handshake to it.
    async fn wake(
        &self,
        id: &SessionId,
        hello: &str,
        caller: Arc<caller::Session>,
        changes: Option<watch::Receiver<u64>>,
    ) -> Result<LocalSessionHandle, SessionsError> {
        let mut initialize: ClientJsonRpcMessage = serde_json::from_str(&format!(
            r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{hello}}}"#
        ))
        .map_err(|e| SessionsError::Wake(e.to_string()))?;
        // Not the client's request: its span was made when the client sent it.
        if let rmcp::model::JsonRpcMessage::Request(request) = &mut initialize {
            request
                .request
                .extensions_mut()
                .insert(super::traced::Replayed);
        }
        let initialized: ClientJsonRpcMessage =
            serde_json::from_str(INITIALIZED).map_err(|e| SessionsError::Wake(e.to_string()))?;
        let (handle, worker) = create_local_session(id.clone(), Self::worker_config());
        let transport: WorkerTransport<LocalSessionWorker> = WorkerTransport::spawn(worker);
        let service = self.server.for_session_with(caller);
        let stop = self.shutdown.child_token();
        let (ready, started) = oneshot::channel();
        tokio::spawn(async move {
            match ServiceExt::serve_with_ct(service, transport, stop).await {
                Ok(running) => {
                    let _ = ready.send(running.peer().clone());
                    let _ = running.waiting().await;
                }
                Err(error) => tracing::debug!(%error, "a resting MCP session could not be woken"),
            }
        });
        handle.initialize(initialize).await?;
        handle.push_message(initialized, None).await?;
        let peer = started
            .await
            .map_err(|_| SessionsError::Wake("the handshake was not accepted".into()))?;
        if changes.is_some_and(|c| c.has_changed().unwrap_or(false))
            && let Err(error) = peer.notify_tool_list_changed().await
        {
            tracing::debug!(%error, "tools/list_changed not delivered");
        }
        Ok(handle)
    }

    /// Forgets a worker that ended on its own, so that the next request wakes a new one.
    fn forget(&self, id: &SessionId, error: &SessionsError) {
        if matches!(
            error,
            SessionsError::Worker(SessionError::SessionServiceTerminated)
        ) {
            self.with_record(id, |record| {
                record.worker = None;
                record.usage.kept.store(false, Ordering::Release);
            });
        }
    }

    /// Closes the sessions idle for longer than allowed.
    fn expire(&self) -> Vec<LocalSessionHandle> {
        let now = Instant::now();
        let mut closed = Vec::new();
        if let Ok(mut records) = self.records.lock() {
            records.retain(|_, record| {
                let keep = now.duration_since(record.seen) < self.idle;
                if !keep {
                    record.ended();
                    closed.extend(record.worker.take());
                }
                keep
            });
        }
        closed
    }

    /// Whether a new session would be over the cap (after closing idle ones).
    pub(super) async fn full(&self) -> bool {
        if self.open() < self.max {
            return false;
        }
        for worker in self.expire() {
            let _ = worker.close().await;
        }
        self.open() >= self.max
    }

    /// Binds the session `id` to the principal that opened it (the first binding holds).
    pub(super) fn bind(&self, id: &str, principal: Option<String>) {
        self.with_record(&SessionId::from(id), |record| {
            record.principal.get_or_insert(principal);
        });
    }

    /// Whether a request by `principal` may use the session `id`: it is not bound (or not
    /// known: rmcp answers for that), or bound to `principal`.
    pub(super) fn belongs(&self, id: &str, principal: Option<&str>) -> bool {
        self.with_record(&SessionId::from(id), |record| match &record.principal {
            Some(owner) => owner.as_deref() == principal,
            None => true,
        })
        .unwrap_or(true)
    }

    /// The sessions open now.
    pub(super) fn open(&self) -> usize {
        self.records.lock().map_or(0, |records| records.len())
    }

    /// Ends a session: its record and its worker.
    async fn remove(&self, id: &str) {
        let worker = self
            .records
            .lock()
            .ok()
            .and_then(|mut records| records.remove(id))
            .and_then(|record| {
                record.ended();
                record.worker
            });
        if let Some(worker) = worker {
            let _ = worker.close().await;
        }
    }
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions")
            .field("open", &self.open())
            .field("max", &self.max)
            .finish_non_exhaustive()
    }
}

impl SessionManager for Sessions {
    type Error = SessionsError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        if self.full().await {
            return Err(SessionsError::Full);
        }
        let id = session_id();
        let (handle, worker) = create_local_session(id.clone(), Self::worker_config());
        if let Ok(mut records) = self.records.lock() {
            records.insert(
                id.clone(),
                Record {
                    #[cfg(feature = "otel")]
                    opened: Instant::now(),
                    seen: Instant::now(),
                    hello: None,
                    usage: Arc::new(Usage {
                        busy: AtomicUsize::new(0),
                        kept: AtomicBool::new(true),
                    }),
                    wake: Arc::default(),
                    worker: Some(handle),
                    caller: Arc::default(),
                    changes: None,
                    principal: None,
                },
            );
        }
        Ok((id, WorkerTransport::spawn(worker)))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        let worker = self
            .with_record(id, |record| {
                record.seen = Instant::now();
                record.worker.clone()
            })
            .flatten()
            .ok_or(SessionsError::NotFound)?;
        Ok(worker.initialize(message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self
            .with_record(id, |record| record.hello.is_some())
            .unwrap_or(false))
    }

    /// rmcp calls this when a client deletes a session (then [`SessionStore::delete`] ends
    /// it) and when the handshake's worker ends, which is also how a worker rests: so only a
    /// session whose handshake never finished is ended here.
    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        let unfinished = self
            .with_record(id, |record| record.hello.is_none())
            .unwrap_or(false);
        if unfinished {
            self.remove(id).await;
        }
        Ok(())
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<
        impl futures_util::Stream<Item = ServerSseMessage> + Send + Sync + 'static,
        Self::Error,
    > {
        let (worker, busy) = self.enter(id).await?;
        let delivered = async {
            let receiver = worker.establish_request_wise_channel().await?;
            worker
                .push_message(message, receiver.http_request_id)
                .await?;
            Ok::<_, SessionsError>(receiver.inner)
        }
        .await;
        match delivered {
            Ok(messages) => Ok(Held::new(messages, busy, true)),
            Err(error) => {
                self.forget(id, &error);
                Err(error)
            }
        }
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        let handshake_done = matches!(
            &message,
            rmcp::model::JsonRpcMessage::Notification(n)
                if matches!(n.notification, rmcp::model::ClientNotification::InitializedNotification(_))
        );
        let (worker, busy) = self.enter(id).await?;
        if let Err(error) = worker.push_message(message, None).await {
            let error = SessionsError::from(error);
            self.forget(id, &error);
            return Err(error);
        }
        drop(busy);
        if handshake_done {
            self.rest(id, true).await;
        }
        Ok(())
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<
        impl futures_util::Stream<Item = ServerSseMessage> + Send + Sync + 'static,
        Self::Error,
    > {
        let (worker, busy) = self.enter(id).await?;
        match worker.establish_common_channel().await {
            Ok(receiver) => Ok(Held::new(receiver.inner, busy, false)),
            Err(error) => {
                let error = SessionsError::from(error);
                self.forget(id, &error);
                Err(error)
            }
        }
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<
        impl futures_util::Stream<Item = ServerSseMessage> + Send + Sync + 'static,
        Self::Error,
    > {
        let event: EventId = last_event_id
            .parse()
            .map_err(|e| SessionsError::Worker(SessionError::EventIdParseError(e)))?;
        let (worker, busy) = self.enter(id).await?;
        // An event id with a request's part resumes a call's stream.
        let call = last_event_id.contains('/');
        match worker.resume(event).await {
            Ok(receiver) => Ok(Held::new(receiver.inner, busy, call)),
            Err(error) => {
                let error = SessionsError::from(error);
                self.forget(id, &error);
                Err(error)
            }
        }
    }
}

/// rmcp's session store, for what it tells: a finished handshake (`store`) and a session its
/// client deleted (`delete`). A session this endpoint does not hold is not restored from it.
#[async_trait::async_trait]
impl SessionStore for Sessions {
    async fn load(&self, _id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        Ok(None)
    }

    async fn store(&self, id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let hello = serde_json::to_string(&state.initialize_params)?;
        if let Ok(mut records) = self.records.lock()
            && let Some(record) = records.get_mut(id)
        {
            record.hello = Some(hello.into_boxed_str());
        }
        Ok(())
    }

    async fn delete(&self, id: &str) -> Result<(), SessionStoreError> {
        self.remove(id).await;
        Ok(())
    }
}

mod held;
#[cfg(test)]
mod tests;

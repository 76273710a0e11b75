//! What an MCP client offers a tool while it runs (`toolsmith::caller`): progress for the
//! request's `progressToken`, log messages at the level the client set, sampling and
//! elicitation, each only when the client declared the capability.

// Logging and sampling are part of MCP 2025-11-25, the revision this server serves; rmcp marks
// them deprecated for the revision after it (SEP-2577).
#![allow(deprecated)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{
    CreateMessageRequestParams, ElicitRequestParams, ElicitResult, ElicitationAction, LoggingLevel,
    LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken,
};
use serde_json::{Value, json};

use super::tasks::Detach;
use crate::caller::{
    BoxFuture, Caller, CallerError, CallerErrorKind, Elicited, LogLevel, Root, Sampled, Sampling,
};

/// How long a tool waits for the client's model or user.
const WAIT: Duration = Duration::from_secs(300);

/// One client connection: the least level of log messages it wants (unset: all), and the
/// run its calls belong to when the transport has no session id of its own (stdio, an
/// in-process transport).
#[derive(Default)]
pub(crate) struct Session {
    /// `LogLevel` as its index plus one; 0 when the client never set one.
    log_level: AtomicU8,
    /// `mcp-conn-` and 16 random hex digits, made when first asked for (a stateless HTTP
    /// request, a session of its own, never asks).
    run: std::sync::OnceLock<String>,
}

impl Session {
    /// The run of this connection's calls.
    pub(crate) fn run(&self) -> &str {
        self.run.get_or_init(|| {
            let mut run = String::with_capacity(9 + 16);
            run.push_str("mcp-conn-");
            crate::json::canonical::push_hex(&mut run, &crate::keys::random_key()[..8]);
            run
        })
    }

    pub(crate) fn set_log_level(&self, level: LoggingLevel) {
        let index = LEVELS.iter().position(|(_, l)| *l == level).unwrap_or(0);
        self.log_level
            .store(u8::try_from(index + 1).unwrap_or(1), Ordering::Relaxed);
    }

    fn wants(&self, level: LogLevel) -> bool {
        match self.log_level.load(Ordering::Relaxed) {
            0 => true,
            set => LEVELS
                .get(usize::from(set - 1))
                .is_none_or(|(least, _)| level >= *least),
        }
    }
}

/// A log message as MCP's `notifications/message` carries it.
fn log_param(
    level: LogLevel,
    message: &str,
    data: Option<&Value>,
    logger: &str,
) -> Option<LoggingMessageNotificationParam> {
    let (_, wire) = LEVELS.iter().find(|(l, _)| *l == level)?;
    let data = match data {
        Some(data) => json!({"message": message, "data": data}),
        None => Value::String(message.to_owned()),
    };
    Some(LoggingMessageNotificationParam::new(*wire, data).with_logger(logger.to_owned()))
}

/// The params of the log message a connection's client wants (its level set with
/// `logging/setLevel`; all, when it set none), as JSON.
pub(crate) fn log_params(
    session: &Session,
    level: LogLevel,
    message: &str,
    data: Option<&Value>,
    logger: &str,
) -> Option<Value> {
    if !session.wants(level) {
        return None;
    }
    serde_json::to_value(log_param(level, message, data, logger)?).ok()
}

const LEVELS: [(LogLevel, LoggingLevel); 8] = [
    (LogLevel::Debug, LoggingLevel::Debug),
    (LogLevel::Info, LoggingLevel::Info),
    (LogLevel::Notice, LoggingLevel::Notice),
    (LogLevel::Warning, LoggingLevel::Warning),
    (LogLevel::Error, LoggingLevel::Error),
    (LogLevel::Critical, LoggingLevel::Critical),
    (LogLevel::Alert, LoggingLevel::Alert),
    (LogLevel::Emergency, LoggingLevel::Emergency),
];

/// The client of one `tools/call`, as the tool's [`Caller`].
pub(crate) struct McpCaller {
    pub(crate) peer: rmcp::Peer<RoleServer>,
    pub(crate) progress_token: Option<ProgressToken>,
    pub(crate) session: Arc<Session>,
    pub(crate) logger: String,
    /// On MCP 2026-07-28, which has no server-to-client requests: the answers this call
    /// brought, and the requests for those it lacks (an input-required result).
    pub(crate) round: Option<Arc<Round>>,
    /// For a tool the server may run as a task: the task, once the call is one.
    pub(crate) detach: Option<Arc<Detach>>,
    /// The last progress sent for this request, and its total: a notification must carry
    /// more progress than the one before it, partial results included.
    pub(crate) sent: Mutex<Option<(f64, Option<f64>)>>,
}

/// The largest partial result sent, as JSON text; a larger one is announced in the
/// notification's message without its value (the call's result has it all).
const PARTIAL_MAX: usize = 64 * 1024;

impl McpCaller {
    /// The least level a request on MCP 2026-07-28 asked log messages for
    /// (`_meta["io.modelcontextprotocol/logLevel"]`); none asked, none sent.
    fn request_wants(&self, round: &Round, level: LogLevel) -> bool {
        round
            .log_level
            .is_some_and(|least| LEVELS.iter().position(|(l, _)| *l == level) >= Some(least))
    }

    /// Sends a progress notification for the request's token: `progress` raised just above
    /// the last one sent when it is not above it (the spec requires each to be larger).
    async fn notify(
        &self,
        progress: Option<f64>,
        total: Option<f64>,
        message: Option<&str>,
        meta: Option<Value>,
    ) {
        let Some(token) = &self.progress_token else {
            return;
        };
        let (progress, total) = {
            let Ok(mut sent) = self.sent.lock() else {
                return;
            };
            // A billionth above (relatively): larger, and no different on any progress bar.
            let after = |last: f64| last + (last.abs() * 1e-9).max(1e-9);
            let (progress, total) = match (progress, *sent) {
                (Some(p), Some((last, _))) if p.is_nan() || p <= last => (after(last), total),
                (Some(p), _) => (p, total),
                (None, Some((last, last_total))) => (after(last), last_total),
                (None, None) => (0.0, None),
            };
            *sent = Some((progress, total));
            (progress, total)
        };
        let mut param = json!({"progressToken": token, "progress": progress, "total": total, "message": message});
        if let Some(meta) = meta {
            param["_meta"] = meta;
        }
        match serde_json::from_value::<ProgressNotificationParam>(param) {
            Ok(param) => {
                if let Err(err) = self.peer.notify_progress(param).await {
                    tracing::debug!(%err, "a progress notification was not delivered");
                }
            }
            Err(err) => tracing::debug!(%err, "a progress notification could not be made"),
        }
    }

    /// The task this call runs as, once it does.
    fn task(&self) -> Option<&rmcp::task_manager::TaskContext> {
        self.detach.as_ref().and_then(|d| d.task())
    }

    /// The answer to `request` (`{"method", "params"}`) in a call on MCP 2026-07-28: the one
    /// the call came with under `key`; else, in a task, the one the client sends with
    /// `tasks/update`; else none yet (an `InputRequired` error: asked for with the result).
    async fn answer(
        &self,
        round: &Round,
        key: String,
        request: Value,
    ) -> Result<Value, CallerError> {
        if let Some(answer) = round.answers.get(&key) {
            return Ok(answer.clone());
        }
        let Some(task) = self.task() else {
            return Err(round.ask(key, request));
        };
        let request: rmcp::model::InputRequest =
            serde_json::from_value(request).map_err(|err| failed("take this request", err))?;
        match tokio::time::timeout(WAIT, task.request_input(key, request)).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(rmcp::task_manager::TaskExit::Cancelled)) => Err(CallerError::new(
                CallerErrorKind::Failed,
                "the task was cancelled before the client answered",
            )),
            Ok(Err(rmcp::task_manager::TaskExit::Error(err))) => Err(failed("answer", err.message)),
            Err(_) => Err(failed("answer in time", "no answer")),
        }
    }
}

/// One round of a call on MCP 2026-07-28: the answers it came with (from earlier rounds,
/// through the sealed request state, and this one's `inputResponses`), and what the tool
/// asked for that it did not find.
pub(crate) struct Round {
    pub(crate) answers: BTreeMap<String, Value>,
    pending: Mutex<BTreeMap<String, Value>>,
    asked: AtomicUsize,
    /// The client's capabilities as the request declares them (`_meta`), when it does.
    capabilities: Option<Value>,
    /// The index in `LEVELS` of the least level the request wants log messages for.
    log_level: Option<usize>,
    /// A capability the tool needed that the client did not declare.
    missing: Mutex<Option<&'static str>>,
}

impl Round {
    pub(crate) fn new(
        answers: BTreeMap<String, Value>,
        capabilities: Option<Value>,
        log_level: Option<LoggingLevel>,
    ) -> Self {
        Self {
            answers,
            pending: Mutex::default(),
            asked: AtomicUsize::new(0),
            capabilities,
            log_level: log_level.and_then(|level| LEVELS.iter().position(|(_, l)| *l == level)),
            missing: Mutex::default(),
        }
    }

    /// A capability the tool needed that the client did not declare, if any.
    pub(crate) fn missing(&self) -> Option<&'static str> {
        self.missing.lock().ok().and_then(|m| *m)
    }

    /// The key of a request: the tool's, or the next of its kind.
    fn key(&self, key: Option<&str>, kind: &str) -> String {
        let n = self.asked.fetch_add(1, Ordering::Relaxed) + 1;
        key.map_or_else(|| format!("{kind}_{n}"), str::to_owned)
    }

    /// Whether the client declared `capability` (assumed when it declared nothing); a
    /// capability it lacks is remembered, for the request's answer.
    fn offers(&self, capability: &'static str) -> bool {
        let offered = self
            .capabilities
            .as_ref()
            .is_none_or(|caps| caps.get(capability).is_some());
        if !offered && let Ok(mut missing) = self.missing.lock() {
            missing.get_or_insert(capability);
        }
        offered
    }

    fn ask(&self, key: String, request: Value) -> CallerError {
        if let Ok(mut pending) = self.pending.lock() {
            pending.insert(key, request);
        }
        CallerError::new(
            CallerErrorKind::InputRequired,
            "the client is asked for this with the result, and the tool called again",
        )
    }

    /// The requests the tool made that this round had no answer for.
    pub(crate) fn take_pending(&self) -> BTreeMap<String, Value> {
        self.pending
            .lock()
            .map(|mut p| std::mem::take(&mut *p))
            .unwrap_or_default()
    }
}

fn failed(what: &str, err: impl std::fmt::Display) -> CallerError {
    CallerError::new(
        CallerErrorKind::Failed,
        format!(
            "the client could not {what}: {}",
            crate::echo::echo(&err.to_string())
        ),
    )
}

impl Caller for McpCaller {
    fn progress<'a>(
        &'a self,
        progress: f64,
        total: Option<f64>,
        message: Option<&'a str>,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            // A task's request is answered: its progress shows in the task's status.
            if let Some(task) = self.task() {
                task.set_status_message(match (message, total) {
                    (Some(message), _) => message.to_owned(),
                    (None, Some(total)) => format!("{progress} of {total}"),
                    (None, None) => progress.to_string(),
                });
                return;
            }
            self.notify(Some(progress), total, message, None).await;
        })
    }

    /// A partial result travels as a progress notification (MCP has no message of its
    /// own for one): the value under `_meta["toolsmith/partial"]`, the progress just above
    /// the last, for the request's `progressToken`. Nothing without a token, or in a task.
    fn partial<'a>(&'a self, value: &'a Value) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if self.task().is_some() {
                return;
            }
            let text = value.to_string();
            if text.len() > PARTIAL_MAX {
                let message = format!(
                    "a partial result of {} bytes is too large to send; the result will have it",
                    text.len()
                );
                self.notify(None, None, Some(&message), None).await;
                return;
            }
            let meta = json!({ crate::caller::PARTIAL_META: value });
            self.notify(None, None, Some("partial result"), Some(meta))
                .await;
        })
    }

    fn log<'a>(
        &'a self,
        level: LogLevel,
        message: &'a str,
        data: Option<&'a Value>,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            // A task's request is answered: nothing goes to the client (`tracing` has it).
            if self.task().is_some() {
                return;
            }
            let wanted = match &self.round {
                Some(round) => self.request_wants(round, level),
                None => self.session.wants(level),
            };
            if !wanted {
                return;
            }
            let Some(param) = log_param(level, message, data, &self.logger) else {
                return;
            };
            if let Err(err) = self.peer.notify_logging_message(param).await {
                tracing::debug!(%err, "a log message was not delivered");
            }
        })
    }

    fn sample<'a>(
        &'a self,
        key: Option<&'a str>,
        request: Sampling,
    ) -> BoxFuture<'a, Result<Sampled, CallerError>> {
        Box::pin(async move {
            let messages: Vec<Value> = request
                .messages
                .iter()
                .map(
                    |(role, text)| json!({"role": role, "content": {"type": "text", "text": text}}),
                )
                .collect();
            let mut params = json!({"messages": messages, "maxTokens": request.max_tokens});
            if let Some(system) = &request.system_prompt {
                params["systemPrompt"] = Value::String(system.clone());
            }
            if let Some(round) = &self.round {
                if !round.offers("sampling") {
                    return Err(CallerError::not_supported("sampling"));
                }
                let key = round.key(key, "sampling");
                let request = json!({"method": "sampling/createMessage", "params": params});
                return self.answer(round, key, request).await.map(|a| sampled(&a));
            }
            let supported = self
                .peer
                .peer_info()
                .is_some_and(|info| info.capabilities.sampling.is_some());
            if !supported {
                return Err(CallerError::not_supported("sampling"));
            }
            let params: CreateMessageRequestParams = serde_json::from_value(params)
                .map_err(|err| failed("take this sampling request", err))?;
            let answer = tokio::time::timeout(WAIT, self.peer.create_message(params))
                .await
                .map_err(|_| failed("answer in time", "no answer"))?
                .map_err(|err| failed("sample", err))?;
            Ok(sampled(
                &serde_json::to_value(&answer).unwrap_or(Value::Null),
            ))
        })
    }

    fn roots<'a>(&'a self, key: Option<&'a str>) -> BoxFuture<'a, Result<Vec<Root>, CallerError>> {
        Box::pin(async move {
            if let Some(round) = &self.round {
                if !round.offers("roots") {
                    return Err(CallerError::not_supported("roots"));
                }
                let key = round.key(key, "roots");
                let request = json!({"method": "roots/list", "params": {}});
                return self.answer(round, key, request).await.map(|a| roots_of(&a));
            }
            let supported = self
                .peer
                .peer_info()
                .is_some_and(|info| info.capabilities.roots.is_some());
            if !supported {
                return Err(CallerError::not_supported("roots"));
            }
            let answer = tokio::time::timeout(WAIT, self.peer.list_roots())
                .await
                .map_err(|_| failed("answer in time", "no answer"))?
                .map_err(|err| failed("list its roots", err))?;
            Ok(roots_of(
                &serde_json::to_value(&answer).unwrap_or(Value::Null),
            ))
        })
    }

    fn elicit<'a>(
        &'a self,
        key: Option<&'a str>,
        message: &'a str,
        schema: &'a Value,
    ) -> BoxFuture<'a, Result<Elicited<Value>, CallerError>> {
        Box::pin(async move {
            if let Some(round) = &self.round {
                if !round.offers("elicitation") {
                    return Err(CallerError::not_supported("elicitation"));
                }
                let key = round.key(key, "elicitation");
                let request = json!({"method": "elicitation/create",
                    "params": {"message": message, "requestedSchema": schema}});
                let answer = self.answer(round, key, request).await?;
                return match serde_json::from_value::<ElicitResult>(answer) {
                    Ok(answer) => decide(answer, schema),
                    Err(err) => Err(CallerError::new(
                        CallerErrorKind::InvalidAnswer,
                        format!(
                            "the client's answer is not an elicitation result: {}",
                            crate::echo::echo(&err.to_string())
                        ),
                    )),
                };
            }
            if !self
                .peer
                .supported_elicitation_modes()
                .contains(&rmcp::service::ElicitationMode::Form)
            {
                return Err(CallerError::not_supported("elicitation"));
            }
            let params = json!({"mode": "form", "message": message, "requestedSchema": schema});
            let params: ElicitRequestParams = serde_json::from_value(params).map_err(|err| {
                CallerError::new(
                    CallerErrorKind::NotSupported,
                    format!(
                        "this form cannot be asked for by elicitation (flat objects of strings, numbers, booleans and enums only): {err}"
                    ),
                )
            })?;
            let answer: ElicitResult = self
                .peer
                .create_elicitation_with_timeout(params, Some(WAIT))
                .await
                .map_err(|err| failed("ask its user", err))?;
            decide(answer, schema)
        })
    }

    fn detach(&self) -> BoxFuture<'_, bool> {
        Box::pin(async move {
            match &self.detach {
                Some(detach) => detach.detach().await,
                None => false,
            }
        })
    }
}

/// The roots of a `ListRootsResult` (as JSON).
fn roots_of(answer: &Value) -> Vec<Root> {
    answer["roots"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|root| {
            Some(Root {
                uri: root["uri"].as_str()?.to_owned(),
                name: root["name"].as_str().map(str::to_owned),
            })
        })
        .collect()
}

/// A sampling answer (`CreateMessageResult` as JSON) read back.
fn sampled(answer: &Value) -> Sampled {
    let text = match &answer["content"] {
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        part => part["text"].as_str().unwrap_or_default().to_owned(),
    };
    let mut sampled = Sampled::new(text, answer["model"].as_str().unwrap_or_default());
    sampled.stop_reason = answer["stopReason"].as_str().map(str::to_owned);
    sampled
}

/// What the user did with a form, an accepted answer checked against it before the tool
/// sees it.
fn decide(answer: ElicitResult, schema: &Value) -> Result<Elicited<Value>, CallerError> {
    match answer.action {
        ElicitationAction::Accept => {
            let content = answer.content.unwrap_or(Value::Object(Default::default()));
            let validator =
                crate::schema::compile(schema).map_err(|err| failed("check the answer", err))?;
            let problems: Vec<String> = validator
                .iter_errors(&content)
                .take(3)
                .map(|e| format!("{}: {e}", e.instance_path()))
                .collect();
            if !problems.is_empty() {
                return Err(CallerError::new(
                    CallerErrorKind::InvalidAnswer,
                    format!(
                        "the user's answer does not fit the form: {}",
                        crate::echo::echo(&problems.join("; "))
                    ),
                ));
            }
            Ok(Elicited::Accepted(content))
        }
        ElicitationAction::Decline => Ok(Elicited::Declined),
        _ => Ok(Elicited::Cancelled),
    }
}

//! The call path: a `tools/call` in its context, run at once, as a task, or as a round that asks
//! the client for input.

use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::answer::{answered, complete, refused_result};
use super::elicit::Elicit;
use super::request::{McpRequest, at_least_2026_07_28};
use super::rounds::{MAX_USED_STATES, STATE_TTL, SealedState, state_binding};
use super::server::{Config, McpServer, RUN_META, RunScope};
use super::tasks::TaskSupport;
use super::{caller, tasks};
use crate::context::ToolContext;
use crate::policy::PromptForApproval;
use crate::provider::Dialect;
use crate::toolbox::Spelling;

impl McpServer {
    /// A `tools/call`: the tool run in its context, as a task, or as a round of MCP
    /// 2026-07-28 that asks the client for input.
    pub(super) async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let request_info = McpRequest::new(&context, Some(&request.name));
        self.run_of(&request_info)?;
        let modern = at_least_2026_07_28(&context);
        // A task tool runs as a task for a client that takes tasks (declared for the session
        // or in this request's `_meta`), on MCP 2026-07-28.
        let support = self.config.tasks.tools.get(&*request.name).copied();
        let takes_tasks = support.is_some()
            && modern
            && context
                .client_capabilities()
                .is_some_and(|caps| caps.supports_tasks());
        if support == Some(TaskSupport::Required) && !takes_tasks {
            return Err(ErrorData::missing_required_client_capability(
                rmcp::model::ClientCapabilities::builder()
                    .enable_tasks()
                    .build(),
            ));
        }
        let as_task = support.filter(|_| takes_tasks);
        // A task outlives its request: it is cancelled by `tasks/cancel`, not by the request.
        let cancellation = match as_task {
            Some(_) => CancellationToken::new(),
            None => context.ct.clone(),
        };
        let ctx = self.context(&request_info, cancellation.clone(), Some(&context.peer));
        let toolbox = &self.config.toolbox;
        let name = &*request.name;
        // The toolbox's door: a name no tool has, or a tool not offered in this context, is
        // a protocol error for MCP; a call beyond the calls at once is told to retry, and one
        // its grant does not allow is told which scopes it needs.
        let mut admitted = match toolbox
            .admit(name, Spelling::Provider(Dialect::Mcp), &ctx, None)
            .await
        {
            Ok(admitted) => admitted,
            Err(refused) if answered(&refused) => {
                return Ok(CallToolResponse::Complete(refused_result(refused)));
            }
            Err(_) => return Err(self.unknown_tool(name, &ctx).await),
        };
        let tool = admitted.tool();
        // MCP 2026-07-28 has no requests from server to client: what a tool asks of the
        // client goes out with an input-required result, and comes back with the next call.
        // What a round's state is bound to: the caller, the tool and the call's arguments
        // (only rounds of MCP 2026-07-28 have a state).
        let arguments = Value::Object(request.arguments.clone().unwrap_or_default());
        let bound = if modern {
            state_binding(ctx.principal(), name, tool.definition(), &arguments)
        } else {
            String::new()
        };
        let round = if modern {
            Some(self.round_of(&request, &request_info, &context, name, &bound)?)
        } else {
            None
        };
        let detach = as_task.map(|_| tasks::Detach::new());
        let ctx = ctx.with_caller(Arc::new(caller::McpCaller {
            peer: context.peer.clone(),
            progress_token: context.meta.get_progress_token(),
            session: Arc::clone(&self.session),
            logger: name.to_owned(),
            round: round.clone(),
            detach: detach.as_ref().map(|(detach, _)| Arc::clone(detach)),
            sent: std::sync::Mutex::new(None),
        }));
        // The tasks kept are bounded: past the bound, a task call is told when to retry.
        if as_task.is_some()
            && let Err(wait) = self.config.tasks.admit()
        {
            let outcome = crate::outcome::ToolOutcome::Error(
                crate::error::ToolError::new(
                    crate::error::ErrorCode::RateLimited,
                    "The server keeps as many tasks as it can at once. Retry after the time given.",
                )
                .retry_after(wait)
                .with_trace_id(ctx.trace_id()),
            );
            return Ok(CallToolResponse::Complete(complete(
                name,
                tool.definition(),
                &outcome,
            )));
        }
        let outcome = match (as_task, detach) {
            (Some(support), Some((detach, wish))) => {
                // The task holds the call's place among the calls at once until it ends.
                let slot = admitted.take_slot();
                let call = TaskCall {
                    config: Arc::clone(&self.config),
                    tool: Arc::clone(tool),
                    index: admitted.index(),
                    arguments,
                    ctx: ctx.clone(),
                    cancellation,
                    detach,
                    slot,
                };
                match call.start(support, wish, &context.ct).await {
                    Ok(task) => {
                        // Bound and shared before its id leaves the server.
                        self.config.tasks.bind(&task.task_id, ctx.principal());
                        let store = Arc::clone(toolbox.task_store());
                        self.config
                            .tasks
                            .share(&task.task_id, ctx.principal(), store)
                            .await;
                        return Ok(CallToolResponse::Task(rmcp::model::CreateTaskResult::new(
                            task,
                        )));
                    }
                    Err(outcome) => outcome,
                }
            }
            _ => admitted.call(arguments, &ctx).await,
        };
        if let Some(round) = round
            && let Some(asked) = self.round_answer(&round, &outcome, name, &bound)?
        {
            return Ok(asked);
        }
        Ok(CallToolResponse::Complete(complete(
            name,
            tool.definition(),
            &outcome,
        )))
    }

    /// The round of an MCP 2026-07-28 call: the answers its sealed state carries (only to
    /// what the server asked), the client's capabilities and its log level. A state that does
    /// not open for this caller, tool and arguments (`bound`) is refused.
    fn round_of(
        &self,
        request: &CallToolRequestParams,
        request_info: &McpRequest,
        context: &RequestContext<RoleServer>,
        name: &str,
        bound: &str,
    ) -> Result<Arc<caller::Round>, ErrorData> {
        let answers = match &request.request_state {
            Some(sealed) => match self.open_state(sealed, bound) {
                Some(state) if state.tool == name => {
                    // Only answers to what the server asked are taken.
                    let responses = request.input_responses.clone().unwrap_or_default();
                    let mut answers = state.answers;
                    answers.extend(
                        responses
                            .into_iter()
                            .filter(|(key, _)| state.asked.contains(key)),
                    );
                    answers
                }
                _ => {
                    return Err(ErrorData::invalid_params(
                        "the requestState is not valid for this call (changed, expired, already used, or issued for another caller, tool or arguments): call again without it to start over",
                        None,
                    ));
                }
            },
            // Answers without the state of the round that asked are not taken: the call
            // starts over, and the tool asks again (a new input-required result, as the
            // MCP conformance suite expects of a retry with missing or wrong answers).
            None => std::collections::BTreeMap::new(),
        };
        let capabilities = request_info
            .meta()
            .get("io.modelcontextprotocol/clientCapabilities")
            .cloned();
        #[allow(deprecated)] // the per-request log level of MCP 2026-07-28
        let log_level = context.meta.log_level();
        Ok(Arc::new(caller::Round::new(
            answers,
            capabilities,
            log_level,
        )))
    }

    /// What ends a round of MCP 2026-07-28 instead of the tool's result: the refusal of a
    /// request that lacks a capability the tool needed, or an input-required result asking
    /// what the tool asked, with the round's sealed state. `None` when the tool finished.
    fn round_answer(
        &self,
        round: &caller::Round,
        outcome: &crate::outcome::ToolOutcome,
        name: &str,
        bound: &str,
    ) -> Result<Option<CallToolResponse>, ErrorData> {
        let pending = round.take_pending();
        // A tool that failed for want of a capability the request did not declare: the
        // request is refused as MCP 2026-07-28 says. One that went on without it is not.
        if let Some(capability) = round.missing()
            && pending.is_empty()
            && !outcome.is_success()
        {
            return Err(ErrorData::new(
                rmcp::model::ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
                format!(
                    "the tool needs the client capability `{capability}`, which this request does not declare"
                ),
                Some(json!({"requiredCapabilities": {capability: {}}})),
            ));
        }
        if !pending.is_empty() {
            let asked: Vec<String> = pending.keys().cloned().collect();
            let requests: rmcp::model::InputRequests =
                serde_json::from_value(Value::Object(pending.into_iter().collect()))
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
            let state = SealedState {
                tool: name.to_owned(),
                asked,
                answers: round.answers.clone(),
                nonce: crate::keys::new_id(),
            };
            let options = rmcp::model::SealOptions::new()
                .associated_data(bound.as_bytes())
                .ttl(STATE_TTL);
            let sealed = self
                .state_codec
                .seal_json_with(&state, &options)
                .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
            return Ok(Some(CallToolResponse::InputRequired(
                rmcp::model::InputRequiredResult::new(Some(requests), Some(sealed)),
            )));
        }
        Ok(None)
    }

    /// The context a request's tool runs in.
    pub(super) fn context(
        &self,
        request: &McpRequest,
        cancellation: CancellationToken,
        peer: Option<&rmcp::Peer<RoleServer>>,
    ) -> ToolContext {
        let mut ctx = ToolContext::new()
            .with_call_id(request.id.as_str())
            .with_cancellation(cancellation);
        if let Some(peer) = peer
            && peer
                .supported_elicitation_modes()
                .contains(&rmcp::service::ElicitationMode::Form)
        {
            ctx = ctx.with_extension(PromptForApproval::new(Elicit { peer: peer.clone() }));
        }
        if let Some(trace_id) = request.trace_id() {
            ctx = ctx.with_trace_id(trace_id);
        }
        if let Ok(Some(run)) = self.run_of(request) {
            ctx = ctx.with_run_id(run);
        }
        if let Some(hook) = &self.config.context {
            ctx = hook(ctx, request);
        }
        // The verified token's grant comes last: a hook adds to the context, and cannot name
        // another principal or widen the scopes.
        if let Some(grant) = &request.grant {
            ctx = ctx.with_grant(grant.clone());
        }
        // A tool call's span is the server's `tools/call` span: it carries the request's MCP
        // attributes (only read when a subscriber wants spans).
        if request.tool.is_some() && tracing::level_enabled!(tracing::Level::INFO) {
            ctx = ctx.with_extension(request.rpc("tools/call"));
        }
        ctx.with_extension(request.clone())
    }

    /// A round's state, opened: authentic, bound to `bound`, not expired, and not used
    /// before (each state answers one round).
    pub(super) fn open_state(&self, sealed: &str, bound: &str) -> Option<SealedState> {
        let state: SealedState = self
            .state_codec
            .open_json_with(sealed, bound.as_bytes())
            .ok()?;
        let mut used = self.config.used_states.lock().ok()?;
        let now = std::time::Instant::now();
        used.retain(|_, until| *until > now);
        if used.len() >= MAX_USED_STATES {
            return None;
        }
        match used.entry(state.nonce.clone()) {
            std::collections::hash_map::Entry::Occupied(_) => None,
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(now + STATE_TTL);
                Some(state)
            }
        }
    }

    /// The principal its headers name, as the server's context hook names it (`None` without
    /// a hook).
    pub(super) fn principal_of_headers(&self, headers: &http::HeaderMap) -> Option<String> {
        self.config.context.as_ref()?;
        let request = McpRequest::from_headers(headers);
        self.context(&request, CancellationToken::new(), None)
            .principal()
            .map(str::to_owned)
    }

    /// The principal of a request, as the server's context hook names it.
    pub(super) fn principal_of(&self, context: &RequestContext<RoleServer>) -> Option<String> {
        let request = McpRequest::new(context, None);
        self.context(&request, CancellationToken::new(), None)
            .principal()
            .map(str::to_owned)
    }

    /// Refuses a task request for a task that is another principal's, as if it did not exist.
    pub(super) fn task_of_caller(
        &self,
        id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.config
            .tasks
            .check(id, self.principal_of(context).as_deref())
    }

    /// The run a request belongs to ([`RunScope`]); `Err` for a run named in `_meta` that is
    /// not an id.
    pub(super) fn run_of(&self, request: &McpRequest) -> Result<Option<String>, ErrorData> {
        if self.config.runs == RunScope::None {
            return Ok(None);
        }
        let named = match request.meta().get(RUN_META) {
            None | Some(Value::Null) => None,
            Some(Value::String(run))
                if (16..=128).contains(&run.len()) && run.bytes().all(|b| b.is_ascii_graphic()) =>
            {
                Some(run.as_str())
            }
            Some(_) => {
                return Err(ErrorData::invalid_params(
                    format!(
                        "`_meta.{RUN_META}` must be a string of 16 to 128 printable ASCII characters (a random id of the run); leave it out for the session's run"
                    ),
                    None,
                ));
            }
        };
        // The session id is a credential on HTTP: the run shows only a digest of it.
        let session = match &request.headers {
            Some(_) => request.header("mcp-session-id").map(|id| {
                let mut run = String::with_capacity(12 + 16);
                run.push_str("mcp-session-");
                let digest = crate::keys::key_from_secret(id.as_bytes());
                crate::json::canonical::push_hex(&mut run, &digest[..8]);
                run
            }),
            None => Some(self.session.run().to_owned()),
        };
        Ok(match (session, named) {
            (Some(session), Some(named)) => Some(format!("{session}/{named}")),
            (Some(session), None) => Some(session),
            (None, named) => named.map(str::to_owned),
        })
    }

    /// The `-32602` answer to a call of a tool that is not offered in `ctx`.
    pub(super) async fn unknown_tool(&self, name: &str, ctx: &ToolContext) -> ErrorData {
        let available: Vec<&str> = self
            .config
            .toolbox
            .definitions_for(ctx)
            .await
            .into_iter()
            .map(|def| def.name())
            .collect();
        ErrorData::invalid_params(
            format!("Unknown tool: {}", crate::echo::echo(name)),
            Some(json!({ "available": available })),
        )
    }
}

/// A call of a task tool from a client that takes tasks, before it is started.
pub(super) struct TaskCall {
    pub(super) config: Arc<Config>,
    pub(super) tool: Arc<dyn crate::tool::Tool>,
    /// The tool's place in the toolbox, as the door admitted it.
    pub(super) index: usize,
    pub(super) arguments: Value,
    pub(super) ctx: ToolContext,
    pub(super) cancellation: CancellationToken,
    pub(super) detach: Arc<tasks::Detach>,
    pub(super) slot: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl TaskCall {
    /// Starts the call: as a task at once, or (`OnDetach`) in the request until the tool
    /// detaches (a task), ends (its outcome) or the request is cancelled.
    pub(super) async fn start(
        self,
        support: TaskSupport,
        wish: tokio::sync::oneshot::Receiver<()>,
        request: &CancellationToken,
    ) -> Result<rmcp::model::Task, crate::outcome::ToolOutcome> {
        let Self {
            config,
            tool,
            index,
            arguments,
            ctx,
            cancellation,
            detach,
            slot,
        } = self;
        let manager = config.tasks.manager.clone();
        let options = config.tasks.options();
        let stop = cancellation.clone();
        let run = {
            let config = Arc::clone(&config);
            // Dropped (the request ends, the task expires), the handle stops the call.
            move || {
                tokio_util::task::AbortOnDropHandle::new(tokio::spawn(async move {
                    config
                        .toolbox
                        .call_admitted(index, arguments.into(), &ctx)
                        .await
                }))
            }
        };
        let tasks = config.tasks.clone();
        let task =
            move |run, task: rmcp::task_manager::TaskContext| -> rmcp::task_manager::TaskFuture {
                detach.became(task.clone());
                let kept = tasks.keep();
                Box::pin(async move {
                    let result = finish_task(tool, run, task, cancellation, slot).await;
                    let bytes = match &result {
                        Ok(result) => serde_json::to_string(result).map_or(0, |t| t.len()),
                        Err(_) => 0,
                    };
                    kept.finished(bytes);
                    result
                })
            };
        if support != TaskSupport::OnDetach {
            return Ok(manager.spawn(options, |context| task(run(), context)));
        }
        let mut running = run();
        let detached = std::pin::pin!(async move { wish.await.is_ok() });
        let ended = std::pin::pin!(request.cancelled());
        let either = futures_util::future::select(detached, ended);
        match futures_util::future::select(&mut running, either).await {
            futures_util::future::Either::Left((joined, _)) => Err(joined_outcome(joined)),
            futures_util::future::Either::Right((
                futures_util::future::Either::Left((true, _)),
                _,
            )) => Ok(manager.spawn(options, |context| task(running, context))),
            futures_util::future::Either::Right(_) => {
                // The request was cancelled (the tool is told, as any call's tool is), or the
                // tool can no longer ask: wait for its end.
                if request.is_cancelled() {
                    stop.cancel();
                }
                Err(joined_outcome(running.await))
            }
        }
    }
}

/// A spawned call's outcome; a call that did not end (aborted) as an internal error.
pub(super) fn joined_outcome(
    joined: Result<crate::outcome::ToolOutcome, tokio::task::JoinError>,
) -> crate::outcome::ToolOutcome {
    joined.unwrap_or_else(|err| {
        crate::outcome::ToolOutcome::Error(crate::error::ToolError::internal(format_args!(
            "the call stopped: {err}"
        )))
    })
}

/// A task's end: the tool's outcome as a `tools/call` result (an error the tool returns is a
/// completed task whose result is an error); a fault of the server (the tool panicked, or is
/// no longer offered) as a failed task with a JSON-RPC error; a cancellation as a cancelled
/// task once the tool has wound down (or its grace ran out).
pub(super) async fn finish_task(
    tool: Arc<dyn crate::tool::Tool>,
    mut running: tokio_util::task::AbortOnDropHandle<crate::outcome::ToolOutcome>,
    task: rmcp::task_manager::TaskContext,
    cancellation: CancellationToken,
    slot: Option<tokio::sync::OwnedSemaphorePermit>,
) -> Result<CallToolResult, rmcp::task_manager::TaskExit> {
    let _slot = slot;
    let cancelled = std::pin::pin!(task.cancelled());
    let joined = match futures_util::future::select(&mut running, cancelled).await {
        futures_util::future::Either::Left((joined, _)) => joined,
        futures_util::future::Either::Right(((), _)) => {
            cancellation.cancel();
            match tokio::time::timeout(tasks::CANCEL_GRACE, &mut running).await {
                Ok(Ok(outcome)) if outcome.is_success() => Ok(outcome),
                // Dropping `running` stops the tool.
                _ => return Err(rmcp::task_manager::TaskExit::Cancelled),
            }
        }
    };
    let outcome = joined_outcome(joined);
    if let Some(err) = outcome.error()
        && err.is_panic()
    {
        let mut data = json!({"code": err.code().as_str()});
        if let Some(trace_id) = err.trace_id() {
            data["traceId"] = Value::String(trace_id.to_owned());
        }
        return Err(rmcp::task_manager::TaskExit::Error(
            ErrorData::internal_error(err.message().to_owned(), Some(data)),
        ));
    }
    let definition = tool.definition();
    Ok(complete(definition.name(), definition, &outcome))
}

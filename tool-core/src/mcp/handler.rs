//! The server as an rmcp `ServerHandler`: what each request of the protocol gets.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CustomRequest, CustomResult, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig, Tool as McpTool,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::request::{McpRequest, at_least_2026_07_28};
use super::server::McpServer;
use super::tasks;
use super::traced::Traced;

/// The client requests of MCP 2025-11-25 this server knows. Not `tasks/result` and
/// `tasks/list`: tasks are served as the tasks extension of 2026-07-28 has them, which has
/// neither (a client asking for them is told the method is not found).
pub(super) const PROTOCOL_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "tasks/get",
    "tasks/cancel",
];

/// Requests of 2025-11-25 that 2026-07-28 removed (stateless sessions, subscriptions and
/// log levels by other means).
pub(super) const REMOVED_IN_2026_07_28: &[&str] = &[
    "initialize",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

impl ServerHandler for McpServer {
    #[allow(deprecated)] // MCP 2025-11-25 logging; rmcp deprecates it for the next revision
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_resources()
            .enable_logging()
            .build();
        if let Some(delegate) = &self.config.delegate {
            let theirs = delegate.capabilities();
            if theirs.resources.is_some() {
                capabilities.resources = theirs.resources;
            }
            capabilities.prompts = theirs.prompts;
            capabilities.completions = theirs.completions;
        }
        if !self.config.tasks.tools.is_empty() {
            capabilities
                .extensions
                .get_or_insert_with(Default::default)
                .insert(
                    rmcp::model::TASKS_EXTENSION_ID.to_owned(),
                    Default::default(),
                );
        }
        let mut info = ServerConfig::new(capabilities)
            .with_server_info(self.config.implementation.clone())
            .with_protocol_version(ProtocolVersion::V_2025_11_25);
        if let Some(instructions) = &self.config.instructions {
            info = info.with_instructions(instructions.clone());
        }
        info
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        // Each client gets the revision it asks for, of these two (rmcp negotiates).
        std::borrow::Cow::Owned(vec![
            ProtocolVersion::V_2025_11_25,
            ProtocolVersion::V_2026_07_28,
        ])
    }

    /// rmcp hands over requests it could not parse as custom requests; one with a method of
    /// the protocol has malformed params, which MCP answers with `-32602`.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        // A malformed request of the protocol is traced as its method; another method is none
        // of MCP's, and is not.
        let method = PROTOCOL_METHODS
            .iter()
            .find(|m| **m == request.method)
            .copied();
        let traced = Traced::maybe(&context, method, None);
        traced
            .run(async move {
                let method = request.method.as_str();
                // Methods MCP 2026-07-28 removed are unknown to a client that negotiated it.
                if at_least_2026_07_28(&context) && REMOVED_IN_2026_07_28.contains(&method) {
                    return Err(not_offered(method));
                }
                let params = request.params.unwrap_or(Value::Null);
                let problem = match method {
                    "tools/call" if params.is_null() => Some(
                        "the params are missing; send {\"name\": string, \"arguments\": object}"
                            .to_owned(),
                    ),
                    "tools/call" => serde_json::from_value::<CallToolRequestParams>(params)
                        .err()
                        .map(|e| format!("{e}; send {{\"name\": string, \"arguments\": object}}")),
                    "tools/list" => {
                        serde_json::from_value::<Option<PaginatedRequestParams>>(params)
                            .err()
                            .map(|e| format!("{e}; send {{\"cursor\": string}} or no params"))
                    }
                    _ if PROTOCOL_METHODS.contains(&method) => {
                        Some("the params do not match".to_owned())
                    }
                    _ => None,
                };
                Err(match problem {
                    Some(problem) => ErrorData::invalid_params(
                        format!("malformed {method} request: {problem}"),
                        None,
                    ),
                    None => ErrorData::new(
                        rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                        format!("method not found: {method}"),
                        None,
                    ),
                })
            })
            .await
    }

    /// `logging/setLevel`: the least level of the log messages tools send this client.
    #[allow(deprecated)] // MCP 2025-11-25 logging; rmcp deprecates it for the next revision
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let traced = Traced::new(&context, "logging/setLevel", None);
        traced
            .run(async move {
                self.session.set_log_level(request.level);
                Ok(())
            })
            .await
    }

    /// MCP 2026-07-28 subscriptions: the notifications a client asks for, of those the server
    /// advertises (rmcp intersects them).
    fn accepted_subscription_filter(
        &self,
        requested: &rmcp::model::SubscriptionFilter,
    ) -> Option<rmcp::model::SubscriptionFilter> {
        Some(requested.clone())
    }

    /// One `subscriptions/listen` stream: `tools/list_changed` whenever the toolbox's enabled
    /// tools change, until the client ends it.
    async fn listen(&self, context: rmcp::service::SubscriptionContext) -> Result<(), ErrorData> {
        let mut changes = self.config.toolbox.subscribe_changes();
        loop {
            let changed = std::pin::pin!(changes.changed());
            let cancelled = std::pin::pin!(context.cancelled());
            match futures_util::future::select(changed, cancelled).await {
                futures_util::future::Either::Left((Ok(()), _)) => {
                    if context.accepted().tools_list_changed == Some(true)
                        && let Err(error) = context.sink().notify_tool_list_changed().await
                    {
                        tracing::debug!(%error, "tools/list_changed not delivered");
                    }
                }
                futures_util::future::Either::Left((Err(_), _)) => {
                    context.cancelled().await;
                    return Ok(());
                }
                futures_util::future::Either::Right(_) => return Ok(()),
            }
        }
    }

    async fn initialize(
        &self,
        request: rmcp::model::InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::InitializeResult, ErrorData> {
        super::traced::initialize(self, request, context).await
    }

    async fn ping(&self, context: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        Traced::new(&context, "ping", None)
            .run(async { Ok(()) })
            .await
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.watch(context.peer);
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let traced = Traced::new(&context, "tools/list", None);
        traced
            .run(async move {
                #[cfg_attr(not(feature = "mcp-auth"), allow(unused_mut))]
                let mut request_info = McpRequest::new(&context, None);
                // A caller is shown the tools its scopes do not allow only when the server says so:
                // then the listing is made for its principal without its scopes.
                #[cfg(feature = "mcp-auth")]
                let unscoped = match &self.config.gate {
                    Some(gate)
                        if gate.authorization.listing() == super::auth::ScopeListing::Show =>
                    {
                        request_info.grant.take()
                    }
                    _ => None,
                };
                let ctx = self.context(&request_info, context.ct.clone(), None);
                #[cfg(feature = "mcp-auth")]
                let ctx = match unscoped {
                    Some(grant) => ctx.with_principal(grant.subject()),
                    None => ctx,
                };
                let start = match request.and_then(|r| r.cursor) {
                    None => 0,
                    Some(cursor) => cursor.parse::<usize>().map_err(|_| {
                        ErrorData::invalid_params(
                            format!(
                                "invalid cursor {cursor:?}: pass back a nextCursor from tools/list"
                            ),
                            None,
                        )
                    })?,
                };
                // Offered here, re-described where the toolbox's prepare step says so.
                let enabled = self.config.toolbox.offered_for(&ctx).await;
                // Cursors are offsets this server handed out: within the list, and never its end.
                if start > 0 && start >= enabled.len() {
                    return Err(ErrorData::invalid_params(
                        format!(
                            "invalid cursor \"{start}\": pass back a nextCursor from tools/list"
                        ),
                        None,
                    ));
                }
                let end = start
                    .saturating_add(self.config.page_size)
                    .min(enabled.len());
                let tools = enabled[start..end]
                    .iter()
                    .filter_map(|def| {
                        let mut tool = self.config.tools.get(def.name())?.clone();
                        if tool.description.as_deref() != Some(def.description()) {
                            tool.description = Some(def.description().to_owned().into());
                        }
                        Some(tool)
                    })
                    .collect();
                let mut result = ListToolsResult::with_all_items(tools);
                if end < enabled.len() {
                    result.next_cursor = Some(end.to_string());
                }
                Ok(result)
            })
            .await
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, ErrorData> {
        let traced = Traced::new(&context, "resources/list", None);
        traced
            .run(async move {
                match &self.config.delegate {
                    Some(delegate) => delegate.list_resources(request, context).await,
                    None => Ok(rmcp::model::ListResourcesResult::default()),
                }
            })
            .await
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourceTemplatesResult, ErrorData> {
        let traced = Traced::new(&context, "resources/templates/list", None);
        traced
            .run(async move {
                match &self.config.delegate {
                    Some(delegate) => delegate.list_resource_templates(request, context).await,
                    None => Ok(rmcp::model::ListResourceTemplatesResult::default()),
                }
            })
            .await
    }

    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let traced = Traced::new(&context, "resources/subscribe", None);
        traced
            .run(async move {
                match &self.config.delegate {
                    Some(delegate) => delegate.subscribe(request, context).await,
                    None => Err(not_offered("resources/subscribe")),
                }
            })
            .await
    }

    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let traced = Traced::new(&context, "resources/unsubscribe", None);
        traced
            .run(async move {
                match &self.config.delegate {
                    Some(delegate) => delegate.unsubscribe(request, context).await,
                    None => Err(not_offered("resources/unsubscribe")),
                }
            })
            .await
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, ErrorData> {
        let traced = Traced::new(&context, "prompts/list", None);
        traced
            .run(async move {
                match &self.config.delegate {
                    Some(delegate) => delegate.list_prompts(request, context).await,
                    None => Ok(rmcp::model::ListPromptsResult::default()),
                }
            })
            .await
    }

    async fn get_prompt(
        &self,
        request: rmcp::model::GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, ErrorData> {
        let traced = Traced::new(&context, "prompts/get", Some(request.name.as_str()));
        traced
            .run(async move {
                match &self.config.delegate {
                    Some(delegate) => delegate.get_prompt(request, context).await,
                    None => Err(ErrorData::invalid_params(
                        "this server offers no prompts",
                        None,
                    )),
                }
            })
            .await
    }

    async fn complete(
        &self,
        request: rmcp::model::CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CompleteResult, ErrorData> {
        let traced = Traced::new(&context, "completion/complete", None);
        traced
            .run(async move {
                match &self.config.delegate {
                    Some(delegate) => delegate.complete(request, context).await,
                    None => Ok(rmcp::model::CompleteResult::default()),
                }
            })
            .await
    }

    /// Serves the results too large to give inline (`toolsmith://results/<id>`, linked from
    /// the tool result), while the result store keeps them.
    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, ErrorData> {
        let traced = Traced::new(&context, "resources/read", None);
        traced
            .run(async move {
            let meta = request.meta;
            let uri = request.uri;
            let missing = || {
                ErrorData::resource_not_found(
                    format!(
                        "no resource {}: stored results are kept for a limited time; call the tool again",
                        crate::echo::echo(&uri)
                    ),
                    None,
                )
            };
            if !uri.starts_with(crate::output::RESULT_URI_PREFIX) {
                return match &self.config.delegate {
                    Some(delegate) => {
                        let mut request = rmcp::model::ReadResourceRequestParams::new(uri.clone());
                        request.meta = meta;
                        delegate.read_resource(request, context).await
                    }
                    None => Err(missing()),
                };
            }
            let reader = self.context(
                &McpRequest::new(&context, None),
                CancellationToken::new(),
                None,
            );
            match self.config.toolbox.stored_result_for(&uri, &reader).await {
                Ok(Some(text)) => Ok(rmcp::model::ReadResourceResult::new(vec![
                    rmcp::model::ResourceContents::TextResourceContents {
                        uri: uri.clone(),
                        mime_type: Some("application/json".into()),
                        text,
                        meta: None,
                    },
                ])
                .into()),
                Ok(None) => Err(missing()),
                Err(err) => {
                    tracing::warn!(%err, "a stored result could not be read");
                    Err(ErrorData::internal_error(
                        "the result store is unavailable; try again later",
                        None,
                    ))
                }
            }
            })
            .await
    }

    /// The tool `name` as listed: rmcp checks a call's `Mcp-Param-*` headers against it.
    fn get_tool(&self, name: &str) -> Option<McpTool> {
        self.config.tools.get(name).cloned()
    }

    /// `tasks/get`: a task's status, and its result once it has one; from the fleet's task
    /// store when another replica runs it.
    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, ErrorData> {
        let traced = Traced::new(&context, "tasks/get", None);
        traced
            .run(async move {
                self.task_of_caller(&request.task_id, &context)?;
                let task = match self.config.tasks.manager.get_task(&request.task_id) {
                    Ok(task) => task,
                    Err(_) => {
                        let principal = self.principal_of(&context);
                        let store = self.config.toolbox.task_store();
                        tasks::shared_task(&**store, &request.task_id, principal.as_deref()).await?
                    }
                };
                Ok(rmcp::model::GetTaskResult::new(task))
            })
            .await
    }

    /// `tasks/update`: the client's answers to what a task's tool asked.
    async fn update_task(
        &self,
        request: rmcp::model::UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let traced = Traced::new(&context, "tasks/update", None);
        traced
            .run(async move {
                self.task_of_caller(&request.task_id, &context)?;
                if self.config.tasks.manager.get_task(&request.task_id).is_ok() {
                    return self
                        .config
                        .tasks
                        .manager
                        .update_task(&request.task_id, request.input_responses);
                }
                self.message_shared_task(&request.task_id, &context, Some(request.input_responses))
                    .await
            })
            .await
    }

    /// `tasks/cancel`: asks a task to stop (it ends `cancelled` unless it finished first).
    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let traced = Traced::new(&context, "tasks/cancel", None);
        traced
            .run(async move {
                self.task_of_caller(&request.task_id, &context)?;
                if self.config.tasks.manager.get_task(&request.task_id).is_ok() {
                    return self.config.tasks.manager.cancel_task(&request.task_id);
                }
                self.message_shared_task(&request.task_id, &context, None)
                    .await
            })
            .await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // Boxed: rmcp moves each request's future into a task of its own, and the call's
        // future (the toolbox's policy, the tool, the answer) is tens of kilobytes; a box
        // makes that move a pointer's.
        let measured = super::traced::Measured::new(&context, &request.name);
        measured.run(Box::pin(self.call(request, context))).await
    }
}

impl McpServer {
    /// Leaves `tasks/update` (`answers`) or `tasks/cancel` (`None`) for the replica that runs
    /// the task `id`.
    async fn message_shared_task(
        &self,
        id: &str,
        context: &RequestContext<RoleServer>,
        answers: Option<rmcp::model::InputResponses>,
    ) -> Result<(), ErrorData> {
        let principal = self.principal_of(context);
        let store = self.config.toolbox.task_store();
        let ttl = self.config.tasks.ttl + self.config.tasks.ttl;
        tasks::message_task(&**store, id, principal.as_deref(), answers, ttl).await
    }

    /// Remembers a client for list-changed notifications, and starts the task that sends
    /// them on the first client.
    fn watch(&self, peer: rmcp::Peer<RoleServer>) {
        if let Ok(mut peers) = self.peers.peers.lock() {
            peers.retain(|p| !p.is_transport_closed());
            peers.push(peer);
        }
        self.peers.watching.get_or_init(|| {
            let mut changes = self.config.toolbox.subscribe_changes();
            changes.mark_unchanged();
            let peers = Arc::downgrade(&self.peers);
            tokio::spawn(async move {
                // Ends when the toolbox (the sender) or the server (the peers) is gone.
                while changes.changed().await.is_ok() {
                    let Some(peers) = peers.upgrade() else { break };
                    let live: Vec<_> = match peers.peers.lock() {
                        Ok(mut list) => {
                            list.retain(|p| !p.is_transport_closed());
                            list.clone()
                        }
                        Err(_) => break,
                    };
                    for peer in live {
                        if let Err(error) = peer.notify_tool_list_changed().await {
                            tracing::debug!(%error, "tools/list_changed not delivered");
                        }
                    }
                }
            });
        });
    }
}

/// The answer to a request for a method the server does not offer.
pub(super) fn not_offered(method: &str) -> ErrorData {
    ErrorData::new(
        rmcp::model::ErrorCode::METHOD_NOT_FOUND,
        format!("method not found: {method}"),
        None,
    )
}

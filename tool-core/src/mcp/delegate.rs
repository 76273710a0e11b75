//! Resources, prompts and completions from a handler written with rmcp's own API, served from
//! the same endpoint as the toolbox's tools (`McpServer::with_handler`).

use std::future::Future;
use std::pin::Pin;

use rmcp::model::{
    CompleteRequestParams, CompleteResult, ErrorData, GetPromptRequestParams, GetPromptResponse,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, SubscribeRequestParams,
    UnsubscribeRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler};

type Answer<'a, T> = Pin<Box<dyn Future<Output = Result<T, ErrorData>> + Send + 'a>>;

/// The part of an [`rmcp::ServerHandler`] the toolbox server hands requests to: every method
/// but the tools', boxed so that the server can hold any handler.
pub(crate) trait Delegate: Send + Sync + 'static {
    fn capabilities(&self) -> ServerCapabilities;
    fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ListResourcesResult>;
    fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ListResourceTemplatesResult>;
    fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ReadResourceResponse>;
    fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ()>;
    fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ()>;
    fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ListPromptsResult>;
    fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, GetPromptResponse>;
    fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, CompleteResult>;
}

impl<H: ServerHandler + 'static> Delegate for H {
    fn capabilities(&self) -> ServerCapabilities {
        self.get_info().capabilities
    }
    fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ListResourcesResult> {
        Box::pin(ServerHandler::list_resources(self, request, context))
    }
    fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ListResourceTemplatesResult> {
        Box::pin(ServerHandler::list_resource_templates(
            self, request, context,
        ))
    }
    fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ReadResourceResponse> {
        Box::pin(ServerHandler::read_resource(self, request, context))
    }
    fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ()> {
        // MCP 2025-11-25's subscriptions; rmcp deprecates them for the next revision.
        #[allow(deprecated)]
        let answer = ServerHandler::subscribe(self, request, context);
        Box::pin(answer)
    }
    fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ()> {
        #[allow(deprecated)]
        let answer = ServerHandler::unsubscribe(self, request, context);
        Box::pin(answer)
    }
    fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ListPromptsResult> {
        Box::pin(ServerHandler::list_prompts(self, request, context))
    }
    fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, GetPromptResponse> {
        Box::pin(ServerHandler::get_prompt(self, request, context))
    }
    fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, CompleteResult> {
        Box::pin(ServerHandler::complete(self, request, context))
    }
}

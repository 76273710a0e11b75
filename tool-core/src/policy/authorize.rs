//! Who may call a tool: asked before the arguments are read, and saying nothing about what
//! exists when the answer is no.

use crate::context::ToolContext;
use crate::definition::ToolDefinition;
use crate::error::ToolError;
use crate::tool::BoxFuture;

use super::step::{Call, Done, Flow, Next, Step};

/// Decides whether the context's principal may call a tool, before its arguments are read.
///
/// A closure `Fn(&ToolContext, &ToolDefinition) -> bool` is an authorizer; implement the trait
/// for one that needs to `.await`.
///
/// ```
/// use toolsmith::{ToolContext, ToolDefinition, Toolbox};
///
/// let toolbox = Toolbox::new().with_authorizer(|ctx: &ToolContext, tool: &ToolDefinition| {
///     tool.scopes().iter().all(|scope| ctx.principal() == Some("admin") || !scope.ends_with(":write"))
/// });
/// # let _ = toolbox;
/// ```
pub trait Authorizer: Send + Sync + 'static {
    /// Whether the call may go on.
    fn authorize<'a>(
        &'a self,
        ctx: &'a ToolContext,
        tool: &'a ToolDefinition,
    ) -> BoxFuture<'a, bool>;
}

impl<F> Authorizer for F
where
    F: Fn(&ToolContext, &ToolDefinition) -> bool + Send + Sync + 'static,
{
    fn authorize<'a>(
        &'a self,
        ctx: &'a ToolContext,
        tool: &'a ToolDefinition,
    ) -> BoxFuture<'a, bool> {
        let allowed = self(ctx, tool);
        Box::pin(async move { allowed })
    }
}

/// The step: the toolbox's authorizer, asked about this tool.
pub(crate) struct Authorize {
    pub(crate) authorizer: std::sync::Arc<dyn Authorizer>,
    pub(crate) tool: std::sync::Arc<dyn crate::tool::Tool>,
}

impl Step for Authorize {
    fn run<'a>(&'a self, call: Call<'a>, next: Next<'a>) -> Flow<'a> {
        Flow::later(async move {
            if !self
                .authorizer
                .authorize(call.ctx, self.tool.definition())
                .await
            {
                let name = call.name;
                return Done::refused(ToolError::permission_denied(format!(
                    "You are not allowed to use `{name}`. Do not retry; tell the user it needs other permissions."
                )));
            }
            next.run(call).await
        })
    }
}

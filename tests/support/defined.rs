//! A hand-written tool around a `ToolDefinition`, for tests of definitions that `#[tool]` does
//! not make: it reads its arguments with the definition's validator and returns them as its
//! data.

use toolsmith::tool::BoxFuture;
use toolsmith::{Arguments, Tool, ToolContext, ToolDefinition, ToolOutcome};

/// A tool that is only its definition.
pub struct Defined(pub ToolDefinition);

impl Tool for Defined {
    fn definition(&self) -> &ToolDefinition {
        &self.0
    }

    fn call<'a>(
        &'a self,
        arguments: Arguments<'a>,
        _: &'a ToolContext,
    ) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            match self.0.validate(arguments) {
                Ok(args) => ToolOutcome::success(&args).unwrap_or_else(ToolOutcome::Error),
                Err(err) => ToolOutcome::Error(err),
            }
        })
    }
}

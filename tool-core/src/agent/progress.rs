//! A running call's progress and partial results, as events of the run for the application
//! (`AgentEvent::ToolProgress`, `AgentEvent::ToolPartial`): never messages of the
//! conversation, so never in a request to the model.

use std::sync::Arc;

use serde_json::Value;

use crate::caller::{Caller, CallerError, Elicited, LogLevel, Root, Sampled, Sampling};
use crate::tool::BoxFuture;

/// What a running call reports.
pub(super) enum Reported<'a> {
    Progress {
        progress: f64,
        total: Option<f64>,
        message: Option<&'a str>,
    },
    Partial(&'a Value),
}

/// The caller of one call in a run that has events: progress and partial results become
/// events of the call (`emit`), and reach the caller the run's context had too (an MCP
/// client's, when the run itself serves one); everything else goes to that caller alone.
pub(super) struct Reporter {
    pub(super) emit: Arc<dyn Fn(Reported<'_>) + Send + Sync>,
    pub(super) inner: Arc<dyn Caller>,
}

/// The caller of a context that had none: every request gets the trait's own answer
/// (nothing, or `NotSupported`), as if no caller were there.
pub(super) struct Nobody;

impl Caller for Nobody {}

impl Caller for Reporter {
    fn progress<'a>(
        &'a self,
        progress: f64,
        total: Option<f64>,
        message: Option<&'a str>,
    ) -> BoxFuture<'a, ()> {
        (self.emit)(Reported::Progress {
            progress,
            total,
            message,
        });
        self.inner.progress(progress, total, message)
    }

    fn partial<'a>(&'a self, value: &'a Value) -> BoxFuture<'a, ()> {
        (self.emit)(Reported::Partial(value));
        self.inner.partial(value)
    }

    fn log<'a>(
        &'a self,
        level: LogLevel,
        message: &'a str,
        data: Option<&'a Value>,
    ) -> BoxFuture<'a, ()> {
        self.inner.log(level, message, data)
    }

    fn sample<'a>(
        &'a self,
        key: Option<&'a str>,
        request: Sampling,
    ) -> BoxFuture<'a, Result<Sampled, CallerError>> {
        self.inner.sample(key, request)
    }

    fn roots<'a>(&'a self, key: Option<&'a str>) -> BoxFuture<'a, Result<Vec<Root>, CallerError>> {
        self.inner.roots(key)
    }

    fn elicit<'a>(
        &'a self,
        key: Option<&'a str>,
        message: &'a str,
        schema: &'a Value,
    ) -> BoxFuture<'a, Result<Elicited<Value>, CallerError>> {
        self.inner.elicit(key, message, schema)
    }

    fn detach(&self) -> BoxFuture<'_, bool> {
        self.inner.detach()
    }
}

//! Each request the server answers as a span of OpenTelemetry's MCP conventions
//! (`{mcp.method.name} {target}`, kind server, continuing the client's trace), and with the
//! `otel` feature its duration as `mcp.server.operation.duration`. A `tools/call` is not
//! traced here: its call's `execute_tool` span carries the MCP attributes
//! ([`telemetry`](crate::telemetry)).

use std::future::Future;

use rmcp::ErrorData;
use rmcp::service::{RequestContext, RoleServer};
use tracing::Instrument;

use super::request::McpRequest;

/// Marks a session's handshake replayed to wake its worker (`sessions`): the client did not
/// send it, so it is not traced.
#[derive(Clone, Copy, Debug)]
pub(super) struct Replayed;

/// Answers `initialize` as rmcp does (the client's info kept, the version negotiated),
/// inside its span unless it is a [`Replayed`] handshake.
pub(super) async fn initialize(
    handler: &impl rmcp::ServerHandler,
    request: rmcp::model::InitializeRequestParams,
    context: RequestContext<RoleServer>,
) -> Result<rmcp::model::InitializeResult, ErrorData> {
    context.peer.set_peer_info(request.clone());
    let answer = handler.negotiate_initialize(&request);
    if context.extensions.get::<Replayed>().is_some() {
        return answer;
    }
    Traced::new(&context, "initialize", None)
        .run(async { answer })
        .await
}

/// A request about to be answered, and what its span needs.
pub(super) struct Traced {
    rpc: Option<crate::telemetry::Rpc>,
    target: Option<String>,
}

impl Traced {
    /// A request of `method` (about `target`, a prompt's name).
    pub(super) fn new(
        context: &RequestContext<RoleServer>,
        method: &'static str,
        target: Option<&str>,
    ) -> Self {
        Self::maybe(context, Some(method), target)
    }

    /// A request of `method`, if it is one of the protocol's (`None`: not traced).
    pub(super) fn maybe(
        context: &RequestContext<RoleServer>,
        method: Option<&'static str>,
        target: Option<&str>,
    ) -> Self {
        // Nothing is read or copied for a span no one takes.
        let wanted = cfg!(feature = "otel") || tracing::level_enabled!(tracing::Level::INFO);
        Self {
            rpc: method
                .filter(|_| wanted)
                .map(|method| McpRequest::new(context, None).rpc(method)),
            // A prompt's name is the client's: cut short in the span's name.
            target: target.map(|t| crate::echo::echo(t).into_owned()),
        }
    }

    /// Answers the request with `work`, inside its span.
    pub(super) async fn run<T>(
        self,
        work: impl Future<Output = Result<T, ErrorData>>,
    ) -> Result<T, ErrorData> {
        let Some(rpc) = self.rpc else {
            return work.await;
        };
        let span = crate::telemetry::rpc_span(&rpc, self.target.as_deref());
        #[cfg(feature = "otel")]
        let started = std::time::Instant::now();
        let answer = work.instrument(span.clone()).await;
        let code = answer.as_ref().err().map(|err| err.code.0);
        crate::telemetry::rpc_ended(&span, code);
        #[cfg(feature = "otel")]
        crate::telemetry::record_rpc_duration(
            &rpc,
            None,
            started.elapsed().as_secs_f64(),
            code.map(|code| code.to_string()),
        );
        answer
    }
}

/// A tool call about to be answered: its duration is measured (`mcp.server.operation.duration`,
/// with the `otel` feature). Its span is the call's own `execute_tool` span.
pub(super) struct Measured {
    #[cfg(feature = "otel")]
    rpc: crate::telemetry::Rpc,
    #[cfg(feature = "otel")]
    tool: String,
}

impl Measured {
    #[cfg_attr(
        not(feature = "otel"),
        expect(unused_variables, reason = "only OpenTelemetry measures")
    )]
    pub(super) fn new(context: &RequestContext<RoleServer>, tool: &str) -> Self {
        Self {
            #[cfg(feature = "otel")]
            rpc: McpRequest::new(context, None).rpc("tools/call"),
            #[cfg(feature = "otel")]
            tool: tool.to_owned(),
        }
    }

    /// Answers the call with `work`, measured.
    pub(super) async fn run(
        self,
        work: impl Future<Output = Result<rmcp::model::CallToolResponse, ErrorData>>,
    ) -> Result<rmcp::model::CallToolResponse, ErrorData> {
        #[cfg(feature = "otel")]
        let started = std::time::Instant::now();
        let answer = work.await;
        #[cfg(feature = "otel")]
        crate::telemetry::record_rpc_duration(
            &self.rpc,
            Some(&self.tool),
            started.elapsed().as_secs_f64(),
            match &answer {
                Err(err) => Some(err.code.0.to_string()),
                Ok(rmcp::model::CallToolResponse::Complete(result))
                    if result.is_error == Some(true) =>
                {
                    Some("tool_error".to_owned())
                }
                Ok(_) => None,
            },
        );
        answer
    }
}

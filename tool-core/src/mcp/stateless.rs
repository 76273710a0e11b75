//! A plain `tools/call` without a session, answered in place.
//!
//! On a server that serves every request on its own (`HttpOptions { stateless: true, .. }`),
//! rmcp answers each request by building a transport, a service and a peer for it, and
//! spawning two tasks: most of the cost of a small call. A call this module recognises goes
//! to the toolbox directly, and is answered exactly as rmcp's path answers it: JSON when the
//! result comes first, server-sent events when the tool logs first (each log message, then
//! the result). Anything else (another method, a 2026-07-28 request, a progress token, a task
//! tool, headers that rmcp would refuse) goes to rmcp unchanged.

use std::sync::Arc;

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use http::request::Parts;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::request::McpRequest;
use super::server::McpServer;
use crate::caller::{BoxFuture, Caller, LogLevel};
use crate::provider::Dialect;
use crate::toolbox::Spelling;

/// The revisions whose calls are answered in place: those rmcp serves without per-request
/// negotiation.
const REVISIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];

/// A `tools/call` as it arrived.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Message {
    jsonrpc: String,
    id: Value,
    method: String,
    params: Params,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    name: String,
    #[serde(default)]
    arguments: Option<Map<String, Value>>,
    #[serde(rename = "_meta", default)]
    meta: Option<Map<String, Value>>,
}

/// A call answered in place: its id, tool, arguments, `_meta` and revision.
pub(super) struct Plain {
    id: Value,
    name: String,
    arguments: Map<String, Value>,
    meta: Map<String, Value>,
    revision: &'static str,
}

/// The call in `body`, when it is one this module answers: a `tools/call` of MCP 2025-11-25
/// (or earlier) with no session, the headers rmcp's stateless path accepts, no progress
/// token and nothing of 2026-07-28 in its `_meta`.
pub(super) fn plain_call(parts: &Parts, body: &[u8]) -> Option<Plain> {
    let headers = &parts.headers;
    if parts.method != http::Method::POST || headers.contains_key("mcp-session-id") {
        return None;
    }
    // Headers of MCP 2026-07-28 (SEP-2243) are checked by rmcp.
    if headers.keys().any(|k| {
        k.as_str() == "mcp-method"
            || k.as_str() == "mcp-name"
            || k.as_str().starts_with("mcp-param-")
    }) {
        return None;
    }
    let version = headers.get("mcp-protocol-version")?.to_str().ok()?;
    let revision = REVISIONS.into_iter().find(|r| *r == version)?;
    let accepts = headers
        .get_all(http::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .collect::<Vec<_>>();
    if !accepts.iter().any(|a| a == "application/json")
        || !accepts.iter().any(|a| a == "text/event-stream")
    {
        return None;
    }
    let content_type = headers.get(http::header::CONTENT_TYPE)?.to_str().ok()?;
    let essence = content_type.split(';').next().unwrap_or("").trim();
    if !essence.eq_ignore_ascii_case("application/json") {
        return None;
    }
    let message: Message = serde_json::from_slice(body).ok()?;
    if message.jsonrpc != "2.0" || message.method != "tools/call" {
        return None;
    }
    match &message.id {
        Value::String(_) => {}
        Value::Number(n) if n.is_i64() || n.is_u64() => {}
        _ => return None,
    }
    let meta = message.params.meta.unwrap_or_default();
    if meta
        .keys()
        .any(|k| k == "progressToken" || k.starts_with("io.modelcontextprotocol/"))
    {
        return None;
    }
    Some(Plain {
        id: message.id,
        name: message.params.name,
        arguments: message.params.arguments.unwrap_or_default(),
        meta,
        revision,
    })
}

impl McpServer {
    /// Whether the call `plain` names goes to the toolbox directly (not a task tool).
    pub(super) fn answers_in_place(&self, plain: &Plain) -> bool {
        !self.config.tasks.tools.contains_key(&plain.name)
    }

    /// Answers `plain`: JSON if the result comes first, server-sent events if the tool logs
    /// first. The call is cancelled if the client goes away before its answer.
    pub(super) async fn answer_plain(&self, plain: Plain, parts: Parts) -> Response {
        let (notes, mut heard) = mpsc::unbounded_channel::<Value>();
        let stop = CancellationToken::new();
        let disconnect = stop.clone().drop_guard();
        let id = plain.id.clone();
        let server = self.clone();
        let mut call =
            tokio::spawn(async move { server.plain_result(plain, parts, stop, notes).await });
        // The first message decides the answer's form, as on rmcp's path: a log message the
        // tool sent before its result makes a stream of events.
        let first = tokio::select! {
            biased;
            note = heard.recv() => note,
            joined = &mut call => {
                disconnect.disarm();
                return json_response(message(&id, joined));
            }
        };
        let Some(first) = first else {
            let joined = call.await;
            disconnect.disarm();
            return json_response(message(&id, joined));
        };
        let stream = futures_util::stream::unfold(
            (Some(first), heard, Some(call), Some(disconnect), id),
            |(first, mut heard, call, disconnect, id)| async move {
                if let Some(first) = first {
                    return Some((
                        event(&first.to_string()),
                        (None, heard, call, disconnect, id),
                    ));
                }
                if let Some(note) = heard.recv().await {
                    return Some((
                        event(&note.to_string()),
                        (None, heard, call, disconnect, id),
                    ));
                }
                let call = call?;
                let answer = message(&id, call.await);
                if let Some(disconnect) = disconnect {
                    disconnect.disarm();
                }
                Some((event(&answer), (None, heard, None, None, id)))
            },
        );
        (
            StatusCode::OK,
            [
                (http::header::CONTENT_TYPE, "text/event-stream"),
                (http::header::CACHE_CONTROL, "no-cache"),
            ],
            Body::from_stream(stream),
        )
            .into_response()
    }

    /// The call's result, or its JSON-RPC error, as `McpServer::call` gives it for a request
    /// of no session; with the `otel` feature its duration is recorded
    /// (`mcp.server.operation.duration`), as on rmcp's path.
    async fn plain_result(
        &self,
        plain: Plain,
        parts: Parts,
        stop: CancellationToken,
        notes: mpsc::UnboundedSender<Value>,
    ) -> Result<(rmcp::model::CallToolResult, Option<String>), rmcp::ErrorData> {
        #[cfg(feature = "otel")]
        let (started, tool, revision) = (
            std::time::Instant::now(),
            plain.name.clone(),
            plain.revision,
        );
        let answer = self.plain_answer(plain, parts, stop, notes).await;
        #[cfg(feature = "otel")]
        crate::telemetry::record_mcp(
            "mcp.server.operation.duration",
            started.elapsed().as_secs_f64(),
            crate::telemetry::McpMeasure {
                method: Some("tools/call"),
                tool: Some(tool),
                protocol_version: Some(revision.to_owned()),
                transport: "tcp",
                error: match &answer {
                    Err(err) => Some(err.code.0.to_string()),
                    Ok((result, _)) if result.is_error == Some(true) => {
                        Some("tool_error".to_owned())
                    }
                    Ok(_) => None,
                },
            },
        );
        answer
    }

    async fn plain_answer(
        &self,
        plain: Plain,
        parts: Parts,
        stop: CancellationToken,
        notes: mpsc::UnboundedSender<Value>,
    ) -> Result<(rmcp::model::CallToolResult, Option<String>), rmcp::ErrorData> {
        let Plain {
            id,
            name,
            arguments,
            meta,
            revision,
        } = plain;
        let request = McpRequest {
            id: match &id {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            },
            tool: Some(name.clone()),
            meta,
            client: Some(rmcp::model::Implementation::default()),
            protocol_version: Some(revision.to_owned()),
            grant: parts.extensions.get::<crate::context::Grant>().cloned(),
            http: Some(super::request::version_name(parts.version)),
            headers: Some(parts.headers),
        };
        self.run_of(&request)?;
        let ctx = self.context(&request, stop, None);
        let toolbox = &self.config.toolbox;
        let admitted = match toolbox
            .admit(&name, Spelling::Provider(Dialect::Mcp), &ctx, None)
            .await
        {
            Ok(admitted) => admitted,
            Err(refused) if super::answer::answered(&refused) => {
                return Ok((super::answer::refused_result(refused), None));
            }
            Err(_) => return Err(self.unknown_tool(&name, &ctx).await),
        };
        let tool = admitted.tool();
        let ctx = ctx.with_caller(Arc::new(Logs {
            notes,
            logger: name.clone(),
            session: Arc::clone(&self.session),
        }));
        let outcome = admitted.call(Value::Object(arguments), &ctx).await;
        Ok(super::answer::complete_as_text(
            &name,
            tool.definition(),
            &outcome,
        ))
    }
}

/// The JSON-RPC message answering the call `id`, as text: written in one pass, as rmcp
/// writes it (`jsonrpc`, `id`, then `result` or `error`).
fn message(
    id: &Value,
    joined: Result<
        Result<(rmcp::model::CallToolResult, Option<String>), rmcp::ErrorData>,
        tokio::task::JoinError,
    >,
) -> String {
    let mut out = String::with_capacity(512);
    out.push_str(r#"{"jsonrpc":"2.0","id":"#);
    out.push_str(&id.to_string());
    let body = match joined {
        Ok(Ok((mut result, structured))) => {
            // `resultType` is MCP 2026-07-28's; the revisions answered here have none.
            result.result_type = None;
            out.push_str(r#","result":"#);
            serde_json::to_string(&result).map(|mut text| {
                // The structured content, as the data's own JSON text, as the result's last
                // member (the result always has `content` before it).
                if let Some(structured) = structured
                    && text.ends_with('}')
                {
                    text.pop();
                    text.push_str(r#","structuredContent":"#);
                    text.push_str(&structured);
                    text.push('}');
                }
                text
            })
        }
        Ok(Err(error)) => {
            out.push_str(r#","error":"#);
            serde_json::to_string(&error)
        }
        Err(_) => {
            out.push_str(r#","error":"#);
            serde_json::to_string(&rmcp::ErrorData::internal_error(
                "the call failed inside the server",
                None,
            ))
        }
    };
    out.push_str(body.as_deref().unwrap_or("null"));
    out.push('}');
    out
}

fn json_response(message: String) -> Response {
    (
        StatusCode::OK,
        [(http::header::CONTENT_TYPE, "application/json")],
        message,
    )
        .into_response()
}

/// One server-sent event carrying `message` (JSON text).
fn event(message: &str) -> Result<String, std::convert::Infallible> {
    Ok(format!("data: {message}\n\n"))
}

/// The caller of a call without a session: its log messages go to the answer's events; the
/// client declared no capability, so nothing can be asked of it.
struct Logs {
    notes: mpsc::UnboundedSender<Value>,
    logger: String,
    session: Arc<super::caller::Session>,
}

impl Caller for Logs {
    fn progress<'a>(
        &'a self,
        _progress: f64,
        _total: Option<f64>,
        _message: Option<&'a str>,
    ) -> BoxFuture<'a, ()> {
        // No progress token (such requests go to rmcp): nothing to report to.
        Box::pin(async {})
    }

    fn log<'a>(
        &'a self,
        level: LogLevel,
        message: &'a str,
        data: Option<&'a Value>,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if let Some(params) =
                super::caller::log_params(&self.session, level, message, data, &self.logger)
            {
                let _ = self.notes.send(json!({
                    "jsonrpc": "2.0",
                    "method": "notifications/message",
                    "params": params,
                }));
            }
        })
    }
}

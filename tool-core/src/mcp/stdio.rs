//! Newline-delimited JSON-RPC over a byte stream (MCP's stdio transport), framed here so that
//! every line gets an answer.
//!
//! rmcp's own line codec drops a line it cannot read, and the client then waits for its
//! timeout. JSON-RPC 2.0 (§5) wants a `-32700 Parse error` with `id: null` for a message that
//! is not JSON, and `-32600 Invalid Request` for JSON that is not a request. So the lines are
//! read here, at most [`ServerLimits::max_message_bytes`](super::ServerLimits::max_message_bytes)
//! each, checked (UTF-8, JSON, limits, no key twice in one object), and handed to rmcp as
//! parsed messages through its sink-and-stream transport; refusals are answered on the same
//! writer, so answers never interleave.

use std::pin::Pin;
use std::task::{Context, Poll};

use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::limits::InputLimits;
use crate::validate::reader::Refusal;

/// What the writer writes: a message of rmcp's, or an answer made here.
#[derive(Debug)]
pub(super) enum Out {
    Message(Box<ServerJsonRpcMessage>),
    Raw(String),
}

/// The sink rmcp writes its messages into.
pub(super) struct Outgoing(tokio_util::sync::PollSender<Out>);

impl futures_util::Sink<ServerJsonRpcMessage> for Outgoing {
    type Error = tokio_util::sync::PollSendError<Out>;

    fn poll_ready(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_reserve(cx)
    }

    fn start_send(mut self: Pin<&mut Self>, item: ServerJsonRpcMessage) -> Result<(), Self::Error> {
        self.0.send_item(Out::Message(Box::new(item)))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Result<(), Self::Error>> {
        self.0.close();
        Poll::Ready(Ok(()))
    }
}

/// The stream rmcp reads the client's messages from.
pub(super) struct Incoming(mpsc::Receiver<ClientJsonRpcMessage>);

impl futures_util::Stream for Incoming {
    type Item = ClientJsonRpcMessage;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.poll_recv(cx)
    }
}

/// The transport for `read` and `write`: two tasks, one reading lines and one writing them.
pub(super) fn transport<R, W>(read: R, write: W, limits: InputLimits) -> (Outgoing, Incoming)
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let (out_tx, out_rx) = mpsc::channel::<Out>(64);
    let (in_tx, in_rx) = mpsc::channel::<ClientJsonRpcMessage>(64);
    tokio::spawn(write_lines(write, out_rx));
    tokio::spawn(read_lines(read, in_tx, out_tx.clone(), limits));
    (
        Outgoing(tokio_util::sync::PollSender::new(out_tx)),
        Incoming(in_rx),
    )
}

async fn write_lines<W: AsyncWrite + Unpin>(mut write: W, mut out: mpsc::Receiver<Out>) {
    while let Some(item) = out.recv().await {
        let mut line = match item {
            Out::Message(message) => match serde_json::to_vec(&message) {
                Ok(line) => line,
                Err(error) => {
                    tracing::error!(%error, "an MCP message could not be written");
                    continue;
                }
            },
            Out::Raw(text) => text.into_bytes(),
        };
        line.push(b'\n');
        if write.write_all(&line).await.is_err() || write.flush().await.is_err() {
            break;
        }
    }
}

/// Reads lines of at most `limits.max_bytes`; a longer line is skipped to its end, never
/// held whole.
async fn read_lines<R: AsyncRead + Unpin>(
    read: R,
    messages: mpsc::Sender<ClientJsonRpcMessage>,
    answers: mpsc::Sender<Out>,
    limits: InputLimits,
) {
    let mut reader = BufReader::with_capacity(64 << 10, read);
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let buf = match reader.fill_buf().await {
            Ok(buf) => buf,
            Err(error) => {
                tracing::debug!(%error, "the MCP input ended");
                break;
            }
        };
        if buf.is_empty() {
            if !line.is_empty() || too_long {
                let outcome = take(&line, too_long, &limits);
                if !deliver(outcome, &messages, &answers).await {
                    break;
                }
            }
            break;
        }
        let (chunk, end) = match buf.iter().position(|b| *b == b'\n') {
            Some(at) => (&buf[..at], Some(at + 1)),
            None => (buf, None),
        };
        if !too_long {
            if line.len() + chunk.len() > limits.max_bytes {
                // Only the start is kept, to answer with the request's id when it is there.
                too_long = true;
                line.truncate(ID_PREFIX);
                let room = ID_PREFIX.saturating_sub(line.len());
                line.extend_from_slice(&chunk[..room.min(chunk.len())]);
                line.shrink_to(ID_PREFIX);
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let used = end.unwrap_or(buf.len());
        reader.consume(used);
        if end.is_some() {
            let outcome = take(&line, too_long, &limits);
            line.clear();
            too_long = false;
            if !deliver(outcome, &messages, &answers).await {
                break;
            }
        }
    }
}

/// [`take`] as a result: `Err` with the answer written back.
pub(super) fn frame(line: &[u8], limits: &InputLimits) -> Result<(), String> {
    let too_long = line.len() > limits.max_bytes;
    match take(line, too_long, limits) {
        Line::Answer(answer) => Err(answer),
        Line::Message(_) | Line::Blank => Ok(()),
    }
}

/// What one line is: a message for rmcp, an answer to write, or nothing (a blank line).
enum Line {
    Message(Box<ClientJsonRpcMessage>),
    Answer(String),
    Blank,
}

async fn deliver(
    line: Line,
    messages: &mpsc::Sender<ClientJsonRpcMessage>,
    answers: &mpsc::Sender<Out>,
) -> bool {
    match line {
        Line::Message(message) => messages.send(*message).await.is_ok(),
        Line::Answer(answer) => answers.send(Out::Raw(answer)).await.is_ok(),
        Line::Blank => true,
    }
}

/// How much of a line over the size limit is kept: enough for the `id` a request starts
/// with.
const ID_PREFIX: usize = 4096;

/// The id of the request a line refused for its size or its values holds, when it can be
/// read (else `null`). A line that is not JSON (or not UTF-8), or that names a key twice,
/// is answered with `null`, as JSON-RPC says for a message whose id cannot be known.
fn id_of(line: &[u8]) -> Value {
    crate::json::request_id::request_id(line).unwrap_or(Value::Null)
}

fn take(line: &[u8], too_long: bool, limits: &InputLimits) -> Line {
    if too_long {
        return Line::Answer(error_answer(
            &id_of(line),
            PARSE_ERROR,
            &format!(
                "Parse error: the message is longer than {} bytes; send a shorter one",
                limits.max_bytes
            ),
        ));
    }
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Line::Blank;
    }
    let Ok(text) = std::str::from_utf8(line) else {
        return Line::Answer(error_answer(
            &Value::Null,
            PARSE_ERROR,
            "Parse error: the message is not UTF-8",
        ));
    };
    if let Err(refusal) = crate::validate::reader::check(text, limits) {
        return Line::Answer(error_answer(
            &refused_id(&refusal, line),
            PARSE_ERROR,
            &refusal_text(&refusal, limits),
        ));
    }
    match serde_json::from_str::<ClientJsonRpcMessage>(text) {
        Ok(message) => Line::Message(Box::new(message)),
        Err(error) => {
            // Valid JSON, but not a JSON-RPC message: answer with its id when it has one.
            let id = serde_json::from_str::<Value>(text)
                .ok()
                .and_then(|v| v.get("id").cloned())
                .filter(|id| id.is_string() || id.is_number())
                .unwrap_or(Value::Null);
            Line::Answer(error_answer(
                &id,
                INVALID_REQUEST,
                &format!(
                    "Invalid Request: {}; send a JSON-RPC 2.0 request object",
                    crate::echo::message(&error.to_string(), 300)
                ),
            ))
        }
    }
}

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;

/// The id to answer a refused message with: its own for a message over a limit, `null` for
/// one that is not JSON or is ambiguous.
pub(super) fn refused_id(refusal: &Refusal, message: &[u8]) -> Value {
    match refusal {
        Refusal::Limit(..) => id_of(message),
        Refusal::Syntax(_) | Refusal::Duplicate { .. } => Value::Null,
    }
}

/// Why a message was refused, for the client.
pub(super) fn refusal_text(refusal: &Refusal, limits: &InputLimits) -> String {
    match refusal {
        Refusal::Syntax(error) => format!(
            "Parse error: {}",
            crate::echo::message(&error.to_string(), 300)
        ),
        Refusal::Duplicate { pointer, key } => format!(
            "Parse error: the key `{key}` appears more than once at {pointer}; send each key once"
        ),
        Refusal::Limit(limit, pointer) => {
            let field = limit.field(limits, pointer.clone());
            format!("Parse error: {field}")
        }
    }
}

/// A JSON-RPC error response.
pub(super) fn error_answer(id: &Value, code: i64, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

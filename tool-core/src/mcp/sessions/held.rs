//! How a session is in use: the marks its requests and streams hold, which keep its worker
//! awake while they last.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll};

use rmcp::transport::common::server_side_http::ServerSseMessage;
use tokio::sync::mpsc;

/// How a session is in use.
pub(super) struct Usage {
    /// Requests being delivered and streams open: the worker does not rest while above 0.
    pub(super) busy: AtomicUsize,
    /// Whether the worker stays for the session's life: it is the handshake's worker, which
    /// rests only right after the handshake (a client choice made on it is its own), or a
    /// call's stream was dropped before its end (the call goes on, and the client may resume
    /// its stream from the worker's cache).
    pub(super) kept: AtomicBool,
}

/// A mark that the session is in use, taken off when dropped.
pub(super) struct Busy(Arc<Usage>);

impl Busy {
    pub(super) fn new(usage: &Arc<Usage>) -> Self {
        usage.busy.fetch_add(1, Ordering::AcqRel);
        Self(Arc::clone(usage))
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A stream of the worker's messages that keeps its session awake until it ends or is dropped.
pub(super) struct Held {
    messages: mpsc::Receiver<ServerSseMessage>,
    busy: Busy,
    /// Whether the stream carries a call (not the stream for notifications).
    call: bool,
    ended: bool,
}

impl Held {
    pub(super) fn new(messages: mpsc::Receiver<ServerSseMessage>, busy: Busy, call: bool) -> Self {
        Self {
            messages,
            busy,
            call,
            ended: false,
        }
    }
}

impl futures_util::Stream for Held {
    type Item = ServerSseMessage;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let next = self.messages.poll_recv(cx);
        if let Poll::Ready(None) = next {
            self.ended = true;
        }
        next
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if self.call && !self.ended {
            self.busy.0.kept.store(true, Ordering::Release);
        }
    }
}

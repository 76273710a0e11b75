//! Awaiting many futures at once, results in input order.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Polls every future until all are done; yields their outputs in the order given.
pub(crate) struct JoinAll<'a, T> {
    futures: Vec<Option<Pin<Box<dyn Future<Output = T> + Send + 'a>>>>,
    outputs: Vec<Option<T>>,
}

impl<'a, T> JoinAll<'a, T> {
    pub(crate) fn new<F: Future<Output = T> + Send + 'a>(futures: Vec<F>) -> Self {
        let outputs = futures.iter().map(|_| None).collect();
        Self {
            futures: futures
                .into_iter()
                .map(|f| Some(Box::pin(f) as Pin<Box<dyn Future<Output = T> + Send + 'a>>))
                .collect(),
            outputs,
        }
    }
}

impl<T> JoinAll<'_, T> {
    /// The next future to finish, with its index among those given; `None` once all have
    /// (outputs taken this way are not in the joined output).
    pub(crate) async fn next(&mut self) -> Option<(usize, T)> {
        std::future::poll_fn(|cx| self.poll_next(cx)).await
    }

    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<(usize, T)>> {
        let mut running = false;
        for (i, slot) in self.futures.iter_mut().enumerate() {
            if let Some(future) = slot {
                if let Poll::Ready(value) = future.as_mut().poll(cx) {
                    *slot = None;
                    return Poll::Ready(Some((i, value)));
                }
                running = true;
            }
        }
        if running {
            Poll::Pending
        } else {
            Poll::Ready(None)
        }
    }
}

impl<T> Unpin for JoinAll<'_, T> {}

impl<T> Future for JoinAll<'_, T> {
    type Output = Vec<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Vec<T>> {
        let this = &mut *self;
        let mut pending = false;
        for (slot, output) in this.futures.iter_mut().zip(this.outputs.iter_mut()) {
            if let Some(future) = slot {
                match future.as_mut().poll(cx) {
                    Poll::Ready(value) => {
                        *output = Some(value);
                        *slot = None;
                    }
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(this.outputs.iter_mut().filter_map(Option::take).collect())
        }
    }
}

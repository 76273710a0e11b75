//! A program's finished calls, kept while its run lasts: when the program runs again in the
//! same run (after a pause for a person's decision, in this process or another), each call
//! it already made is answered from here instead of running again, so the program reaches
//! the call it stopped at with the same values it had.
//!
//! The journal lives in the toolbox's idempotency store (the state family: in memory, or
//! Redis for a fleet), one entry per call, keyed by the run's principal, the run, the
//! program's call and the call's place in the program, and fingerprinted by the tool and
//! its arguments: a program that takes another path (other arguments at that place) is not
//! answered from the journal. A program outside a run (no run id or call id) keeps none.

use std::sync::Arc;
use std::time::Duration;

use monty_types::ExcType;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::context::ToolContext;
use crate::json::canonical::{arguments_hash, hash_text};
use crate::state::{IdempotencyStore, Reservation};

/// What a program was handed for one call.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Kept {
    /// The result, as the program read it.
    Value(Value),
    /// The exception it raised in the program: its type's name and message.
    Raised { kind: String, message: String },
}

impl Kept {
    pub(super) fn raised(kind: ExcType, message: &str) -> Self {
        Self::Raised {
            kind: kind.to_string(),
            message: message.to_owned(),
        }
    }
}

/// One program's journal.
pub(super) struct Journal {
    store: Arc<dyn IdempotencyStore>,
    ttl: Duration,
    /// The entries' key prefix; `None` outside a run.
    prefix: Option<String>,
    /// Whether the program still follows its journal: once it takes another path, later
    /// entries are not read.
    following: bool,
}

impl Journal {
    pub(super) fn new(store: &Arc<dyn IdempotencyStore>, ttl: Duration, ctx: &ToolContext) -> Self {
        let prefix = match (ctx.run_id(), ctx.call_id()) {
            (Some(run), Some(call)) => {
                let owner = serde_json::json!([ctx.principal(), run, call]);
                Some(format!(
                    "toolsmith:program:{}",
                    hash_text(&owner.to_string())
                ))
            }
            _ => None,
        };
        Self {
            store: Arc::clone(store),
            ttl,
            prefix,
            following: true,
        }
    }

    fn key(&self, n: u32) -> Option<String> {
        self.prefix.as_ref().map(|prefix| format!("{prefix}:{n}"))
    }

    /// What each of these calls (`n`, tool, arguments; made together, in the program's
    /// order) was handed when the program made it before, where it did. A call that took
    /// another path (another tool or other arguments at its place) is a fork: neither it nor
    /// any later call is answered from here. A call not kept (the program stopped before it
    /// ended) is answered by running; the program follows its journal no further than these
    /// calls.
    pub(super) async fn replay(&mut self, calls: &[(u32, &str, &Value)]) -> Vec<Option<Kept>> {
        let mut kept = Vec::with_capacity(calls.len());
        let mut all = true;
        for &(n, tool, arguments) in calls {
            if !self.following {
                kept.push(None);
                continue;
            }
            let Some(key) = self.key(n) else {
                kept.push(None);
                continue;
            };
            match self.store.lookup(&key).await.ok().flatten() {
                Some(Reservation::Done {
                    fingerprint,
                    envelope,
                }) if fingerprint == fingerprint_of(tool, arguments) => {
                    let found = serde_json::from_str(&envelope).ok();
                    all &= found.is_some();
                    kept.push(found);
                }
                Some(Reservation::Done { .. }) => {
                    self.following = false;
                    kept.push(None);
                }
                _ => {
                    all = false;
                    kept.push(None);
                }
            }
        }
        self.following &= all;
        kept
    }

    /// Keeps what call `n` was handed. A store that fails loses only the replay: the call
    /// would run again on a resume, as it would without a journal.
    pub(super) async fn keep(&self, n: u32, tool: &str, arguments: &Value, kept: &Kept) {
        let Some(key) = self.key(n) else {
            return;
        };
        let Ok(text) = serde_json::to_string(kept) else {
            return;
        };
        let fingerprint = fingerprint_of(tool, arguments);
        if let Ok(Reservation::Reserved) = self.store.reserve(&key, &fingerprint, self.ttl).await {
            let _ = self
                .store
                .complete(&key, &fingerprint, &text, self.ttl)
                .await;
        }
    }
}

fn fingerprint_of(tool: &str, arguments: &Value) -> String {
    format!("{tool} {}", arguments_hash(arguments))
}

//! A durable engine's journal as the place a run's steps run: each model answer and each
//! call's outcome is kept by the engine, and a run the engine retries after a crash reads
//! them back instead of asking the model or running the tool again.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::Awaited;
use crate::outcome::ToolOutcome;
use crate::tool::BoxFuture;

/// One step of a run, not started yet: called at most once, and not at all when the journal
/// already holds the step's output. `Ok` is the text to keep; `Err` is a failure the engine
/// may retry (a model that could not be asked).
pub type Step<'a> = Box<dyn FnOnce() -> BoxFuture<'a, Result<String, String>> + Send + 'a>;

/// Where a run's steps run when a durable engine drives it
/// ([`Agent::run_journaled`](super::Agent::run_journaled)): the engine keeps each step's
/// output in its journal under the order the steps come in, and a run it retries after a
/// crash gets the kept outputs back, so the model is not asked again for a turn it answered
/// and a tool does not run again for a call that finished.
///
/// The run's other work (building requests, the approval gate, the history) is a function
/// of those outputs, so a retried run takes the same steps in the same order. The engine's
/// adapter for Restate is [`restate`](crate::restate) (feature `restate`); any engine with a
/// "run this closure once and keep its result" step can implement this.
///
/// ```
/// use std::collections::HashMap;
/// use std::sync::Mutex;
/// use toolsmith::agent::{Journal, Step};
/// use toolsmith::tool::BoxFuture;
///
/// /// Keeps each step's output by its place in the run; a second run reads them back.
/// #[derive(Default)]
/// struct Kept(Mutex<(usize, HashMap<usize, String>)>);
///
/// impl Journal for Kept {
///     fn step<'a>(&'a self, _name: String, step: Step<'a>) -> BoxFuture<'a, Result<String, String>> {
///         Box::pin(async move {
///             let place = {
///                 let mut kept = self.0.lock().unwrap();
///                 kept.0 += 1;
///                 if let Some(output) = kept.1.get(&kept.0) {
///                     return Ok(output.clone());
///                 }
///                 kept.0
///             };
///             let output = step().await?;
///             self.0.lock().unwrap().1.insert(place, output.clone());
///             Ok(output)
///         })
///     }
/// }
/// ```
pub trait Journal: Send + Sync {
    /// Runs `step` as one durable step named `name` (`model:<turn>`, `call:<id>`), or
    /// returns the output the journal kept for it.
    ///
    /// # Errors
    ///
    /// The step's own failure, once the engine gives up retrying it.
    fn step<'a>(&'a self, name: String, step: Step<'a>) -> BoxFuture<'a, Result<String, String>>;
}

/// A call's outcome as a journal keeps it: the outcome's kept record, and for a call that
/// waits for a person, the exact call the approval gate read (which no envelope carries).
#[derive(Serialize, Deserialize)]
struct KeptCall {
    outcome: Box<serde_json::value::RawValue>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    awaited: Option<Awaited>,
}

/// `outcome` as the text a journal keeps.
pub(super) fn keep_call(outcome: &ToolOutcome) -> String {
    let record = outcome.to_record();
    let awaited = match outcome {
        ToolOutcome::Error(err) => err.awaited().cloned(),
        _ => None,
    };
    match serde_json::value::RawValue::from_string(record) {
        Ok(outcome) => serde_json::to_string(&KeptCall { outcome, awaited }).unwrap_or_default(),
        Err(_) => String::new(),
    }
}

/// The outcome a journal kept; an internal error when the text is not one
/// [`keep_call`] wrote (a journal that changed it).
pub(super) fn read_call(kept: &str) -> ToolOutcome {
    let read = serde_json::from_str::<KeptCall>(kept)
        .ok()
        .and_then(|kept| {
            let outcome = ToolOutcome::from_text(kept.outcome.get()).ok()?;
            Some(match (outcome, kept.awaited) {
                (ToolOutcome::Error(err), Some(awaited)) => {
                    ToolOutcome::Error(err.with_awaited(awaited))
                }
                (outcome, _) => outcome,
            })
        });
    read.unwrap_or_else(|| {
        ToolOutcome::Error(crate::error::ToolError::internal(
            "the journal gave back a call's outcome that does not read as one",
        ))
    })
}

/// The model's answer as the text a journal keeps.
pub(super) fn keep_answer(answer: &Value) -> String {
    answer.to_string()
}

/// The model's answer a journal kept.
pub(super) fn read_answer(kept: &str) -> Result<Value, String> {
    serde_json::from_str(kept)
        .map_err(|_| "the journal gave back a model answer that is not JSON".to_owned())
}

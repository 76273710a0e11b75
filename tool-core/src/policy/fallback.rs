//! A tool to call when this one fails after its retries; its result is marked degraded.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::error::ErrorCode;
use crate::outcome::{Degradation, ToolOutcome};
use crate::output::OutputChecks;
use crate::tool::Tool;

use super::attempt::run_once;
use super::audit::unix_ms;
use super::classify::{is_failure, may_retry};
use super::step::{Call, Done, Flow, Next, Ran, Step};

/// The step: the fallback tool, and the time its attempt may take.
pub(crate) struct Fallback {
    pub(crate) name: String,
    pub(crate) tool: Arc<dyn Tool>,
    pub(crate) timeout: Duration,
    /// The fallback tool's own output checks.
    pub(crate) output: Arc<OutputChecks>,
}

impl Step for Fallback {
    /// In place while the rest ends at once with nothing to fall back from.
    fn run<'a>(&'a self, call: Call<'a>, next: Next<'a>) -> Flow<'a> {
        let arguments = call.arguments.clone();
        let ctx = call.ctx;
        let flow = match next.run(call) {
            Flow::Now(done) if !falls_back(&done) => return Flow::Now(done),
            flow => flow,
        };
        Flow::later(async move {
            let done = flow.await;
            if !falls_back(&done) {
                return done;
            }
            let Some(err) = done.ran.error() else {
                return done;
            };
            let reason = err.code().as_str().to_owned();
            let answer = run_once(
                self.tool.as_ref(),
                &self.name,
                arguments,
                None,
                ctx,
                self.timeout,
            )
            .await;
            match self
                .output
                .spill(self.output.outcome(answer), ctx.principal())
                .await
            {
                // What the checks said about the fallback's data outweighs the degraded mark,
                // and a stored answer is its reference.
                kept @ (ToolOutcome::Checked(..) | ToolOutcome::Stored(..)) => {
                    Done::new(Ran::Outcome(kept), done.attempts)
                }
                ToolOutcome::Success(data) => {
                    let degradation = Degradation {
                        fallback: self.name.clone(),
                        reason,
                        at_unix_ms: unix_ms(SystemTime::now()),
                    };
                    Done::new(
                        Ran::Outcome(ToolOutcome::Degraded(data, Box::new(degradation))),
                        done.attempts,
                    )
                }
                _ => done,
            }
        })
    }
}

/// Whether a call ended in a way the fallback answers instead: a failure, an error a retry
/// could have fixed, or the tool paused by its circuit (the fallback is what the circuit's
/// message tells the model to look for).
fn falls_back(done: &Done) -> bool {
    done.ran.error().is_some_and(|err| {
        may_retry(err) || is_failure(err) || err.code() == ErrorCode::CircuitOpen
    })
}

//! A tool's plan: the steps its calls go through, composed once per configuration of the
//! toolbox, and the fast path it allows.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::outcome::ToolOutcome;
use crate::output::OutputChecks;
use crate::tool::Tool;

use super::attempt::run_inline;
use super::step::{Call, Done, Guard, Next, Ran, Step};

/// A tool's steps, in order, the last making the attempts; or, for a call refused before it
/// reached a tool (an unknown name), only the steps that record it.
pub(crate) struct Plan {
    steps: Vec<Arc<dyn Step>>,
    /// When the plan may run a call in place (its last step can: an inline tool's attempts;
    /// and every other step is passive): the guards that have work to do there, and the last
    /// step. Computed once, when the plan is composed.
    fast: Option<Fast>,
}

struct Fast {
    blockers: Vec<Arc<AtomicBool>>,
    guards: Vec<Box<dyn Guard>>,
    tool: Arc<dyn Tool>,
    output: Arc<OutputChecks>,
}

impl Plan {
    pub(crate) fn new(steps: Vec<Arc<dyn Step>>) -> Self {
        let fast = match steps.split_last() {
            Some((last, before)) if before.iter().all(|step| step.passive()) => {
                last.inline_tool().map(|(tool, output)| Fast {
                    blockers: before.iter().filter_map(|s| s.fast_blocker()).collect(),
                    guards: before.iter().filter_map(|s| s.fast_guard()).collect(),
                    tool,
                    output,
                })
            }
            _ => None,
        };
        Self { steps, fast }
    }

    /// Runs the call through every step.
    pub(crate) async fn run(&self, call: Call<'_>) -> Done {
        Next::new(&self.steps).run(call).await
    }

    /// The fast path: an inline tool run in place when every step is passive and no tracing
    /// subscriber wants the call's span. `Some` is the call's result; `None` means the plan
    /// must run, either because the fast path does not apply or because the first attempt
    /// failed in a way a retry, a circuit or a fallback acts on (it is then in
    /// `call.first`, and the guards' checks have run).
    #[inline]
    pub(crate) fn run_fast(&self, call: &mut Call<'_>) -> Option<Ran> {
        let fast = self.fast.as_ref()?;
        if tracing::level_enabled!(tracing::Level::INFO)
            || fast.blockers.iter().any(|b| b.load(Ordering::Acquire))
        {
            return None;
        }
        for guard in &fast.guards {
            // A refused call never ran: the guards before this one record nothing.
            if let Err(err) = guard.before(call) {
                return Some(Ran::Outcome(ToolOutcome::Error(err)));
            }
        }
        let ran = run_inline(
            fast.tool.as_ref(),
            &fast.output,
            call.arguments.reborrow(),
            call.ctx,
            call.out.as_deref_mut(),
        )?;
        // A result to store in the result store takes the full path, which can wait for it.
        // So does a batch, whose failed items the attempts may retry.
        let large = fast.output.is_batch()
            || matches!(&ran, Ran::Outcome(o) if o.data().is_some_and(|d| fast.output.is_large(d.get().len())));
        if !ran.is_final() || large {
            call.first = Some(ran);
            return None;
        }
        Some(ran)
    }
}

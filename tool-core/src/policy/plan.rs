//! A tool's plan: the steps its calls go through, composed once per configuration of the
//! toolbox, and the fast path it allows.

use std::sync::Arc;

use super::step::{Call, Done, Next, Step};

/// A tool's steps, in order, the last making the attempts; or, for a call refused before it
/// reached a tool (an unknown name), only the steps that record it.
pub(crate) struct Plan {
    steps: Vec<Arc<dyn Step>>,
    /// Whether the plan may run a call in place: its last step can (an inline tool's
    /// attempts) and every other step is passive. Computed once, when the plan is composed.
    fast: bool,
}

impl Plan {
    pub(crate) fn new(steps: Vec<Arc<dyn Step>>) -> Self {
        let fast = match steps.split_last() {
            Some((last, before)) => {
                last.runs_in_place() && before.iter().all(|step| step.passive())
            }
            None => false,
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
    pub(crate) fn run_fast(&self, call: &mut Call<'_>) -> Option<Done> {
        if !self.fast || tracing::level_enabled!(tracing::Level::INFO) {
            return None;
        }
        let (last, before) = self.steps.split_last()?;
        for guard in before.iter().filter_map(|step| step.guard()) {
            // A refused call never ran: the guards before this one record nothing.
            if let Err(err) = guard.before(call) {
                return Some(Done::refused(err));
            }
        }
        let ran = last.run_in_place(call)?;
        if !ran.is_final() {
            call.first = Some(ran);
            return None;
        }
        for step in before.iter().rev() {
            if let Some(guard) = step.guard() {
                guard.after(&ran);
            }
        }
        Some(Done::new(ran, 1))
    }
}

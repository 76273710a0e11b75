//! A tool's plan: the steps its calls go through, composed once per configuration of the
//! toolbox. One engine runs every plan: a call goes through the steps in order, in place
//! while each step can end at once, and with one future from the first step that must wait.

use std::sync::Arc;

use super::step::{Call, Flow, Next, Step};

/// A tool's steps, in order, the last making the attempts; or, for a call refused before it
/// reached a tool (an unknown name), only the steps that record it.
pub(crate) struct Plan {
    steps: Vec<Arc<dyn Step>>,
}

impl Plan {
    pub(crate) fn new(steps: Vec<Arc<dyn Step>>) -> Self {
        Self { steps }
    }

    /// Runs the call through every step: at once when every step can (a plain inline tool:
    /// the guards' checks, one attempt, the guards' records), else with a future.
    #[inline]
    pub(crate) fn run<'a>(&'a self, call: Call<'a>) -> Flow<'a> {
        Next::new(&self.steps).run(call)
    }
}

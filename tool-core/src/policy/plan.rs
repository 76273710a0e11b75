//! A tool's plan: the steps its calls go through, composed once per configuration of the
//! toolbox. One engine runs every plan: a call goes through the steps in order, in place
//! while each step can end at once, and with one future from the first step that must wait.

use std::sync::Arc;

use super::attempt::Attempts;
use super::audit::Audit;
use super::circuit::Circuit;
use super::step::{Call, Flow, Guard, Next, Step};

/// A tool's steps, in order, the last making the attempts; or, for a call refused before it
/// reached a tool (an unknown name), only the steps that record it.
pub(crate) struct Plan {
    steps: Vec<Arc<dyn Step>>,
    /// The same steps kept by their types, for the plan of a plain tool: the audit, the
    /// circuit and the attempts, nothing else.
    plain: Option<Plain>,
}

/// The plan of a plain tool (no approval, idempotency, budget, fallback, limit, shared
/// circuit or authorizer), whose steps are known when the plan is composed: its call goes
/// through them with direct calls instead of one virtual call per step. It is the same route
/// [`Next::run`] takes through them: the audit when it has work, the circuit's check, the
/// attempts, the circuit's record.
struct Plain {
    audit: Arc<Audit>,
    circuit: Arc<Circuit>,
    attempts: Arc<Attempts>,
}

impl Plan {
    pub(crate) fn new(steps: Vec<Arc<dyn Step>>) -> Self {
        Self { steps, plain: None }
    }

    /// The plan of a plain tool: the audit, the circuit, the attempts.
    pub(crate) fn plain(audit: Arc<Audit>, circuit: Arc<Circuit>, attempts: Arc<Attempts>) -> Self {
        let steps: Vec<Arc<dyn Step>> = vec![
            Arc::clone(&audit) as Arc<dyn Step>,
            Arc::clone(&circuit) as Arc<dyn Step>,
            Arc::clone(&attempts) as Arc<dyn Step>,
        ];
        Self {
            steps,
            plain: Some(Plain {
                audit,
                circuit,
                attempts,
            }),
        }
    }

    /// Runs the call through every step: at once when every step can (a plain inline tool:
    /// the guards' checks, one attempt, the guards' records), else with a future.
    #[inline]
    pub(crate) fn run<'a>(&'a self, call: Call<'a>) -> Flow<'a> {
        match &self.plain {
            Some(plain) if plain.audit.is_idle() => plain.run(call),
            _ => Next::new(&self.steps).run(call),
        }
    }
}

impl Plain {
    #[inline]
    fn run<'a>(&'a self, call: Call<'a>) -> Flow<'a> {
        let circuit: &'a Circuit = &self.circuit;
        if let Err(err) = circuit.before(&call) {
            return Flow::refused(err);
        }
        self.attempts.start(call, Some(circuit))
    }
}

//! The signature every step of the execution policy shares, and the rest of a plan as a step
//! sees it.
//!
//! A step is shaped like axum's `middleware::from_fn`: it gets the call and the rest of the
//! plan ([`Next`]), and decides whether and how to go on. Unlike tower's `Service`, a call is
//! borrowed (its arguments, its context and the caller's buffer), so steps take `&self` and
//! need no `poll_ready`. A step whose whole work is a synchronous check before the call and a
//! record after it is a [`Guard`]: the plan runs it in place, without a future of its own.

use std::borrow::Cow;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};

use crate::arguments::Arguments;
use crate::context::ToolContext;
use crate::definition::ToolDefinition;
use crate::error::ToolError;
use crate::outcome::{OutputNotes, ToolOutcome};
use crate::output::OutputChecks;
use crate::tool::{BoxFuture, Tool};
use crate::validate::canonical::{Checked, read_once};

use super::retry::{is_failure, may_retry};

/// A call's result inside a plan: an outcome, or success data an inline tool has already
/// written into the caller's buffer (`Toolbox::call_into`).
pub(crate) enum Ran {
    Outcome(ToolOutcome),
    Written,
    /// Written, and to be followed in the envelope by these notes of the output checks (data
    /// marked untrusted), already serialized as the fields that follow `data`.
    Marked(Arc<OutputNotes>, Arc<str>),
}

impl Ran {
    #[inline]
    pub(crate) fn error(&self) -> Option<&ToolError> {
        match self {
            Self::Outcome(outcome) => outcome.error(),
            Self::Written | Self::Marked(..) => None,
        }
    }

    pub(crate) fn status(&self) -> &'static str {
        match self {
            Self::Outcome(
                ToolOutcome::Success(_) | ToolOutcome::Checked(..) | ToolOutcome::Stored(..),
            )
            | Self::Written
            | Self::Marked(..) => "success",
            Self::Outcome(ToolOutcome::Degraded(..)) => "degraded",
            Self::Outcome(ToolOutcome::Replayed(_)) => "replayed",
            Self::Outcome(ToolOutcome::Error(_)) => "error",
        }
    }

    /// Whether nothing in a plan acts on this result any more: a success, or an error that is
    /// neither retried nor counted as the tool failing (so no retry, circuit or fallback).
    #[inline]
    pub(crate) fn is_final(&self) -> bool {
        self.error()
            .is_none_or(|err| !may_retry(err) && !is_failure(err))
    }
}

/// What a plan gives back: the result, and how many attempts it took.
pub(crate) struct Done {
    pub(crate) ran: Ran,
    pub(crate) attempts: u32,
}

impl Done {
    pub(crate) fn new(ran: Ran, attempts: u32) -> Self {
        Self { ran, attempts }
    }

    /// A call refused before any attempt.
    pub(crate) fn refused(err: ToolError) -> Self {
        Self::new(Ran::Outcome(ToolOutcome::Error(err)), 0)
    }
}

/// One call on its way through a plan.
pub(crate) struct Call<'a> {
    /// The tool's registered name.
    pub(crate) name: &'a str,
    pub(crate) arguments: Arguments<'a>,
    pub(crate) ctx: &'a ToolContext,
    /// The caller's buffer, for an inline tool's success data (`Toolbox::call_into`).
    pub(crate) out: Option<&'a mut Vec<u8>>,
    /// A result made before the plan went on: the first attempt of the fast path (whose
    /// guards have run their checks), or a refusal that only has to be recorded.
    pub(crate) first: Option<Ran>,
    /// The arguments read once ([`Call::read_once`]), for every step after the read and for
    /// the steps around it (the audit records them).
    pub(crate) read: &'a OnceLock<Checked>,
}

impl<'a> Call<'a> {
    /// The arguments read once for the tool `def`: validated, canonical and hashed. The first
    /// step that needs them reads them, and from then on the call carries the canonical value
    /// (what the tool itself gets); later steps get the same reading.
    pub(crate) fn read_once(&mut self, def: &ToolDefinition) -> Result<&'a Checked, ToolError> {
        let read: &'a OnceLock<Checked> = self.read;
        let checked = match read.get() {
            Some(checked) => checked,
            None => {
                let validation = def.validation();
                let limits = crate::validate::limits_for(validation, Some(self.ctx));
                let checked = read_once(validation, &self.arguments, limits)?;
                read.get_or_init(|| checked)
            }
        };
        self.arguments = Arguments::Value(Cow::Borrowed(&checked.value));
        Ok(checked)
    }
}

/// One concern of the execution policy.
pub(crate) trait Step: Send + Sync + 'static {
    /// Runs the step around the rest of the plan.
    fn run<'a>(&'a self, call: Call<'a>, next: Next<'a>) -> BoxFuture<'a, Done>;

    /// The step as a synchronous check and record, when that is all it does for this call.
    fn guard(&self) -> Option<&dyn Guard> {
        None
    }

    /// Whether a call whose first attempt ends at once (a success, or an error nothing
    /// retries) needs no more of this step than its guard. A plan made of such steps runs an
    /// inline tool in place, with no future (the fast path). Steps that act only on a
    /// failure (a fallback) are passive too: a failing first attempt goes on through the
    /// whole plan.
    fn passive(&self) -> bool {
        self.guard().is_some()
    }

    /// The check a passive step makes on the fast path, if it has one (the audit step without
    /// sinks and a fallback have none): its own copy, sharing the step's state. On the fast
    /// path a guard only checks; a step with something to record after a call that ends at
    /// once keeps such calls off the fast path instead (see `fast_blocker`).
    fn fast_guard(&self) -> Option<Box<dyn Guard>> {
        None
    }

    /// A flag that, while set, keeps calls off the fast path: a circuit that has recorded a
    /// failure needs the full path, and until then lets every call through and has nothing
    /// to record for calls that end at once.
    fn fast_blocker(&self) -> Option<Arc<AtomicBool>> {
        None
    }

    /// For the step that ends a plan (the attempts): the tool, when it runs in place
    /// (`#[tool(inline)]`).
    fn inline_tool(&self) -> Option<(Arc<dyn Tool>, Arc<OutputChecks>)> {
        None
    }
}

/// The synchronous part of a step: a check before the call and a record after it.
pub(crate) trait Guard: Send + Sync {
    /// Lets the call go on, or refuses it.
    fn before(&self, call: &Call<'_>) -> Result<(), ToolError>;

    /// Sees how the call ended.
    fn after(&self, ran: &Ran) {
        let _ = ran;
    }
}

/// A guard run as a step of its own (the plan runs guards in place; this is the same thing):
/// its check, the rest of the plan, its record.
pub(crate) fn guarded<'a>(
    guard: &'a dyn Guard,
    call: Call<'a>,
    next: Next<'a>,
) -> BoxFuture<'a, Done> {
    Box::pin(async move {
        if call.first.is_none()
            && let Err(err) = guard.before(&call)
        {
            return Done::refused(err);
        }
        let done = next.run(call).await;
        guard.after(&done.ran);
        done
    })
}

/// The rest of a plan, as a step sees it.
#[derive(Clone, Copy)]
pub(crate) struct Next<'a> {
    steps: &'a [Arc<dyn Step>],
}

impl<'a> Next<'a> {
    pub(crate) fn new(steps: &'a [Arc<dyn Step>]) -> Self {
        Self { steps }
    }

    /// Runs the rest of the plan: leading guards in place, then the next step that wraps the
    /// call (the last of a tool's plan makes the attempts). A plan with nothing left answers
    /// with the result made before it (a refusal being recorded).
    pub(crate) async fn run(self, call: Call<'a>) -> Done {
        let mut rest = self.steps;
        let mut guarded = 0;
        while let Some((step, after)) = rest.split_first() {
            let Some(guard) = step.guard() else {
                break;
            };
            // After a fast-path attempt, its guards have already let it through.
            if call.first.is_none()
                && let Err(err) = guard.before(&call)
            {
                return Done::refused(err);
            }
            guarded += 1;
            rest = after;
        }
        let done = match rest.split_first() {
            Some((step, after)) => step.run(call, Next { steps: after }).await,
            None => match call.first {
                Some(ran) => Done::new(ran, 0),
                None => Done::refused(ToolError::internal("a plan ended without a result")),
            },
        };
        for step in self.steps[..guarded].iter().rev() {
            if let Some(guard) = step.guard() {
                guard.after(&done.ran);
            }
        }
        done
    }
}

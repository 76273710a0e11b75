//! The signature every step of the execution policy shares, and the rest of a plan as a step
//! sees it.
//!
//! A step is shaped like axum's `middleware::from_fn`: it gets the call and the rest of the
//! plan ([`Next`]), and decides whether and how to go on. Unlike tower's `Service`, a call is
//! borrowed (its arguments, its context and the caller's buffer), so steps take `&self` and
//! need no `poll_ready`. A step ends at once or with a future ([`Flow`]): a plan whose steps
//! all end at once runs a call in place, with no future. A step whose whole work is a
//! synchronous check before the call and a record after it is a [`Guard`]: the plan runs it
//! in place, without a frame of its own.

use std::borrow::Cow;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use crate::arguments::Arguments;
use crate::context::ToolContext;
use crate::definition::ToolDefinition;
use crate::error::ToolError;
use crate::outcome::{OutputNotes, ToolOutcome};
use crate::tool::BoxFuture;
use crate::validate::canonical::Checked;
use crate::validate::read_once;

use super::classify::{is_failure, may_retry};

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
            Self::Outcome(outcome) => match outcome.for_model() {
                ToolOutcome::Degraded(..) => "degraded",
                ToolOutcome::Replayed(_) => "replayed",
                ToolOutcome::Error(_) => "error",
                _ => "success",
            },
            Self::Written | Self::Marked(..) => "success",
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
    /// A person's decision the call ran (or was refused) on, for its audit record.
    pub(crate) approval: Option<Box<super::decided::ApprovalNote>>,
}

impl Done {
    #[inline]
    pub(crate) fn new(ran: Ran, attempts: u32) -> Self {
        Self {
            ran,
            attempts,
            approval: None,
        }
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
    /// The arguments read once ([`Call::read_once`]), for every step after the read and for
    /// the steps around it (the audit records them).
    pub(crate) read: &'a OnceLock<Box<Checked>>,
    /// For a call refused before it reached a tool (an unknown name): the refusal, which the
    /// plan that records such calls answers with.
    pub(crate) refusal: Option<ToolError>,
    /// What was changed in the model's arguments before they were read (a repair), for the
    /// reading to carry.
    pub(crate) repairs: Vec<String>,
}

impl<'a> Call<'a> {
    /// The arguments read once for the tool `def`: validated, canonical and hashed. The first
    /// step that needs them reads them, and from then on the call carries the canonical value
    /// (what the tool itself gets); later steps get the same reading.
    pub(crate) fn read_once(&mut self, def: &ToolDefinition) -> Result<&'a Checked, ToolError> {
        let read: &'a OnceLock<Box<Checked>> = self.read;
        let checked: &'a Checked = match read.get() {
            Some(checked) => checked,
            None => {
                let validation = def.validation();
                let limits = crate::validate::limits_for(validation, Some(self.ctx));
                let mut checked = read_once(validation, &self.arguments, limits)?;
                checked.repairs = std::mem::take(&mut self.repairs);
                read.get_or_init(|| Box::new(checked))
            }
        };
        self.arguments = Arguments::Value(Cow::Borrowed(&checked.value));
        Ok(checked)
    }
}

/// How a step ends: at once, or with a future to wait for. A plan whose steps all end at once
/// runs a call in place, with no future and no allocation; one step that must wait makes the
/// whole call wait.
pub(crate) enum Flow<'a> {
    Now(Done),
    Later(BoxFuture<'a, Done>),
}

impl<'a> Flow<'a> {
    /// A step that waits.
    #[inline]
    pub(crate) fn later(future: impl Future<Output = Done> + Send + 'a) -> Self {
        Self::Later(Box::pin(future))
    }

    /// The call refused before any attempt, at once.
    #[inline]
    pub(crate) fn refused(err: ToolError) -> Self {
        Self::Now(Done::refused(err))
    }
}

impl<'a> IntoFuture for Flow<'a> {
    type Output = Done;
    type IntoFuture = Waiting<'a>;

    fn into_future(self) -> Waiting<'a> {
        match self {
            Self::Now(done) => Waiting::Now(Some(done)),
            Self::Later(future) => Waiting::Later(future),
        }
    }
}

/// A [`Flow`] awaited.
pub(crate) enum Waiting<'a> {
    Now(Option<Done>),
    Later(BoxFuture<'a, Done>),
}

impl Future for Waiting<'_> {
    type Output = Done;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Done> {
        match self.get_mut() {
            Self::Now(done) => Poll::Ready(done.take().unwrap_or_else(|| {
                Done::refused(ToolError::internal("a call's end was awaited twice"))
            })),
            Self::Later(future) => future.as_mut().poll(cx),
        }
    }
}

/// One concern of the execution policy.
pub(crate) trait Step: Send + Sync + 'static {
    /// Runs the step around the rest of the plan: at once when it and the rest can, else
    /// with a future.
    fn run<'a>(&'a self, call: Call<'a>, next: Next<'a>) -> Flow<'a>;

    /// What the step is for the next call: asked by the plan before it runs it.
    fn role(&self) -> Role<'_> {
        Role::Wraps
    }
}

/// What a step is for one call.
pub(crate) enum Role<'s> {
    /// It wraps the rest of the plan: the plan calls its [`Step::run`].
    Wraps,
    /// A synchronous check before the rest and a record after it: the plan runs it in place,
    /// with no frame of its own.
    Guard(&'s dyn Guard),
    /// A guard with nothing to check for this call, whose record matters only when the call
    /// fails (a circuit that has never seen a failure).
    Watch(&'s dyn Guard),
    /// Nothing to do for this call (the audit step with no sink and no subscriber).
    Idle,
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
pub(crate) fn guarded<'a>(guard: &'a dyn Guard, call: Call<'a>, next: Next<'a>) -> Flow<'a> {
    if let Err(err) = guard.before(&call) {
        return Flow::refused(err);
    }
    recorded(guard, next.run(call))
}

/// `flow`, with its end recorded by `guard` when it comes.
#[inline]
pub(crate) fn recorded<'a, G: Guard + ?Sized>(guard: &'a G, flow: Flow<'a>) -> Flow<'a> {
    match flow {
        Flow::Now(done) => {
            guard.after(&done.ran);
            Flow::Now(done)
        }
        Flow::Later(future) => Flow::later(async move {
            let done = future.await;
            guard.after(&done.ran);
            done
        }),
    }
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
    /// call (the last of a tool's plan makes the attempts), then the guards' records, in
    /// reverse. A plan with nothing left answers with the call's refusal (a call refused
    /// before it reached a tool, being recorded).
    #[inline]
    pub(crate) fn run(self, mut call: Call<'a>) -> Flow<'a> {
        let mut rest = self.steps;
        let mut guards = Guards::default();
        while let Some((step, after)) = rest.split_first() {
            match step.role() {
                Role::Wraps => break,
                Role::Idle => {}
                // Past the guards kept in place, a guard runs as a step of its own.
                Role::Guard(_) | Role::Watch(_) if guards.is_full() => break,
                Role::Guard(guard) => {
                    // A refused call never ran: the guards before this one record nothing.
                    if let Err(err) = guard.before(&call) {
                        return Flow::refused(err);
                    }
                    guards.push(guard, true);
                }
                Role::Watch(guard) => guards.push(guard, false),
            }
            rest = after;
        }
        let flow = match rest.split_first() {
            Some((step, after)) => step.run(call, Next { steps: after }),
            None => Flow::refused(
                call.refusal
                    .take()
                    .unwrap_or_else(|| ToolError::internal("a plan ended without a result")),
            ),
        };
        match flow {
            Flow::Now(done) => {
                guards.record(&done);
                Flow::Now(done)
            }
            Flow::Later(future) if guards.len == 0 => Flow::Later(future),
            Flow::Later(future) => Flow::later(async move {
                let done = future.await;
                guards.record(&done);
                done
            }),
        }
    }
}

/// The guards that let a call through, in order, kept in place: a plan has at most two (the
/// run budget, the circuit).
#[derive(Default)]
struct Guards<'a> {
    /// Each guard, and whether it sees a call that did not fail.
    list: [Option<(&'a dyn Guard, bool)>; 2],
    len: usize,
}

impl<'a> Guards<'a> {
    #[inline]
    fn is_full(&self) -> bool {
        self.len == self.list.len()
    }

    #[inline]
    fn push(&mut self, guard: &'a dyn Guard, always: bool) {
        if let Some(slot) = self.list.get_mut(self.len) {
            *slot = Some((guard, always));
            self.len += 1;
        }
    }

    /// Their records of how the call ended, last first.
    #[inline]
    fn record(&self, done: &Done) {
        let failed = done.ran.error().is_some();
        for (guard, always) in self.list.iter().take(self.len).rev().flatten() {
            if *always || failed {
                guard.after(&done.ran);
            }
        }
    }
}

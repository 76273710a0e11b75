//! A tool's circuit breaker: after enough failures in a row (timeouts, upstream and internal
//! errors) the tool is paused for a cooldown, then one probe call decides.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::error::{ErrorCode, ToolError};
use crate::spec::CircuitPolicy;
use crate::state::CircuitStore;

use super::classify::is_failure;
use super::step::{Call, Done, Flow, Guard, Next, Ran, Role, Step, guarded};

enum State {
    Closed { failures: u32 },
    Open { until: Instant },
    Probing,
}

/// One tool's circuit, and the step that keeps it.
pub(crate) struct Circuit(Breaker);

struct Breaker {
    policy: CircuitPolicy,
    state: Mutex<State>,
    /// Whether this circuit ever recorded a failure: until then, calls skip the lock.
    used: AtomicBool,
}

impl Circuit {
    pub(crate) fn new(policy: CircuitPolicy) -> Self {
        Self(Breaker {
            policy,
            state: Mutex::new(State::Closed { failures: 0 }),
            used: AtomicBool::new(false),
        })
    }
}

impl Guard for Circuit {
    /// Lets a call through, or fails fast while the circuit is open.
    #[inline]
    fn before(&self, call: &Call<'_>) -> Result<(), ToolError> {
        if !self.0.used.load(Ordering::Acquire) {
            return Ok(()); // nothing ever failed: closed
        }
        self.0.admit(call.name)
    }

    /// Records how a call through the circuit ended.
    #[inline]
    fn after(&self, ran: &Ran) {
        let failed = ran.error().is_some_and(is_failure);
        if !failed && !self.0.used.load(Ordering::Acquire) {
            return; // closed and staying closed
        }
        self.0.record(failed);
    }
}

impl Breaker {
    /// A call of `tool` through a circuit that has seen a failure.
    fn admit(&self, tool: &str) -> Result<(), ToolError> {
        let Ok(mut state) = self.state.lock() else {
            return Ok(());
        };
        match *state {
            State::Closed { .. } => Ok(()),
            State::Open { until } => {
                let now = Instant::now();
                if now >= until {
                    *state = State::Probing;
                    Ok(())
                } else {
                    Err(circuit_open(tool, until - now))
                }
            }
            State::Probing => Err(circuit_open(tool, Duration::from_secs(1))),
        }
    }

    /// A call's end, when it failed or the circuit has seen a failure before.
    fn record(&self, failed: bool) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        self.used.store(true, Ordering::Release);
        let open = || State::Open {
            until: Instant::now() + self.policy.cooldown,
        };
        *state = match (&*state, failed) {
            (_, false) => State::Closed { failures: 0 },
            (State::Probing | State::Open { .. }, true) => open(),
            (State::Closed { failures }, true) if failures + 1 >= self.policy.failures => open(),
            (State::Closed { failures }, true) => State::Closed {
                failures: failures + 1,
            },
        };
    }
}

impl Step for Circuit {
    fn run<'a>(&'a self, call: Call<'a>, next: Next<'a>) -> Flow<'a> {
        guarded(self, call, next)
    }

    /// Until a failure, every call is let through and only a failure needs recording.
    fn role(&self) -> Role<'_> {
        if self.0.used.load(Ordering::Acquire) {
            Role::Guard(self)
        } else {
            Role::Watch(self)
        }
    }
}

fn circuit_open(tool: &str, wait: Duration) -> ToolError {
    ToolError::new(
        ErrorCode::CircuitOpen,
        format!("`{tool}` failed several times in a row and is paused; try again later or use another tool."),
    )
    .retry_after(wait)
}

/// One tool's circuit kept in a shared store (every process of a fleet sees it): checked
/// before the call, recorded after it. Not a guard: the store takes a future.
pub(crate) struct SharedCircuit {
    pub(crate) store: Arc<dyn CircuitStore>,
    pub(crate) policy: CircuitPolicy,
}

impl Step for SharedCircuit {
    fn run<'a>(&'a self, call: Call<'a>, next: Next<'a>) -> Flow<'a> {
        Flow::later(async move {
            let name = call.name;
            match self.store.admit(name, self.policy.cooldown).await {
                Ok(None) => {}
                Ok(Some(wait)) => return Done::refused(circuit_open(name, wait)),
                Err(err) => return Done::refused(ToolError::state_unreachable(&err)),
            }
            let done = next.run(call).await;
            let failed = done.ran.error().is_some_and(is_failure);
            let recorded = self
                .store
                .record(name, failed, self.policy.failures, self.policy.cooldown)
                .await;
            if let Err(err) = recorded {
                tracing::warn!(%err, tool = name, "a call's end could not be recorded in the shared circuit");
            }
            done
        })
    }
}

//! A tool's circuit breaker: after enough failures in a row (timeouts, upstream and internal
//! errors) the tool is paused for a cooldown, then one probe call decides.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::error::{ErrorCode, ToolError};
use crate::spec::CircuitPolicy;
use crate::state::{Admission, CircuitStore};

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
    store: Arc<dyn CircuitStore>,
    policy: CircuitPolicy,
    /// Until when (µs after `epoch`) this process takes the circuit for closed and clear
    /// without asking the store: set when the store said so, cleared at a failure seen here.
    clear_until: AtomicU64,
    epoch: std::time::Instant,
}

/// How long a process takes a shared circuit the store called clear for closed without
/// asking again: the most a replica lags behind a circuit another opened (it also stops at
/// its own first failure, which it records at once).
pub(crate) const SHARED_CLEAR_FOR: Duration = Duration::from_secs(1);

impl SharedCircuit {
    pub(crate) fn new(store: Arc<dyn CircuitStore>, policy: CircuitPolicy) -> Self {
        Self {
            store,
            policy,
            clear_until: AtomicU64::new(0),
            epoch: std::time::Instant::now(),
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_micros()).unwrap_or(u64::MAX)
    }
}

impl Step for SharedCircuit {
    fn run<'a>(&'a self, call: Call<'a>, next: Next<'a>) -> Flow<'a> {
        Flow::later(async move {
            let name = call.name;
            // While the circuit is clear, a call costs the store nothing: no admission asked,
            // no success recorded (there is no failure for it to reset).
            let mut clear = self.now() < self.clear_until.load(Ordering::Acquire);
            if !clear {
                match self.store.admit(name, self.policy.cooldown).await {
                    Ok(Admission::Clear) => {
                        let until = self.now().saturating_add(
                            u64::try_from(SHARED_CLEAR_FOR.as_micros()).unwrap_or(u64::MAX),
                        );
                        self.clear_until.store(until, Ordering::Release);
                        clear = true;
                    }
                    Ok(Admission::Go) => {}
                    Ok(Admission::Wait(wait)) => return Done::refused(circuit_open(name, wait)),
                    Err(err) => return Done::refused(ToolError::state_unreachable(&err)),
                }
            }
            let done = next.run(call).await;
            let failed = done.ran.error().is_some_and(is_failure);
            if failed {
                self.clear_until.store(0, Ordering::Release);
            } else if clear {
                return done;
            }
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

//! The budget of a run (the calls sharing a context's run id): calls, retries per tool and
//! the time spent in tools, so that a model cannot loop forever. Off unless configured.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::context::ToolContext;
use crate::error::{ErrorCode, ToolError};
use crate::spec::RunBudget;
use crate::state::BudgetStore;

use super::step::{Call, Done, Flow, Guard, Next, Role, Step, guarded};

struct Run {
    /// When the run last made a call: runs idle for long are forgotten first.
    seen: Instant,
    calls: u32,
    retries: HashMap<String, u32>,
    /// Time spent in the run's tool attempts (not the model's time between calls).
    tool_time: Duration,
}

/// Runs kept while the map is large: those seen within this time.
const RUN_IDLE: Duration = Duration::from_secs(3600);
/// Past this many runs the map forgets idle ones; it never holds more than `MAX_RUNS`.
const PRUNE_AT: usize = 1024;
const MAX_RUNS: usize = 65_536;

/// The runs a toolbox has seen, each with what it has used; shared by every tool's plan.
/// With a shared store, the counts are the store's (every process of a fleet sees them).
pub(crate) struct Budgets {
    budget: RunBudget,
    runs: Mutex<HashMap<String, Run>>,
    shared: Option<Arc<dyn BudgetStore>>,
}

impl Budgets {
    pub(crate) fn new(budget: RunBudget, shared: Option<Arc<dyn BudgetStore>>) -> Self {
        Self {
            budget,
            runs: Mutex::default(),
            shared,
        }
    }

    /// Counts a call against the run's budget in the shared store.
    async fn start_call_shared(
        &self,
        store: &dyn BudgetStore,
        ctx: &ToolContext,
    ) -> Result<(), ToolError> {
        let Some(run_id) = ctx.run_id() else {
            return Ok(());
        };
        let usage = store
            .count_call(run_id)
            .await
            .map_err(|err| ToolError::state_unreachable(&err))?;
        let budget = &self.budget;
        if usage.tool_time >= budget.max_tool_time {
            return Err(time_spent(budget));
        }
        if usage.calls > budget.max_calls {
            return Err(calls_spent(budget.max_calls));
        }
        Ok(())
    }

    /// Runs `f` on the state of the context's run (made on its first call) after checking the
    /// time its tools have taken; calls without a run id have no run budget.
    fn with_run(
        &self,
        ctx: &ToolContext,
        f: impl FnOnce(&mut Run) -> Result<(), ToolError>,
    ) -> Result<(), ToolError> {
        let Some(run_id) = ctx.run_id() else {
            return Ok(());
        };
        let Ok(mut runs) = self.runs.lock() else {
            return Ok(());
        };
        let budget = &self.budget;
        let now = Instant::now();
        if !runs.contains_key(run_id) {
            if runs.len() >= PRUNE_AT {
                prune(&mut runs, now);
            }
            runs.insert(
                run_id.to_owned(),
                Run {
                    seen: now,
                    calls: 0,
                    retries: HashMap::new(),
                    tool_time: Duration::ZERO,
                },
            );
        }
        let Some(run) = runs.get_mut(run_id) else {
            return Ok(());
        };
        run.seen = now;
        if run.tool_time >= budget.max_tool_time {
            return Err(time_spent(budget));
        }
        f(run)
    }

    /// Counts a call against the run's budget.
    pub(crate) fn start_call(&self, ctx: &ToolContext) -> Result<(), ToolError> {
        let max = self.budget.max_calls;
        self.with_run(ctx, |run| {
            run.calls += 1;
            if run.calls > max {
                return Err(calls_spent(max));
            }
            Ok(())
        })
    }

    /// Counts a retry of `tool` against the run's budget.
    pub(crate) async fn take_retry(&self, ctx: &ToolContext, tool: &str) -> Result<(), ToolError> {
        let max = self.budget.max_retries_per_tool;
        let spent = || budget_exhausted(format!("this run has used its {max} retries of `{tool}`"));
        if let Some(store) = &self.shared {
            let Some(run_id) = ctx.run_id() else {
                return Ok(());
            };
            let retries = store
                .count_retry(run_id, tool)
                .await
                .map_err(|err| ToolError::state_unreachable(&err))?;
            return if retries > max { Err(spent()) } else { Ok(()) };
        }
        self.with_run(ctx, |run| {
            let retries = run.retries.entry(tool.to_owned()).or_insert(0);
            *retries += 1;
            if *retries > max {
                return Err(spent());
            }
            Ok(())
        })
    }

    /// Adds the time one attempt of a tool took to its run's.
    pub(crate) async fn spend(&self, ctx: &ToolContext, took: Duration) {
        let Some(run_id) = ctx.run_id() else {
            return;
        };
        if let Some(store) = &self.shared {
            if let Err(err) = store.add_time(run_id, took).await {
                tracing::warn!(%err, run_id, "a run's tool time could not be counted");
            }
            return;
        }
        if let Ok(mut runs) = self.runs.lock()
            && let Some(run) = runs.get_mut(run_id)
        {
            run.tool_time = run.tool_time.saturating_add(took);
        }
    }
}

/// Forgets runs idle for an hour, then, while there are still too many, the least recently
/// seen: the map is bounded, and a forgotten run only starts a fresh budget.
fn prune(runs: &mut HashMap<String, Run>, now: Instant) {
    runs.retain(|_, run| now.duration_since(run.seen) < RUN_IDLE);
    if runs.len() >= MAX_RUNS {
        let mut seen: Vec<Instant> = runs.values().map(|run| run.seen).collect();
        seen.sort_unstable();
        // Keeps the most recently seen half.
        if let Some(&cut) = seen.get(seen.len() - MAX_RUNS / 2 - 1) {
            runs.retain(|_, run| run.seen > cut);
        }
    }
}

fn time_spent(budget: &RunBudget) -> ToolError {
    budget_exhausted(format!(
        "this run's tools have used their time budget of {} s",
        budget.max_tool_time.as_secs_f64()
    ))
}

fn calls_spent(max: u32) -> ToolError {
    budget_exhausted(format!("this run has used its budget of {max} tool calls"))
}

fn budget_exhausted(what: String) -> ToolError {
    ToolError::new(
        ErrorCode::BudgetExhausted,
        format!("Stopped: {what}. Answer with what you have, or ask the user how to continue."),
    )
}

/// The step: each call counts against its run's budget before it starts.
pub(crate) struct Budget(pub(crate) Arc<Budgets>);

impl Guard for Budget {
    fn before(&self, call: &Call<'_>) -> Result<(), ToolError> {
        self.0.start_call(call.ctx)
    }
}

impl Step for Budget {
    fn run<'a>(&'a self, call: Call<'a>, next: Next<'a>) -> Flow<'a> {
        match &self.0.shared {
            Some(store) => Flow::later(async move {
                if let Err(err) = self.0.start_call_shared(store.as_ref(), call.ctx).await {
                    return Done::refused(err);
                }
                next.run(call).await
            }),
            None => guarded(self, call, next),
        }
    }

    /// A shared budget is counted in its store, which takes a future.
    fn role(&self) -> Role<'_> {
        match self.0.shared {
            None => Role::Guard(self),
            Some(_) => Role::Wraps,
        }
    }
}

//! The budget of a run (the calls sharing a context's run id): calls, retries per tool and
//! time, so that a model cannot loop forever.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::time::Instant;

use crate::context::ToolContext;
use crate::error::{ErrorCode, ToolError};
use crate::spec::RunBudget;

use super::step::{Call, Done, Guard, Next, Step, guarded};
use crate::tool::BoxFuture;

struct Run {
    started: Instant,
    calls: u32,
    retries: HashMap<String, u32>,
}

/// The runs a toolbox has seen, each with what it has used; shared by every tool's plan.
pub(crate) struct Budgets {
    budget: RunBudget,
    runs: Mutex<HashMap<String, Run>>,
}

impl Budgets {
    pub(crate) fn new(budget: RunBudget) -> Self {
        Self {
            budget,
            runs: Mutex::default(),
        }
    }

    /// Runs `f` on the state of the context's run (made on its first call) after checking the
    /// run's time budget; calls without a run id have no run budget.
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
        if runs.len() > 1024 {
            // Forget runs long past their budget, so the map does not grow without end.
            runs.retain(|_, run| now.duration_since(run.started) < budget.max_latency * 2);
        }
        if !runs.contains_key(run_id) {
            runs.insert(
                run_id.to_owned(),
                Run {
                    started: now,
                    calls: 0,
                    retries: HashMap::new(),
                },
            );
        }
        let Some(run) = runs.get_mut(run_id) else {
            return Ok(());
        };
        if now.duration_since(run.started) > budget.max_latency {
            return Err(budget_exhausted(format!(
                "this run has used its time budget of {} s",
                budget.max_latency.as_secs()
            )));
        }
        f(run)
    }

    /// Counts a call against the run's budget.
    pub(crate) fn start_call(&self, ctx: &ToolContext) -> Result<(), ToolError> {
        let max = self.budget.max_calls;
        self.with_run(ctx, |run| {
            run.calls += 1;
            if run.calls > max {
                return Err(budget_exhausted(format!(
                    "this run has used its budget of {max} tool calls"
                )));
            }
            Ok(())
        })
    }

    /// Counts a retry of `tool` against the run's budget.
    pub(crate) fn take_retry(&self, ctx: &ToolContext, tool: &str) -> Result<(), ToolError> {
        let max = self.budget.max_retries_per_tool;
        self.with_run(ctx, |run| {
            let retries = run.retries.entry(tool.to_owned()).or_insert(0);
            *retries += 1;
            if *retries > max {
                return Err(budget_exhausted(format!(
                    "this run has used its {max} retries of `{tool}`"
                )));
            }
            Ok(())
        })
    }
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
    fn run<'a>(&'a self, call: Call<'a>, next: Next<'a>) -> BoxFuture<'a, Done> {
        guarded(self, call, next)
    }

    fn guard(&self) -> Option<&dyn Guard> {
        Some(self)
    }

    fn fast_guard(&self) -> Option<Box<dyn Guard>> {
        Some(Box::new(Budget(Arc::clone(&self.0))))
    }
}

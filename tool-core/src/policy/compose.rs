//! Where a toolbox's settings become each tool's plan: the one place that knows every step
//! and their order (docs/execution.md).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use tokio::sync::{RwLock, Semaphore};

use crate::definition::ToolDefinition;
use crate::output::OutputChecks;
use crate::spec::{Effect, RateLimit, ToolPolicy};
use crate::state::{ApprovalHome, State};
use crate::tool::Tool;

use super::approve::{Approvals, Approve, Approver, needs_approval};
use super::attempt::Attempts;
use super::audit::{Audit, AuditSink};
use super::authorize::{Authorize, Authorizer};
use super::budget::{Budget, Budgets};
use super::circuit::{Circuit, SharedCircuit};
use super::defaults::Defaults;
use super::fallback::Fallback;
use super::idempotent::Idempotent;
use super::limit::Limit;
use super::plan::Plan;
use super::read::ReadArguments;
use super::step::Step;
use super::throttle::Throttle;

/// The toolbox-wide settings, set with the `Toolbox::with_*` builders: the [`Defaults`] and
/// the [`State`] as they were given, and what the other builders add.
#[derive(Clone)]
pub(crate) struct Settings {
    /// As given to `Toolbox::with_defaults`.
    pub(crate) defaults: Defaults,
    /// As given to `Toolbox::with_state`.
    pub(crate) state: State,
    /// The key that signs cursors and stored results' ids: the state's, or one drawn at
    /// random when it has none.
    pub(crate) key: Arc<[u8; 32]>,
    /// The bound of [`Defaults::max_in_flight`], when set: shared by clones.
    pub(crate) in_flight: Option<Arc<Semaphore>>,
    pub(crate) authorizer: Option<Arc<dyn Authorizer>>,
    pub(crate) approver: Option<Arc<dyn Approver>>,
    /// Whether the approver is the toolbox's own (`with_approver`), not the state's.
    approver_given: bool,
    pub(crate) sinks: Vec<Arc<dyn AuditSink>>,
    pub(crate) overrides: HashMap<String, ToolPolicy>,
}

impl Default for Settings {
    fn default() -> Self {
        Self::new(Defaults::default(), State::memory())
    }
}

impl Settings {
    /// The settings of `defaults` and `state`, with nothing else added.
    fn new(defaults: Defaults, state: State) -> Self {
        let key = state
            .key
            .clone()
            .unwrap_or_else(|| Arc::new(crate::keys::random_key()));
        let in_flight = in_flight(&defaults);
        let approver = state.approvals.as_ref().map(approver_in);
        Self {
            defaults,
            state,
            key,
            in_flight,
            authorizer: None,
            approver,
            approver_given: false,
            sinks: Vec::new(),
            overrides: HashMap::new(),
        }
    }

    /// Takes `defaults` as they are given.
    pub(crate) fn set_defaults(&mut self, defaults: Defaults) {
        self.in_flight = in_flight(&defaults);
        self.defaults = defaults;
    }

    /// Takes `state` as it is given; a state without a key keeps the key in use.
    pub(crate) fn set_state(&mut self, state: State) {
        if let Some(key) = &state.key {
            self.key = Arc::clone(key);
        }
        if !self.approver_given {
            self.approver = state.approvals.as_ref().map(approver_in);
        }
        self.state = state;
    }

    /// Sets the toolbox's own approver, over any the state keeps.
    pub(crate) fn set_approver(&mut self, approver: Arc<dyn Approver>) {
        self.approver = Some(approver);
        self.approver_given = true;
    }

    /// Bounds the calls admitted at once at `calls`.
    #[cfg(feature = "mcp")]
    pub(crate) fn bound_in_flight(&mut self, calls: usize) {
        self.defaults.max_in_flight = Some(calls.max(1));
        self.in_flight = in_flight(&self.defaults);
    }
}

/// The approver of approvals kept in the state: its Redis store, or the store of this
/// process's memory every toolbox on the state shares (made by the first).
fn approver_in(home: &ApprovalHome) -> Arc<dyn Approver> {
    match home {
        ApprovalHome::Memory(slot) => {
            let store = slot.get_or_init(|| Arc::new(Approvals::new()));
            match store.downcast_ref::<Approvals>() {
                Some(approvals) => Arc::new(approvals.clone()),
                None => Arc::new(Approvals::new()),
            }
        }
        #[cfg(feature = "redis")]
        ApprovalHome::Redis(store) => Arc::new(super::approve::shared::SharedApprovals::new(
            Arc::clone(store),
        )),
    }
}

/// The semaphore of [`Defaults::max_in_flight`], when it is set.
fn in_flight(defaults: &Defaults) -> Option<Arc<Semaphore>> {
    defaults
        .max_in_flight
        .map(|calls| Arc::new(Semaphore::new(calls.max(1))))
}

/// Every tool's plan, and the plan of a call refused before it reached a tool, composed
/// together because they share the run budgets, the sequential lock and the limit on calls
/// at once.
pub(crate) struct Plans {
    pub(crate) tools: Vec<Plan>,
    pub(crate) refused: Plan,
    /// Refusals of each tool's arguments, per run.
    pub(crate) invalid: super::InvalidCounts,
}

/// What the plans of one toolbox share: the run budgets, the limit on calls at once, the
/// audit sinks, the guards, the sequential lock, and how a fallback is found by name.
struct Shared<'a> {
    budgets: Option<Arc<Budgets>>,
    slots: Arc<Semaphore>,
    sinks: Arc<[Arc<dyn AuditSink>]>,
    guards: Arc<[super::Guard]>,
    sequential: Option<Arc<RwLock<()>>>,
    find: &'a dyn Fn(&str) -> Option<Arc<dyn Tool>>,
}

impl Settings {
    /// The tool's policy: the definition's, then the toolbox's overrides.
    /// Borrowed unless the toolbox overrides something.
    pub(crate) fn policy<'d>(&self, def: &'d ToolDefinition) -> Cow<'d, ToolPolicy> {
        let Some(o) = self.overrides.get(def.name()) else {
            return Cow::Borrowed(def.policy());
        };
        Cow::Owned(o.or(def.policy()))
    }

    /// The output checks of the tool `def`.
    pub(crate) fn output_checks(&self, def: &ToolDefinition) -> OutputChecks {
        OutputChecks::new(
            def,
            &self.policy(def),
            self.defaults.large_results,
            Arc::clone(&self.state.results),
            &self.key,
            self.defaults.cursor_ttl,
        )
    }

    /// The audit step of the tool `def`: its record and its span.
    fn audit_of(&self, def: &ToolDefinition, shared: &Shared<'_>) -> Arc<Audit> {
        Arc::new(Audit {
            sinks: Arc::clone(&shared.sinks),
            sensitive: def.sensitive_params().to_vec(),
            limits: def.input_limits().copied().or(self.defaults.input_limits),
            description: Arc::from(def.description()),
            remote: def.remote(),
            telemetry: self.defaults.telemetry,
        })
    }

    /// The plan of one tool: the steps its settings need, in the order of docs/execution.md.
    fn plan_of(&self, tool: &Arc<dyn Tool>, shared: &Shared<'_>) -> Plan {
        let def = tool.definition();
        let policy = self.policy(def);
        let audit = self.audit_of(def, shared);
        let mut steps: Vec<Arc<dyn Step>> = vec![Arc::clone(&audit) as Arc<dyn Step>];
        // The circuit kept in memory, when it is the only step between the audit and
        // the attempts (a plain tool's plan).
        let mut own_circuit = None;
        if let Some(authorizer) = &self.authorizer {
            steps.push(Arc::new(Authorize {
                authorizer: Arc::clone(authorizer),
                tool: Arc::clone(tool),
            }));
        }
        // Repaired before anything else reads them: every later step sees the repair.
        if let Some(repair) = &self.defaults.repair {
            steps.push(Arc::new(super::repair::Repairing {
                repair: repair.clone(),
                tool: Arc::clone(tool),
                then_guards: !shared.guards.is_empty(),
            }));
        }
        // Guards see the arguments read, and leave the reading every later step sees.
        if !shared.guards.is_empty() {
            steps.push(Arc::new(super::guard::Guarded {
                guards: Arc::clone(&shared.guards),
                tool: Arc::clone(tool),
            }));
        }
        let approval = needs_approval(def);
        let write = keyed(def);
        // Read once, for every step that reads the arguments, before any of them. The
        // idempotency and approval steps read them first themselves, so a step of its
        // own is only for a call that only the audit reads.
        if !approval && !write && !shared.sinks.is_empty() {
            steps.push(Arc::new(ReadArguments {
                tool: Arc::clone(tool),
            }));
        }
        // A stored result replays before anyone is asked again.
        if write {
            steps.push(Arc::new(Idempotent {
                store: Arc::clone(&self.state.idempotency),
                policy: self.defaults.idempotency.clone(),
                scope: policy.idempotency_scope.unwrap_or_default(),
                tool: Arc::clone(tool),
            }));
        }
        if approval {
            if self.approver.is_none() {
                tracing::warn!(
                    tool = def.name(),
                    "the tool needs a person's approval and the toolbox has no approver: its calls are refused unless the call's context can ask a person (a `PromptForApproval` extension); set one with `Toolbox::with_approver(Approvals::new())`"
                );
            }
            steps.push(Arc::new(Approve {
                approver: self.approver.clone(),
                tool: Arc::clone(tool),
            }));
        }
        if let Some(budgets) = &shared.budgets {
            steps.push(Arc::new(Budget(Arc::clone(budgets))));
        }
        let timeout = policy.timeout.unwrap_or(self.defaults.timeout);
        if let Some(name) = policy.fallback.as_deref().filter(|f| *f != def.name())
            && let Some(fallback) = (shared.find)(name)
        {
            let output = Arc::new(self.output_checks(fallback.definition()));
            steps.push(Arc::new(Fallback {
                name: name.to_owned(),
                tool: fallback,
                timeout,
                output,
            }));
        }
        let circuit = policy
            .circuit
            .clone()
            .unwrap_or_else(|| self.defaults.circuit.clone());
        match &self.state.circuits {
            Some(store) => {
                steps.push(Arc::new(SharedCircuit::new(Arc::clone(store), circuit)));
            }
            None => {
                let circuit = Arc::new(Circuit::new(circuit));
                if steps.len() == 1 {
                    own_circuit = Some(Arc::clone(&circuit));
                }
                steps.push(circuit);
            }
        }
        let own = policy
            .concurrency
            .map(|n| Arc::new(Semaphore::new(n.max(1))));
        if shared.sequential.is_some() || own.is_some() {
            steps.push(Arc::new(Limit {
                sequential: shared
                    .sequential
                    .as_ref()
                    .map(|lock| (Arc::clone(lock), policy.sequential)),
                own,
            }));
        }
        let retry = policy
            .retry
            .clone()
            .unwrap_or_else(|| self.defaults.retry.clone());
        let limits: Vec<(String, RateLimit)> = policy
            .rate_limit
            .map(|limit| (format!("tool:{}", def.name()), limit))
            .into_iter()
            .chain(policy.upstream.as_deref().and_then(|name| {
                let limit = self.defaults.upstream_limits.get(name);
                if limit.is_none() {
                    tracing::warn!(
                        tool = def.name(),
                        upstream = name,
                        "the tool names an upstream with no limit: set one in `Defaults::upstream_limits`"
                    );
                }
                limit.map(|limit| (format!("upstream:{name}"), *limit))
            }))
            .collect();
        let throttle = (!limits.is_empty()).then(|| Throttle {
            limiter: Arc::clone(&self.state.rate_limits),
            limits,
        });
        let attempts = Arc::new(Attempts {
            throttle,
            tool: Arc::clone(tool),
            timeout,
            max_attempts: policy.max_attempts.unwrap_or(retry.max_attempts),
            retry,
            budgets: shared.budgets.clone(),
            slots: (!def.is_inline()).then(|| Arc::clone(&shared.slots)),
            output: Arc::new(self.output_checks(def)),
            inline: def.is_inline(),
        });
        match own_circuit {
            Some(circuit) if steps.len() == 2 => Plan::plain(audit, circuit, attempts),
            _ => {
                steps.push(attempts);
                Plan::new(steps)
            }
        }
    }

    /// The plans of `tools` (in registration order); `find` looks a fallback up by name.
    pub(crate) fn plans(
        &self,
        tools: &[Arc<dyn Tool>],
        find: &dyn Fn(&str) -> Option<Arc<dyn Tool>>,
    ) -> Plans {
        let budgets = self
            .defaults
            .budget
            .clone()
            .map(|budget| Arc::new(Budgets::new(budget, self.state.budgets.clone())));
        let slots = Arc::new(Semaphore::new(self.defaults.concurrency.max(1)));
        let sinks: Arc<[Arc<dyn AuditSink>]> = self.sinks.iter().cloned().collect();
        let any_sequential = tools
            .iter()
            .any(|tool| self.policy(tool.definition()).sequential);
        let sequential = any_sequential.then(|| Arc::new(RwLock::new(())));
        let shared = Shared {
            budgets,
            slots,
            sinks,
            guards: self.defaults.guards.iter().cloned().collect(),
            sequential,
            find,
        };
        let plans = tools
            .iter()
            .map(|tool| self.plan_of(tool, &shared))
            .collect();
        let refused = Plan::new(vec![Arc::new(Audit {
            sinks: shared.sinks,
            sensitive: Vec::new(),
            limits: self.defaults.input_limits,
            description: Arc::from(""),
            remote: None,
            telemetry: self.defaults.telemetry,
        })]);
        Plans {
            tools: plans,
            refused,
            invalid: super::InvalidCounts::default(),
        }
    }
}

/// Whether calls of `def` are keyed for idempotency: writes, but not a tool whose effects are
/// calls through a door (the sandbox's `run_code`), each of which is keyed on its own.
fn keyed(def: &ToolDefinition) -> bool {
    matches!(def.effect(), Some(Effect::Write | Effect::Destructive)) && !def.is_composite()
}

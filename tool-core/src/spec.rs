//! What `#[tool]` records about a function, as plain data: the parameters and their
//! constraints, the effect and hints, and the execution settings. Nothing here knows how a
//! definition is exported, linted or run.

use std::cmp::Ordering;
use std::time::Duration;

use serde_json::Value;
use toolsmith_lint_rules::Level as LintLevel;

use crate::json::number::Num;

/// What `#[tool]` records about a function; the runtime builds the [`ToolDefinition`] from it.
#[doc(hidden)]
#[derive(Debug)]
pub struct ToolSpec {
    /// The tool's name.
    pub name: &'static str,
    /// The raw description: doc lines joined by `\n`, or the explicit `description = "..."`.
    pub description: &'static str,
    /// Whether `description` came from doc comments (one leading space per line is stripped).
    pub description_from_docs: bool,
    /// One entry per model-visible parameter, in order.
    pub params: &'static [ParamSpec],
    /// `#[tool(title = "...")]`.
    pub title: Option<&'static str>,
    /// `#[tool(read_only, destructive, idempotent, open_world)]`.
    pub annotations: Annotations,
    /// The JSON Schema of the return value, when it implements `JsonSchema`.
    pub output_schema: fn() -> Option<Value>,
    /// `#[tool(effect = "...")]`.
    pub effect: Option<Effect>,
    /// `#[tool(requires_approval)]`.
    pub requires_approval: bool,
    /// `#[tool(long_running)]`.
    pub long_running: bool,
    /// The level of every lint for this tool (crate config and `#[tool]` settings).
    pub lint_levels: &'static [(&'static str, LintLevel)],
    /// `#[tool(timeout = "5s")]`, in milliseconds.
    pub timeout_ms: Option<u64>,
    /// `#[tool(attempts = 3)]`.
    pub max_attempts: Option<u32>,
    /// `#[tool(concurrency = 2)]`.
    pub concurrency: Option<usize>,
    /// `#[tool(sequential)]`.
    pub sequential: bool,
    /// `#[tool(inline)]`.
    pub inline: bool,
    /// `#[tool(stream_args)]`.
    pub stream_args: bool,
    /// `#[tool(show_partial)]`.
    pub show_partial: bool,
    /// `#[tool(fallback = "other_tool")]`.
    pub fallback: Option<&'static str>,
    /// `#[tool(scopes("tickets:write"))]`.
    pub scopes: &'static [&'static str],
    /// `#[tool(data_classification = "internal")]`.
    pub data_classification: Option<&'static str>,
    /// `#[tool(version = "1.2.0")]`.
    pub version: Option<&'static str>,
    /// `#[tool(limits(max_bytes = ..))]`.
    pub input_limits: Option<crate::limits::InputLimits>,
    /// `#[tool(example = "...")]`: the arguments of calls that fit, as JSON text.
    pub examples: &'static [&'static str],
    /// `#[tool(invalid_example(arguments = "...", error = "/field"))]`: the arguments of calls
    /// that must be refused, and the JSON pointer of the error.
    pub invalid_examples: &'static [(&'static str, &'static str)],
}

/// An example call of a tool, declared with `#[tool(example = ...)]` or
/// [`ToolDefinition::with_example`](crate::ToolDefinition::with_example): checked against the
/// tool's schema by [`Toolbox::lint`](crate::Toolbox::lint), exported where a provider takes
/// examples, and written to the registry.
///
/// ```
/// use toolsmith::ToolExample;
/// let ok = ToolExample::valid(toolsmith::serde_json::json!({"city": "Paris"}));
/// assert!(ok.error.is_none());
/// let refused = ToolExample::invalid(toolsmith::serde_json::json!({"days": 0}), "/days");
/// assert_eq!(refused.error.as_deref(), Some("/days"));
/// ```
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct ToolExample {
    /// The call's arguments.
    pub arguments: Value,
    /// For a call that must be refused: the JSON pointer (into the arguments) of the error it
    /// is refused with. `None` for a call that fits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl ToolExample {
    /// A call that fits the tool's schema.
    #[must_use]
    pub fn valid(arguments: Value) -> Self {
        Self {
            arguments,
            error: None,
        }
    }

    /// A call the tool must refuse, with an error at `pointer` (`""` for the whole call).
    #[must_use]
    pub fn invalid(arguments: Value, pointer: impl Into<String>) -> Self {
        Self {
            arguments,
            error: Some(pointer.into()),
        }
    }
}

/// What a tool does to the world, from `#[tool(effect = "read" | "write" | "destructive")]`.
///
/// It sets the MCP hints (`readOnlyHint`, `destructiveHint`) unless they are given, and tells
/// execution policies (approval, retries) what they are dealing with.
///
/// ```
/// assert_eq!(toolsmith::Effect::Destructive.as_str(), "destructive");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Effect {
    /// Only reads.
    Read,
    /// Creates or changes data.
    Write,
    /// Deletes or overwrites data, or acts in bulk.
    Destructive,
}

impl Effect {
    /// `read`, `write` or `destructive`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
            Self::Destructive => "destructive",
        }
    }
}

/// Hints about a tool's behaviour, from `#[tool(read_only, destructive, idempotent, open_world)]`.
///
/// They become MCP's `ToolAnnotations` (`readOnlyHint`, ...); unset hints are left out, so
/// clients apply the protocol's defaults.
///
/// ```
/// use toolsmith::Annotations;
/// let hints = Annotations { read_only: Some(true), ..Annotations::default() };
/// assert_eq!(toolsmith::serde_json::Value::Object(hints.to_mcp())["readOnlyHint"], true);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Annotations {
    /// The tool does not change its environment.
    pub read_only: Option<bool>,
    /// The tool may destroy or overwrite data (meaningful when not read-only).
    pub destructive: Option<bool>,
    /// Calling it twice with the same arguments has no further effect.
    pub idempotent: Option<bool>,
    /// The tool reaches outside systems (the web, other services).
    pub open_world: Option<bool>,
}

impl Annotations {
    /// Fills the hints an effect implies, where they are not set.
    #[must_use]
    pub fn with_effect(mut self, effect: Option<Effect>) -> Self {
        let (read_only, destructive) = match effect {
            None => return self,
            Some(Effect::Read) => (true, None),
            Some(Effect::Write) => (false, Some(false)),
            Some(Effect::Destructive) => (false, Some(true)),
        };
        self.read_only = self.read_only.or(Some(read_only));
        self.destructive = self.destructive.or(destructive);
        self
    }

    /// MCP's `ToolAnnotations` object, without the unset hints.
    #[must_use]
    pub fn to_mcp(&self) -> serde_json::Map<String, Value> {
        [
            ("readOnlyHint", self.read_only),
            ("destructiveHint", self.destructive),
            ("idempotentHint", self.idempotent),
            ("openWorldHint", self.open_world),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k.to_owned(), Value::Bool(v))))
        .collect()
    }
}

impl ToolSpec {
    /// Every setting at its default, for the fields `#[tool]` leaves unset (struct update
    /// syntax): no parameters, no title, hints, effect, levels or execution settings.
    pub const DEFAULT: Self = Self {
        name: "",
        description: "",
        description_from_docs: false,
        params: &[],
        title: None,
        annotations: Annotations {
            read_only: None,
            destructive: None,
            idempotent: None,
            open_world: None,
        },
        output_schema: no_output_schema,
        effect: None,
        requires_approval: false,
        long_running: false,
        lint_levels: &[],
        timeout_ms: None,
        max_attempts: None,
        concurrency: None,
        sequential: false,
        inline: false,
        stream_args: false,
        show_partial: false,
        fallback: None,
        scopes: &[],
        data_classification: None,
        version: None,
        input_limits: None,
        examples: &[],
        invalid_examples: &[],
    };
}

fn no_output_schema() -> Option<Value> {
    None
}

/// One model-visible parameter.
#[doc(hidden)]
#[derive(Debug)]
pub struct ParamSpec {
    /// The JSON name.
    pub name: &'static str,
    /// The raw description (doc lines joined by `\n`, or `description = "..."`).
    pub description: &'static str,
    /// Whether `description` came from doc comments.
    pub description_from_docs: bool,
    /// The `#[arg]` constraints.
    pub constraints: &'static [Constraint],
    /// The `default = ...` value, as JSON.
    pub default: Option<fn() -> Value>,
    /// `#[arg(allow(..))]` and friends.
    pub lint_levels: &'static [(&'static str, LintLevel)],
    /// `#[arg(sensitive)]`: redacted in audit records.
    pub sensitive: bool,
}

impl ParamSpec {
    /// Every setting at its default, for the fields `#[tool]` leaves unset.
    pub const DEFAULT: Self = Self {
        name: "",
        description: "",
        description_from_docs: false,
        constraints: &[],
        default: None,
        lint_levels: &[],
        sensitive: false,
    };
}

/// One `#[arg(...)]` constraint.
#[doc(hidden)]
#[derive(Debug)]
pub enum Constraint {
    /// `length(min, max)`: Unicode code points of a string, or items of an array.
    Length {
        /// What is counted.
        kind: LengthKind,
        /// Inclusive minimum.
        min: Option<u64>,
        /// Inclusive maximum.
        max: Option<u64>,
    },
    /// `range(min, max, exclusive_min, exclusive_max)`.
    Range {
        /// Inclusive minimum.
        min: Option<Bound>,
        /// Inclusive maximum.
        max: Option<Bound>,
        /// Exclusive minimum.
        exclusive_min: Option<Bound>,
        /// Exclusive maximum.
        exclusive_max: Option<Bound>,
    },
    /// `pattern = "..."` (ECMA-262 regular expression, unanchored, as in JSON Schema).
    Pattern(&'static str),
    /// `email` (`"email"`) or `url` (`"uri"`).
    Format(&'static str),
}

/// What a `length` constraint counts.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LengthKind {
    /// Unicode code points of a string (`minLength`/`maxLength`).
    Chars,
    /// Items of an array (`minItems`/`maxItems`).
    Items,
}

/// A numeric bound written in `range(...)`.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bound {
    /// A negative or non-negative integer.
    Int(i64),
    /// A non-negative integer beyond `i64`.
    UInt(u64),
    /// A number with a fraction or exponent.
    Float(f64),
}

impl Bound {
    pub(crate) fn to_json(self) -> Value {
        match self {
            Self::Int(n) => Value::from(n),
            Self::UInt(n) => Value::from(n),
            Self::Float(n) => Value::from(n),
        }
    }
}

/// Retries with exponential backoff and full jitter.
///
/// Only errors marked `retryable` are retried, never `invalid_arguments`, `permission_denied`,
/// `approval_required` or one that needs a person; `retry_after_ms` is honoured; write tools
/// are retried only when declared idempotent.
///
/// ```
/// use std::time::Duration;
/// let retry = toolsmith::policy::RetryPolicy { max_attempts: 5, ..Default::default() };
/// assert_eq!(retry.base, Duration::from_millis(200));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct RetryPolicy {
    /// Attempts per call, the first included (default 3).
    pub max_attempts: u32,
    /// The first delay (default 200 ms).
    pub base: Duration,
    /// The growth of each next delay (default 2).
    pub factor: f32,
    /// The longest delay (default 5 s).
    pub cap: Duration,
    /// Random jitter on each delay (default on).
    pub jitter: bool,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            base: Duration::from_millis(200),
            factor: 2.0,
            cap: Duration::from_secs(5),
            jitter: true,
        }
    }
}

/// Limits for one run (the calls sharing a `ToolContext` run id), so that a model cannot loop
/// forever. A toolbox has none until [`Defaults::budget`](crate::policy::Defaults::budget)
/// sets one: a limit that stops a run must be one its owner chose.
///
/// ```
/// let budget = toolsmith::policy::RunBudget::default();
/// assert_eq!((budget.max_calls, budget.max_retries_per_tool), (50, 2));
/// assert_eq!(budget.max_tool_time.as_secs(), 300);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunBudget {
    /// Tool calls per run (default 50).
    pub max_calls: u32,
    /// Retries per tool per run (default 2).
    pub max_retries_per_tool: u32,
    /// Time the run's tool attempts may take in all (default 5 min). Only time spent in tools
    /// counts: the model's own time between calls does not.
    pub max_tool_time: Duration,
}

impl Default for RunBudget {
    fn default() -> Self {
        Self {
            max_calls: 50,
            max_retries_per_tool: 2,
            max_tool_time: Duration::from_secs(300),
        }
    }
}

/// When a tool's circuit opens, and for how long.
///
/// ```
/// assert_eq!(toolsmith::policy::CircuitPolicy::default().failures, 5);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CircuitPolicy {
    /// Consecutive failures (timeouts, upstream and internal errors) that open it (default 5).
    pub failures: u32,
    /// How long it stays open before one probe call decides (default 30 s).
    pub cooldown: Duration,
}

impl Default for CircuitPolicy {
    fn default() -> Self {
        Self {
            failures: 5,
            cooldown: Duration::from_secs(30),
        }
    }
}

/// A rate limit: at most `calls` calls per `per`, evenly spaced, with up to `burst` at once.
/// Set per tool (`ToolPolicy::rate_limit`) or per named upstream
/// ([`Defaults::upstream_limits`](crate::policy::Defaults::upstream_limits)); a call over it
/// waits for its turn through the retry policy (`rate_limited` with `retry_after_ms`).
///
/// ```
/// use std::time::Duration;
/// use toolsmith::policy::RateLimit;
/// let limit = RateLimit::per_second(10).with_burst(5);
/// assert_eq!((limit.calls, limit.per, limit.burst), (10, Duration::from_secs(1), 5));
/// assert_eq!(RateLimit::per_minute(600), RateLimit::new(600, Duration::from_secs(60)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct RateLimit {
    /// Calls allowed per `per` (at least 1).
    pub calls: u32,
    /// The period.
    pub per: Duration,
    /// Calls that may go at once, before the even spacing applies (default 1).
    pub burst: u32,
}

impl RateLimit {
    /// `calls` per `per`, one at a time.
    #[must_use]
    pub const fn new(calls: u32, per: Duration) -> Self {
        Self {
            calls: if calls == 0 { 1 } else { calls },
            per,
            burst: 1,
        }
    }

    /// `calls` per second.
    #[must_use]
    pub const fn per_second(calls: u32) -> Self {
        Self::new(calls, Duration::from_secs(1))
    }

    /// `calls` per minute.
    #[must_use]
    pub const fn per_minute(calls: u32) -> Self {
        Self::new(calls, Duration::from_secs(60))
    }

    /// Lets up to `burst` calls go at once.
    #[must_use]
    pub const fn with_burst(mut self, burst: u32) -> Self {
        self.burst = if burst == 0 { 1 } else { burst };
        self
    }

    /// The time between two calls at the steady rate.
    #[must_use]
    pub fn interval(&self) -> Duration {
        self.per / self.calls.max(1)
    }
}

/// Execution settings of one tool; unset fields take the toolbox's.
///
/// ```
/// use std::time::Duration;
/// let policy = toolsmith::policy::ToolPolicy { timeout: Some(Duration::from_secs(5)), concurrency: Some(2), ..Default::default() };
/// assert!(!policy.sequential);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolPolicy {
    /// Time per attempt.
    pub timeout: Option<Duration>,
    /// Attempts per call.
    pub max_attempts: Option<u32>,
    /// Calls of this tool running at once.
    pub concurrency: Option<usize>,
    /// Runs alone: no other call runs while it does.
    pub sequential: bool,
    /// A tool to call when this one fails after its retries; its result is marked degraded.
    pub fallback: Option<String>,
    /// The retry timing of this tool (its attempts: `max_attempts`).
    pub retry: Option<RetryPolicy>,
    /// When this tool's circuit opens.
    pub circuit: Option<CircuitPolicy>,
    /// How far this write tool's derived idempotency keys reach (default: the run).
    pub idempotency_scope: Option<IdempotencyScope>,
    /// What happens to text in this tool's output that could steer a model (default:
    /// [`OutputSafety::Quarantine`] for `open_world` tools, [`OutputSafety::Neutralize`] for
    /// the others); see docs/output.md.
    pub output_safety: Option<OutputSafety>,
    /// Whether file-system paths in this tool's output are redacted (default: yes). A tool
    /// whose job is to return paths (a file search) turns it off; secrets are redacted
    /// whatever this says.
    pub redact_paths: Option<bool>,
    /// What happens to a result too large to give a model inline (default: the toolbox's,
    /// [`LargeResults::default`]).
    pub large_results: Option<LargeResults>,
    /// This tool's own rate limit, across every process that shares the toolbox's rate
    /// limiter ([`State::with_rate_limits`](crate::state::State::with_rate_limits)).
    pub rate_limit: Option<RateLimit>,
    /// The named upstream this tool calls, whose limit
    /// ([`Defaults::upstream_limits`](crate::policy::Defaults::upstream_limits)) it shares with
    /// every other tool that names it.
    pub upstream: Option<String>,
    /// How many calls of this tool may be refused for their arguments in one run before the
    /// model is told to stop calling it (the run goes on); the toolbox's
    /// (`Defaults::max_invalid`) when `None`.
    pub max_invalid: Option<u32>,
}

impl ToolPolicy {
    /// Each setting of `self`, and where `self` leaves one unset, `base`'s: a toolbox's
    /// override of a tool's own policy. `sequential` holds if either says so.
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolsmith::policy::ToolPolicy;
    ///
    /// let own = ToolPolicy { timeout: Some(Duration::from_secs(5)), max_attempts: Some(3), ..ToolPolicy::default() };
    /// let set = ToolPolicy { timeout: Some(Duration::from_secs(1)), ..ToolPolicy::default() };
    /// let policy = set.or(&own);
    /// assert_eq!(policy.timeout, Some(Duration::from_secs(1)));
    /// assert_eq!(policy.max_attempts, Some(3));
    /// ```
    #[must_use]
    pub fn or(&self, base: &ToolPolicy) -> ToolPolicy {
        // Every field named: a new setting does not compile until it is merged here.
        let Self {
            timeout,
            max_attempts,
            concurrency,
            sequential,
            fallback,
            retry,
            circuit,
            idempotency_scope,
            output_safety,
            redact_paths,
            large_results,
            rate_limit,
            upstream,
            max_invalid,
        } = self;
        ToolPolicy {
            timeout: timeout.or(base.timeout),
            max_attempts: max_attempts.or(base.max_attempts),
            concurrency: concurrency.or(base.concurrency),
            sequential: *sequential || base.sequential,
            fallback: fallback.clone().or_else(|| base.fallback.clone()),
            retry: retry.clone().or_else(|| base.retry.clone()),
            circuit: circuit.clone().or_else(|| base.circuit.clone()),
            idempotency_scope: idempotency_scope.or(base.idempotency_scope),
            output_safety: output_safety.or(base.output_safety),
            redact_paths: redact_paths.or(base.redact_paths),
            large_results: large_results.or(base.large_results),
            rate_limit: rate_limit.or(base.rate_limit),
            upstream: upstream.clone().or_else(|| base.upstream.clone()),
            max_invalid: max_invalid.or(base.max_invalid),
        }
    }
}

/// What happens to a tool's result when it is too large to give a model inline.
///
/// ```
/// use toolsmith::output::LargeResults;
/// assert_eq!(
///     LargeResults::default(),
///     LargeResults::Store { over_bytes: 10 * 1024, ttl: std::time::Duration::from_secs(3600) }
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LargeResults {
    /// Results whose JSON is longer than `over_bytes` are kept in the toolbox's result store
    /// for `ttl`; the model gets their reference, a summary and their start.
    Store {
        /// The largest result given inline, in bytes of JSON.
        over_bytes: usize,
        /// How long a stored result can be read.
        ttl: Duration,
    },
    /// Every result is given inline, whatever its size (the input limits still bound what
    /// a call can ask for; the tool must bound what it returns).
    Inline,
}

impl Default for LargeResults {
    fn default() -> Self {
        Self::Store {
            over_bytes: 10 * 1024,
            ttl: Duration::from_secs(3600),
        }
    }
}

/// What the runtime does with text in a tool's output that could steer the model reading it:
/// chat-template control tokens, role markup, instructions aimed at the model, terminal
/// escapes, invisible characters, hidden HTML (docs/output.md).
///
/// ```
/// use toolsmith::output::OutputSafety;
/// assert_eq!(OutputSafety::default(), OutputSafety::Neutralize);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OutputSafety {
    /// Escape what was found so it reads as data (`<|im_start|>` becomes
    /// `&lt;|im_start|&gt;`), and say so in the envelope (`"neutralized"`). Instructions
    /// cannot be escaped: when one is found the result is also marked untrusted.
    #[default]
    Neutralize,
    /// Neutralize, and always mark the data untrusted with where it came from
    /// (`"untrusted": {"source": ..., "notice": ...}`), findings or not.
    Quarantine,
    /// Withhold the whole result when anything is found: the model gets an `unsafe_output`
    /// error, and the audit record says so.
    Block,
}

/// How far a write tool's *derived* idempotency key reaches: which repeated calls with the
/// same arguments are taken as one action. A key the caller gives (`idempotency_key`) is its
/// own scope, whatever this says.
///
/// ```
/// use toolsmith::idempotency::IdempotencyScope;
/// assert_eq!(IdempotencyScope::default(), IdempotencyScope::Run);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IdempotencyScope {
    /// The default: calls with the same arguments in one run (one `ToolContext` run id) are one
    /// action, so a retry inside the run replays; the same call in another run acts again.
    /// A call without a run id has nothing to be the same action as: it always runs.
    #[default]
    Run,
    /// Every call of the tool by the same principal with the same arguments, in any run or
    /// none, within the store's TTL, is one action. For tools whose effect is a state, not an
    /// event (`set_status(ticket, closed)`), where a repeat can only ever mean a duplicate.
    Global,
}

impl Bound {
    /// The bound as a number compared exactly.
    #[inline]
    pub(crate) fn to_num(self) -> Num {
        match self {
            Self::Int(n) => Num::Int(i128::from(n)),
            Self::UInt(n) => Num::Int(i128::from(n)),
            Self::Float(f) => Num::Float(f),
        }
    }
}

/// Which bound of a `range` constraint: JSON Schema's `minimum`, `maximum`,
/// `exclusiveMinimum` and `exclusiveMaximum`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    Min,
    Max,
    ExclusiveMin,
    ExclusiveMax,
}

impl Side {
    /// Whether `n` is on the wrong side of `bound` (a number that does not compare is).
    #[inline]
    pub(crate) fn broken_by(self, n: Num, bound: Bound) -> bool {
        let order = n.compare(bound.to_num());
        !match self {
            Self::Min => matches!(order, Some(Ordering::Greater | Ordering::Equal)),
            Self::Max => matches!(order, Some(Ordering::Less | Ordering::Equal)),
            Self::ExclusiveMin => order == Some(Ordering::Greater),
            Self::ExclusiveMax => order == Some(Ordering::Less),
        }
    }
}

/// The bounds a `range` constraint sets, each with its side, in the order the schema lists
/// them; none for another constraint.
#[inline]
pub(crate) fn range_bounds(constraint: &Constraint) -> [(Option<Bound>, Side); 4] {
    let (min, max, exclusive_min, exclusive_max) = match *constraint {
        Constraint::Range {
            min,
            max,
            exclusive_min,
            exclusive_max,
        } => (min, max, exclusive_min, exclusive_max),
        _ => (None, None, None, None),
    };
    [
        (min, Side::Min),
        (max, Side::Max),
        (exclusive_min, Side::ExclusiveMin),
        (exclusive_max, Side::ExclusiveMax),
    ]
}

/// Whether `n` satisfies a `range` constraint.
#[inline]
pub(crate) fn in_range(n: Num, constraint: &Constraint) -> bool {
    let Constraint::Range {
        min,
        max,
        exclusive_min,
        exclusive_max,
    } = *constraint
    else {
        return true;
    };
    let kept = |bound: Option<Bound>, side: Side| bound.is_none_or(|b| !side.broken_by(n, b));
    kept(min, Side::Min)
        && kept(max, Side::Max)
        && kept(exclusive_min, Side::ExclusiveMin)
        && kept(exclusive_max, Side::ExclusiveMax)
}

/// Whether a length satisfies a `length` constraint.
#[inline]
pub(crate) fn in_length(len: usize, constraint: &Constraint) -> bool {
    let Constraint::Length { min, max, .. } = *constraint else {
        return true;
    };
    let len = len as u64;
    min.is_none_or(|m| len >= m) && max.is_none_or(|m| len <= m)
}

//! Trajectory checks over the audit log: which tools a run called, in what order, with what
//! arguments, and how many, against what a test expects; a report that names the first
//! difference, and a JUnit XML writer for CI.
//!
//! The orders are those of LangChain's agentevals: `strict` (the same calls in the same
//! order), `unordered` (the same calls in any order), `subset` (every call made was
//! expected) and `superset` (every expected call was made, others too).
//!
//! ```
//! use toolsmith::audit::MemorySink;
//! use toolsmith::serde_json::json;
//! use toolsmith::testing::{Call, Trajectory};
//! use toolsmith::{tool, ToolContext, Toolbox};
//!
//! /// Gets the weather in a city. Read-only. Not for forecasts.
//! #[tool(effect = "read")]
//! fn get_weather(
//!     /// The city.
//!     #[arg(length(max = 50))]
//!     city: String,
//! ) -> String {
//!     format!("sunny in {city}")
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let audit = std::sync::Arc::new(MemorySink::default());
//! let toolbox = Toolbox::new().with(GetWeather).with_audit(audit.clone());
//! toolbox.call("get_weather", json!({"city": "Oslo"}), &ToolContext::new()).await;
//!
//! let expected = Trajectory::strict([Call::tool("get_weather").with("/city", json!("Oslo"))]);
//! assert!(expected.check(&audit.records()).is_ok());
//!
//! let wrong = Trajectory::strict([Call::tool("get_weather").with("/city", json!("Paris"))]);
//! let difference = wrong.check(&audit.records()).unwrap_err();
//! assert_eq!(
//!     difference.to_string(),
//!     "call 1: expected `get_weather` with /city = \"Paris\", got `get_weather` with /city = \"Oslo\""
//! );
//! # });
//! ```

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::audit::AuditRecord;

/// What one argument of an expected call must be.
#[derive(Clone)]
#[non_exhaustive]
pub enum Matcher {
    /// Exactly this value.
    Equals(Value),
    /// Present, any value.
    Present,
    /// A string containing this text.
    Contains(String),
    /// Whatever the function accepts (named in reports by its label).
    Satisfies(String, Arc<dyn Fn(&Value) -> bool + Send + Sync>),
}

impl Matcher {
    fn accepts(&self, value: Option<&Value>) -> bool {
        match (self, value) {
            (_, None) => false,
            (Self::Equals(expected), Some(value)) => expected == value,
            (Self::Present, Some(_)) => true,
            (Self::Contains(text), Some(value)) => {
                value.as_str().is_some_and(|v| v.contains(text.as_str()))
            }
            (Self::Satisfies(_, f), Some(value)) => f(value),
        }
    }
}

impl fmt::Display for Matcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Equals(value) => write!(f, "= {value}"),
            Self::Present => f.write_str("present"),
            Self::Contains(text) => write!(f, "containing {text:?}"),
            Self::Satisfies(label, _) => write!(f, "{label}"),
        }
    }
}

impl fmt::Debug for Matcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// An expected call: its tool, and what its arguments must be (by JSON Pointer).
///
/// ```
/// use toolsmith::serde_json::json;
/// use toolsmith::testing::{Call, Matcher};
/// let call = Call::tool("search")
///     .with("/query", Matcher::Contains("weather".into()))
///     .with("/limit", json!(5));
/// assert_eq!(call.to_string(), "`search` with /query containing \"weather\", /limit = 5");
/// ```
#[derive(Clone, Debug)]
pub struct Call {
    tool: String,
    arguments: Vec<(String, Matcher)>,
}

impl Call {
    /// A call of `tool`, with any arguments.
    #[must_use]
    pub fn tool(tool: impl Into<String>) -> Self {
        Self {
            tool: tool.into(),
            arguments: Vec::new(),
        }
    }

    /// The argument at `pointer` (`/city`, `/filter/0`) must match: a value is
    /// [`Matcher::Equals`].
    #[must_use]
    pub fn with(mut self, pointer: impl Into<String>, matcher: impl Into<Matcher>) -> Self {
        self.arguments.push((pointer.into(), matcher.into()));
        self
    }

    fn accepts(&self, record: &AuditRecord) -> bool {
        record.tool == self.tool
            && self
                .arguments
                .iter()
                .all(|(pointer, m)| m.accepts(record.arguments.pointer(pointer)))
    }

    /// What `record` holds at this call's pointers, for a report.
    fn shown(&self, record: &AuditRecord) -> String {
        let mut text = format!("`{}`", record.tool);
        for (i, (pointer, _)) in self.arguments.iter().enumerate() {
            text.push_str(if i == 0 { " with " } else { ", " });
            match record.arguments.pointer(pointer) {
                Some(value) => text.push_str(&format!("{pointer} = {value}")),
                None => text.push_str(&format!("no {pointer}")),
            }
        }
        text
    }
}

impl From<Value> for Matcher {
    fn from(value: Value) -> Self {
        Self::Equals(value)
    }
}

impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`", self.tool)?;
        for (i, (pointer, matcher)) in self.arguments.iter().enumerate() {
            f.write_str(if i == 0 { " with " } else { ", " })?;
            write!(f, "{pointer} {matcher}")?;
        }
        Ok(())
    }
}

/// How the calls made are compared with those expected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// The same calls, in the same order.
    Strict,
    /// The same calls, in any order.
    Unordered,
    /// Every call made was expected (some expected calls may not have been made).
    Subset,
    /// Every expected call was made (other calls may have been made too).
    Superset,
}

/// The calls a test expects of a run, and how many it may make.
#[derive(Clone, Debug)]
pub struct Trajectory {
    calls: Vec<Call>,
    order: Order,
    max_calls: Option<usize>,
    max_turns: Option<u32>,
}

/// Where the calls made differ from those expected: the first difference, in words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference(String);

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Difference {}

impl Trajectory {
    /// The calls, in [`order`](Order).
    #[must_use]
    pub fn new(order: Order, calls: impl IntoIterator<Item = Call>) -> Self {
        Self {
            calls: calls.into_iter().collect(),
            order,
            max_calls: None,
            max_turns: None,
        }
    }

    /// The same calls in the same order ([`Order::Strict`]).
    #[must_use]
    pub fn strict(calls: impl IntoIterator<Item = Call>) -> Self {
        Self::new(Order::Strict, calls)
    }

    /// The same calls in any order ([`Order::Unordered`]).
    #[must_use]
    pub fn unordered(calls: impl IntoIterator<Item = Call>) -> Self {
        Self::new(Order::Unordered, calls)
    }

    /// Only expected calls ([`Order::Subset`]).
    #[must_use]
    pub fn subset(calls: impl IntoIterator<Item = Call>) -> Self {
        Self::new(Order::Subset, calls)
    }

    /// At least the expected calls ([`Order::Superset`]).
    #[must_use]
    pub fn superset(calls: impl IntoIterator<Item = Call>) -> Self {
        Self::new(Order::Superset, calls)
    }

    /// At most `calls` calls in all.
    #[must_use]
    pub fn max_calls(mut self, calls: usize) -> Self {
        self.max_calls = Some(calls);
        self
    }

    /// At most `turns` model requests in the run; checked by [`check_run`](Self::check_run),
    /// which reads them from the run's state.
    #[must_use]
    pub fn max_turns(mut self, turns: u32) -> Self {
        self.max_turns = Some(turns);
        self
    }

    /// Checks one agent run: its model requests against [`max_turns`](Self::max_turns), and
    /// its calls as [`check`](Self::check) does, of the records that carry the run's id
    /// (all of them when the run has none, as a run given no id records none).
    ///
    /// ```
    /// use toolsmith::agent::{Agent, ScriptedModel};
    /// use toolsmith::audit::MemorySink;
    /// use toolsmith::serde_json::json;
    /// use toolsmith::testing::{Call, Trajectory};
    /// use toolsmith::{tool, Dialect, ToolContext, Toolbox};
    ///
    /// /// Gets the weather in a city. Read-only. Not for forecasts.
    /// #[tool(effect = "read")]
    /// fn get_weather(
    ///     /// The city.
    ///     #[arg(length(max = 50))]
    ///     city: String,
    /// ) -> String {
    ///     format!("sunny in {city}")
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let audit = std::sync::Arc::new(MemorySink::default());
    /// let call = |city: &str| json!({"choices": [{"message": {"role": "assistant", "tool_calls": [
    ///     {"id": city, "type": "function", "function": {"name": "get_weather",
    ///      "arguments": json!({"city": city}).to_string()}}]}}]});
    /// let model = ScriptedModel::new([
    ///     call("Oslo"),
    ///     call("Oslo"),
    ///     json!({"choices": [{"message": {"role": "assistant", "content": "Sunny."}}]}),
    /// ]);
    /// let toolbox = Toolbox::new().with(GetWeather).with_audit(audit.clone());
    /// let agent = Agent::new(toolbox, Dialect::OpenAiChat { strict: false }, model);
    /// let mut state = agent.start("Weather in Oslo?");
    /// agent.run(&mut state, &ToolContext::new()).await.unwrap();
    ///
    /// let once = Trajectory::superset([Call::tool("get_weather")]).max_turns(2);
    /// let difference = once.check_run(&audit.records(), &state).unwrap_err();
    /// assert_eq!(difference.to_string(), "the run asked the model 3 times; at most 2 were expected");
    /// # });
    /// ```
    ///
    /// # Errors
    ///
    /// The first [`Difference`].
    pub fn check_run(
        &self,
        records: &[AuditRecord],
        state: &crate::agent::RunState,
    ) -> Result<(), Difference> {
        if let Some(max) = self.max_turns
            && state.turns() > max
        {
            return Err(Difference(format!(
                "the run asked the model {} times; at most {max} were expected",
                state.turns()
            )));
        }
        let own: Vec<AuditRecord> = match state.run_id() {
            Some(id) => records
                .iter()
                .filter(|r| r.run_id.as_deref() == Some(id))
                .cloned()
                .collect(),
            None => records.to_vec(),
        };
        self.calls_hold(&own)
    }

    /// Checks the calls `records` hold (a toolbox's audit log: a program's calls included,
    /// and a delegated agent's when its toolbox shares the sink), in the order they began
    /// (to the millisecond; calls that began in the same millisecond in the order they
    /// ended).
    ///
    /// # Errors
    ///
    /// The first [`Difference`].
    pub fn check(&self, records: &[AuditRecord]) -> Result<(), Difference> {
        if self.max_turns.is_some() {
            return Err(Difference(
                "a turn budget is checked against a run: use `check_run` with the run's state"
                    .to_owned(),
            ));
        }
        self.calls_hold(records)
    }

    fn calls_hold(&self, records: &[AuditRecord]) -> Result<(), Difference> {
        let mut ordered: Vec<&AuditRecord> = records.iter().collect();
        ordered.sort_by_key(|r| r.time_unix_ms);
        let records = ordered.as_slice();
        if let Some(max) = self.max_calls
            && records.len() > max
        {
            return Err(Difference(format!(
                "{} calls were made; at most {max} were expected",
                records.len()
            )));
        }
        match self.order {
            Order::Strict => self.strict_check(records),
            Order::Unordered => {
                if records.len() != self.calls.len() {
                    return Err(self.counted(records));
                }
                self.matched(records, true, true)
            }
            Order::Subset => self.matched(records, false, true),
            Order::Superset => self.matched(records, true, false),
        }
    }

    fn strict_check(&self, records: &[&AuditRecord]) -> Result<(), Difference> {
        for (i, (call, record)) in self.calls.iter().zip(records).enumerate() {
            if !call.accepts(record) {
                return Err(Difference(format!(
                    "call {}: expected {call}, got {}",
                    i + 1,
                    call.shown(record)
                )));
            }
        }
        if records.len() != self.calls.len() {
            return Err(self.counted(records));
        }
        Ok(())
    }

    fn counted(&self, records: &[&AuditRecord]) -> Difference {
        let made: Vec<String> = records.iter().map(|r| format!("`{}`", r.tool)).collect();
        Difference(format!(
            "{} calls were made ({}); {} were expected",
            records.len(),
            made.join(", "),
            self.calls.len()
        ))
    }

    /// Matches expected calls with calls made, one to one, as many as can be (matchers can
    /// overlap, so this is a matching, not a greedy pass): every expected call must have a
    /// match when `all_expected`, every call made when `all_made`.
    fn matched(
        &self,
        records: &[&AuditRecord],
        all_expected: bool,
        all_made: bool,
    ) -> Result<(), Difference> {
        let of_call = matching(&self.calls, records);
        if all_expected && let Some(i) = of_call.iter().position(Option::is_none) {
            return Err(Difference(format!(
                "expected {}, which was not made",
                self.calls[i]
            )));
        }
        if all_made && let Some(extra) = (0..records.len()).find(|r| !of_call.contains(&Some(*r))) {
            return Err(Difference(format!(
                "call {} (`{}` with {}) was not expected",
                extra + 1,
                records[extra].tool,
                crate::echo::echo(&records[extra].arguments.to_string())
            )));
        }
        Ok(())
    }
}

/// A maximum one-to-one matching of expected calls with records (Kuhn's augmenting paths):
/// for each expected call, the record it takes, if any.
fn matching(calls: &[Call], records: &[&AuditRecord]) -> Vec<Option<usize>> {
    let mut owner: Vec<Option<usize>> = vec![None; records.len()];
    for call in 0..calls.len() {
        let mut seen = vec![false; records.len()];
        augment(call, calls, records, &mut owner, &mut seen);
    }
    let mut of_call = vec![None; calls.len()];
    for (record, call) in owner.iter().enumerate() {
        if let Some(call) = call {
            of_call[*call] = Some(record);
        }
    }
    of_call
}

fn augment(
    call: usize,
    calls: &[Call],
    records: &[&AuditRecord],
    owner: &mut [Option<usize>],
    seen: &mut [bool],
) -> bool {
    for record in 0..records.len() {
        if seen[record] || !calls[call].accepts(records[record]) {
            continue;
        }
        seen[record] = true;
        let free = match owner[record] {
            None => true,
            Some(other) => augment(other, calls, records, owner, seen),
        };
        if free {
            owner[record] = Some(call);
            return true;
        }
    }
    false
}

/// A JUnit XML report of named checks, for CI: one test case per check, a failure with the
/// difference for each that failed.
///
/// ```
/// use toolsmith::testing::{junit, Difference};
/// let xml = junit("agent", &[("weather", Ok(())), ("booking", Err(Difference::new("call 1: expected `book`")))]);
/// assert!(xml.contains(r#"<testsuite name="agent" tests="2" failures="1">"#));
/// assert!(xml.contains(r#"<failure message="call 1: expected `book`"/>"#));
/// ```
#[must_use]
pub fn junit(suite: &str, checks: &[(&str, Result<(), Difference>)]) -> String {
    let failures = checks.iter().filter(|(_, r)| r.is_err()).count();
    let mut xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\">\n",
        escape(suite),
        checks.len()
    );
    for (name, result) in checks {
        match result {
            Ok(()) => xml.push_str(&format!("  <testcase name=\"{}\"/>\n", escape(name))),
            Err(difference) => xml.push_str(&format!(
                "  <testcase name=\"{}\"><failure message=\"{}\"/></testcase>\n",
                escape(name),
                escape(&difference.0)
            )),
        }
    }
    xml.push_str("</testsuite>\n");
    xml
}

impl Difference {
    /// A difference in these words (for a check of your own in a [`junit`] report).
    #[must_use]
    pub fn new(words: impl Into<String>) -> Self {
        Self(words.into())
    }
}

/// Text for an XML attribute.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => {}
            c => out.push(c),
        }
    }
    out
}

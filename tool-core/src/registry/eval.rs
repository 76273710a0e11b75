//! Tool-selection evaluations: cases in JSON lines (the user's request, the tools offered, the
//! tool the model should call first, arguments it must not send), scored against model
//! responses recorded in any dialect; and golden call sequences, the calls one run made,
//! compared with a later run's.
//!
//! ```
//! use toolsmith::registry::eval::{EvalCase, Evaluator};
//! use toolsmith::serde_json::json;
//! use toolsmith::{Dialect, Toolbox};
//!
//! /// Finds a customer by name. Read-only. Not for invoices.
//! #[toolsmith::tool(effect = "read")]
//! fn search_customer(
//!     /// Part of the name.
//!     #[arg(length(max = 80))]
//!     name: String,
//! ) -> Vec<String> {
//!     vec![name]
//! }
//!
//! // One case per line.
//! let cases = EvalCase::parse_lines(concat!(
//!     r#"{"id": "acme", "request": "Find Acme's invoices", "tools": ["search_customer"], "#,
//!     r#""expected": {"first_tool": "search_customer", "forbidden_arguments": ["customer_id"]}}"#,
//! )).unwrap();
//! // What the model answered, recorded (an OpenAI chat completion).
//! let response = json!({"choices": [{"message": {"role": "assistant", "tool_calls": [{
//!     "id": "c1", "type": "function",
//!     "function": {"name": "search_customer", "arguments": "{\"name\": \"Acme\"}"}}]}}]});
//! let toolbox = Toolbox::new().with(SearchCustomer);
//! let score = Evaluator::new(&toolbox).score(&cases[0], Dialect::OpenAiChat { strict: false }, &response);
//! assert!(score.passed(), "{score:?}");
//! ```

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::dialect::Dialect;
use crate::provider::ToolCall;
use crate::toolbox::Toolbox;

/// One tool-selection case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct EvalCase {
    /// A name for the case, unique in its file.
    pub id: String,
    /// What the user asked.
    #[serde(alias = "user_input")]
    pub request: String,
    /// The tools offered to the model, by registered name (empty: all).
    #[serde(default, alias = "available_tools")]
    pub tools: Vec<String>,
    /// What a good answer does.
    pub expected: Expected,
}

/// What a good answer to an [`EvalCase`] does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Expected {
    /// The tool the model should call first (registered name).
    pub first_tool: String,
    /// Arguments that must not appear in that call: `"name"` (not sent at all) or
    /// `"name=value"` (not with that value: a string as it is, anything else as JSON).
    #[serde(default)]
    pub forbidden_arguments: Vec<String>,
    /// Why, for the reader.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A problem with an evaluation file.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct EvalError {
    /// The line (from 1).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for EvalError {}

impl EvalCase {
    /// The cases of a JSON-lines text (blank lines and lines starting with `//` skipped).
    ///
    /// # Errors
    ///
    /// An [`EvalError`] for the first line that is not a case, or a repeated id.
    pub fn parse_lines(text: &str) -> Result<Vec<Self>, EvalError> {
        let mut cases: Vec<Self> = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with("//") {
                continue;
            }
            let case: Self = serde_json::from_str(line).map_err(|e| EvalError {
                line: n + 1,
                message: e.to_string(),
            })?;
            if cases.iter().any(|c| c.id == case.id) {
                return Err(EvalError {
                    line: n + 1,
                    message: format!("the id `{}` is used twice", case.id),
                });
            }
            cases.push(case);
        }
        Ok(cases)
    }
}

/// How one recorded answer did on its case.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Score {
    /// The case.
    pub case: String,
    /// The tool it should have called first.
    pub expected_tool: String,
    /// The tool it called first (registered name; the provider's name when unknown), if any.
    pub called_tool: Option<String>,
    /// Whether that is the expected tool.
    pub right_tool: bool,
    /// Whether the call's arguments fit the tool's schema.
    pub valid_arguments: bool,
    /// The forbidden arguments it sent.
    pub forbidden: Vec<String>,
    /// What went wrong, in words.
    pub problems: Vec<String>,
}

impl Score {
    /// The score of `case` before anything is known: nothing right, and `problem`.
    fn failed(case: &EvalCase, problem: Option<&str>) -> Self {
        Self {
            case: case.id.clone(),
            expected_tool: case.expected.first_tool.clone(),
            called_tool: None,
            right_tool: false,
            valid_arguments: false,
            forbidden: Vec::new(),
            problems: problem.map(str::to_owned).into_iter().collect(),
        }
    }

    /// Right tool, valid arguments, nothing forbidden.
    #[must_use]
    pub fn passed(&self) -> bool {
        self.right_tool && self.valid_arguments && self.forbidden.is_empty()
    }
}

/// Scores recorded model answers against cases, with the tools of one toolbox.
pub struct Evaluator<'t> {
    toolbox: &'t Toolbox,
}

impl<'t> Evaluator<'t> {
    /// An evaluator for `toolbox`'s tools.
    #[must_use]
    pub fn new(toolbox: &'t Toolbox) -> Self {
        Self { toolbox }
    }

    /// How `response` (a provider's answer in `dialect`, as recorded) did on `case`.
    #[must_use]
    pub fn score(&self, case: &EvalCase, dialect: Dialect, response: &Value) -> Score {
        let mut score = Score::failed(case, None);
        let calls = match ToolCall::parse(dialect, response) {
            Ok(calls) => calls,
            Err(err) => {
                score.problems.push(format!(
                    "the response does not read as {}: {err}",
                    dialect.name()
                ));
                return score;
            }
        };
        let Some(call) = calls.first() else {
            score.problems.push("the model called no tool".to_owned());
            return score;
        };
        let tool = self.toolbox.resolve(dialect, &call.name);
        let name = tool.map_or_else(|| call.name.clone(), |t| t.definition().name().to_owned());
        score.right_tool = name == case.expected.first_tool;
        if !score.right_tool {
            score.problems.push(format!(
                "called `{}` first, not `{}`",
                crate::echo::echo(&name),
                case.expected.first_tool
            ));
        }
        if !case.tools.is_empty() && !case.tools.contains(&name) {
            score.right_tool = false;
            score
                .problems
                .push(format!("`{}` was not offered", crate::echo::echo(&name)));
        }
        // Valid arguments are judged in their canonical form, as the toolbox reads them:
        // `null` for an optional parameter is not sending it, a default left out is the
        // default.
        let canonical = match tool {
            None => {
                score
                    .problems
                    .push("no such tool in the toolbox".to_owned());
                None
            }
            Some(tool) => match tool.definition().canonical_arguments(call.arguments()) {
                Ok(canonical) => {
                    score.valid_arguments = true;
                    Some(canonical)
                }
                Err(err) => {
                    score
                        .problems
                        .push(format!("invalid arguments: {}", err.message()));
                    None
                }
            },
        };
        score.called_tool = Some(name);
        let arguments = canonical.unwrap_or_else(|| match &call.arguments {
            Value::String(text) => serde_json::from_str(text).unwrap_or(Value::Null),
            other => other.clone(),
        });
        for rule in &case.expected.forbidden_arguments {
            let (key, value) = match rule.split_once('=') {
                Some((key, value)) => (key, Some(value)),
                None => (rule.as_str(), None),
            };
            let Some(sent) = arguments.get(key) else {
                continue;
            };
            let hit = match value {
                None => true,
                Some(value) => match sent {
                    Value::String(text) => text == value,
                    other => serde_json::to_string(other).is_ok_and(|text| text == value),
                },
            };
            if hit {
                score.forbidden.push(rule.clone());
                score
                    .problems
                    .push(format!("sent the forbidden argument `{rule}`"));
            }
        }
        score
    }
}

/// One recorded answer, as a line of a recordings file: the case it answers, the dialect it
/// is in, and the provider's response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Recorded {
    /// The case's id.
    pub case: String,
    /// The dialect's name (`openai`, `openai-responses`, `anthropic`, `gemini`, `mcp`, ...).
    pub dialect: String,
    /// The response as the provider sent it.
    pub response: Value,
}

impl Evaluator<'_> {
    /// Scores every recorded answer in `recorded` (JSON lines of [`Recorded`]) against its
    /// case; a case without an answer fails.
    ///
    /// # Errors
    ///
    /// An [`EvalError`] for a line that is not a recorded answer, names an unknown case or
    /// an unknown dialect.
    pub fn run(&self, cases: &[EvalCase], recorded: &str) -> Result<EvalReport, EvalError> {
        let mut scores = Vec::new();
        let mut answered = std::collections::BTreeSet::new();
        for (n, line) in recorded.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let fail = |message: String| EvalError {
                line: n + 1,
                message,
            };
            let answer: Recorded = serde_json::from_str(line).map_err(|e| fail(e.to_string()))?;
            let case = cases
                .iter()
                .find(|c| c.id == answer.case)
                .ok_or_else(|| fail(format!("no case `{}`", crate::echo::echo(&answer.case))))?;
            let dialect: Dialect = answer.dialect.parse().map_err(|e| fail(format!("{e}")))?;
            answered.insert(case.id.clone());
            scores.push(self.score(case, dialect, &answer.response));
        }
        for case in cases.iter().filter(|c| !answered.contains(&c.id)) {
            scores.push(Score::failed(case, Some("no recorded answer")));
        }
        Ok(EvalReport::new(scores))
    }
}

/// Scores by expected tool: how many cases, and how many got the right tool, valid
/// arguments, nothing forbidden, and passed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct EvalReport {
    /// Per expected tool.
    pub tools: BTreeMap<String, ToolTally>,
    /// Every case that did not pass.
    pub failures: Vec<Score>,
}

/// The counts of one tool in an [`EvalReport`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolTally {
    /// Cases expecting this tool.
    pub cases: usize,
    /// Answers that called it first.
    pub right_tool: usize,
    /// Answers whose first call's arguments were valid.
    pub valid_arguments: usize,
    /// Answers without a forbidden argument.
    pub clean: usize,
    /// Answers that passed.
    pub passed: usize,
}

impl EvalReport {
    /// The report of `scores`.
    #[must_use]
    pub fn new(scores: impl IntoIterator<Item = Score>) -> Self {
        let mut report = Self::default();
        for score in scores {
            let tally = report.tools.entry(score.expected_tool.clone()).or_default();
            tally.cases += 1;
            tally.right_tool += usize::from(score.right_tool);
            tally.valid_arguments += usize::from(score.valid_arguments);
            tally.clean += usize::from(score.forbidden.is_empty());
            tally.passed += usize::from(score.passed());
            if !score.passed() {
                report.failures.push(score);
            }
        }
        report
    }

    /// Cases in all, and those that passed.
    #[must_use]
    pub fn totals(&self) -> (usize, usize) {
        self.tools
            .values()
            .fold((0, 0), |(c, p), t| (c + t.cases, p + t.passed))
    }
}

impl fmt::Display for EvalReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "| tool | cases | right tool | valid arguments | no forbidden argument | passed |"
        )?;
        writeln!(f, "|---|---|---|---|---|---|")?;
        for (tool, t) in &self.tools {
            writeln!(
                f,
                "| {tool} | {} | {} | {} | {} | {} |",
                t.cases, t.right_tool, t.valid_arguments, t.clean, t.passed
            )?;
        }
        let (cases, passed) = self.totals();
        writeln!(f, "{passed} of {cases} passed")?;
        for score in &self.failures {
            writeln!(f, "- {}: {}", score.case, score.problems.join("; "))?;
        }
        Ok(())
    }
}

/// One call of a recorded run: the tool (registered name) and its arguments.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RecordedCall {
    /// The tool.
    pub tool: String,
    /// Its arguments (redacted as the audit record has them).
    pub arguments: Value,
}

/// Records the calls a toolbox runs, in order: add it with
/// [`Toolbox::with_audit`](crate::Toolbox::with_audit), run, then take the calls and keep
/// them as a golden sequence ([`to_lines`]) or compare them with one ([`compare`]).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// use toolsmith::registry::eval::{compare, Recorder};
/// /// Adds two numbers. Pure. Not for money.
/// #[toolsmith::tool(effect = "read")]
/// fn add(
///     /// The first number.
///     a: i32,
///     /// The second number.
///     b: i32,
/// ) -> i32 { a + b }
/// let recorder = Recorder::new();
/// let toolbox = toolsmith::Toolbox::new().with(Add).with_audit(recorder.clone());
/// toolbox.call("add", toolsmith::serde_json::json!({"a": 1, "b": 2}), &toolsmith::ToolContext::new()).await;
/// let golden = recorder.calls();
/// assert!(compare(&golden, &recorder.calls()).is_empty());
/// # });
/// ```
#[derive(Clone, Default)]
pub struct Recorder {
    calls: std::sync::Arc<std::sync::Mutex<Vec<RecordedCall>>>,
}

impl Recorder {
    /// An empty recorder.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The calls recorded so far, in order.
    #[must_use]
    pub fn calls(&self) -> Vec<RecordedCall> {
        self.calls.lock().map(|c| c.clone()).unwrap_or_default()
    }
}

impl crate::policy::audit::AuditSink for Recorder {
    fn record(&self, record: &crate::policy::audit::AuditRecord) {
        if let Ok(mut calls) = self.calls.lock() {
            calls.push(RecordedCall {
                tool: record.tool.clone(),
                arguments: record.arguments.clone(),
            });
        }
    }
}

/// A call sequence as JSON lines, one call per line.
#[must_use]
pub fn to_lines(calls: &[RecordedCall]) -> String {
    calls
        .iter()
        .map(|c| format!("{}\n", serde_json::to_string(c).unwrap_or_default()))
        .collect()
}

/// A call sequence read from JSON lines.
///
/// # Errors
///
/// An [`EvalError`] for the first line that is not a call.
pub fn from_lines(text: &str) -> Result<Vec<RecordedCall>, EvalError> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(n, line)| {
            serde_json::from_str(line).map_err(|e| EvalError {
                line: n + 1,
                message: e.to_string(),
            })
        })
        .collect()
}

/// Where a run's calls differ from the golden sequence: one line per difference (empty when
/// they are the same).
#[must_use]
pub fn compare(golden: &[RecordedCall], run: &[RecordedCall]) -> Vec<String> {
    let mut out = Vec::new();
    for (n, pair) in golden.iter().zip(run).enumerate() {
        let (want, got) = pair;
        if want.tool != got.tool {
            out.push(format!(
                "call {}: `{}` instead of `{}`",
                n + 1,
                got.tool,
                want.tool
            ));
        } else if want.arguments != got.arguments {
            out.push(format!(
                "call {} of `{}`: arguments {} instead of {}",
                n + 1,
                got.tool,
                crate::echo::echo(&got.arguments.to_string()),
                crate::echo::echo(&want.arguments.to_string())
            ));
        }
    }
    for (n, extra) in run.iter().enumerate().skip(golden.len()) {
        out.push(format!(
            "call {}: `{}` was not in the golden run",
            n + 1,
            extra.tool
        ));
    }
    for (n, missing) in golden.iter().enumerate().skip(run.len()) {
        out.push(format!("call {}: `{}` is missing", n + 1, missing.tool));
    }
    out
}

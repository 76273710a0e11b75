//! Code mode on this machine: the model writes a short Python program that calls tools, and
//! only the program's answer enters the conversation.
//!
//! A [`Sandbox`] offers some of a toolbox's tools to programs. Its [`RunCode`] tool (named
//! `run_code`) takes a program's source; its description carries each offered tool as a
//! typed Python signature ([`code::Signature`](crate::code::Signature)), so the model knows every
//! argument and the shape of every result. The program runs in
//! [Monty](https://github.com/pydantic/monty), a Python interpreter written in Rust that has
//! no files, no network, no clock and no environment: each tool call pauses it, and the call
//! goes through the toolbox's one door ([`Toolbox::admit`]) exactly as a direct call would,
//! with validation, authorization, guards, idempotency, approval, budgets, circuits, audit
//! (each record names the `run_code` call as its
//! [`parent_call_id`](crate::audit::AuditRecord::parent_call_id)) and the output checks.
//!
//! ```
//! use std::sync::Arc;
//! use toolsmith::sandbox::{Limits, Sandbox};
//! use toolsmith::{tool, ToolContext, Toolbox};
//!
//! /// Lists the open tickets' ids. Read-only. Not for closed tickets.
//! #[tool(effect = "read")]
//! fn list_tickets() -> Vec<u32> {
//!     vec![1, 2, 3, 4]
//! }
//!
//! /// Gets a ticket's priority, 1 (low) to 3 (high). Read-only. Not for closed tickets.
//! #[tool(effect = "read")]
//! fn get_priority(
//!     /// The ticket's id.
//!     #[arg(range(max = 1000))]
//!     id: u32,
//! ) -> u8 {
//!     if id % 2 == 0 { 3 } else { 1 }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let tools = Arc::new(Toolbox::new().with(ListTickets).with(GetPriority));
//! let sandbox = Sandbox::builder(tools).limits(Limits::default().calls(20)).build().unwrap();
//! let program = "[t for t in list_tickets() if get_priority(id=t) == 3]";
//! let answer = sandbox.run(program, &ToolContext::new()).await.unwrap();
//! assert_eq!(answer.result, toolsmith::serde_json::json!([2, 4]));
//! assert_eq!(answer.calls, 5);
//!
//! // The model gets one tool, `run_code`, whose description shows the typed signatures.
//! let outer = Toolbox::new().with(sandbox.tool());
//! let description = outer.get("run_code").unwrap().definition().description().to_owned();
//! assert!(description.contains("def get_priority(*, id: int) -> int:"));
//! # });
//! ```

mod interp;
mod journal;
mod run;
mod value;
pub mod worker;

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::arguments::Arguments;
use crate::code::{PRELUDE, Signature};
use crate::context::ToolContext;
use crate::definition::ToolDefinition;
use crate::lint::{LintFinding, LintLevel};
use crate::outcome::ToolOutcome;
use crate::provider::Offer;
use crate::spec::{Effect, ToolPolicy};
use crate::tool::{BoxFuture, Tool};
use crate::toolbox::Toolbox;

/// The name of the tool that runs programs.
pub const RUN_CODE: &str = "run_code";

/// What a program may spend. Each limit ends the program with its own error when passed; the
/// defaults suit a model's short programs.
///
/// ```
/// use std::time::Duration;
/// use toolsmith::sandbox::Limits;
/// let limits = Limits::default().time(Duration::from_millis(500)).calls(10);
/// assert_eq!(limits.max_calls(), 10);
/// assert_eq!(Limits::default().max_output_bytes(), 64 * 1024);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    time: Duration,
    wall_time: Duration,
    memory: usize,
    recursion: usize,
    calls: u32,
    in_flight: usize,
    output_bytes: usize,
    source_bytes: usize,
}

impl Default for Limits {
    /// 2 s of interpreter time, 60 s in all, 64 MiB of memory, recursion 200 deep, 50 tool
    /// calls made one at a time, 64 KiB of answer and printed text, 32 KiB of source.
    fn default() -> Self {
        Self {
            time: Duration::from_secs(2),
            wall_time: Duration::from_secs(60),
            memory: 64 * 1024 * 1024,
            recursion: 200,
            calls: 50,
            in_flight: 1,
            output_bytes: 64 * 1024,
            source_bytes: 32 * 1024,
        }
    }
}

impl Limits {
    /// The interpreter's own running time (the clock stops while a tool call runs): the
    /// bound on how many steps a program takes. Past it: a `timeout` error.
    #[must_use]
    pub fn time(mut self, time: Duration) -> Self {
        self.time = time;
        self
    }

    /// The whole program's time, its tool calls included. Past it: a `timeout` error.
    #[must_use]
    pub fn wall_time(mut self, time: Duration) -> Self {
        self.wall_time = time;
        self
    }

    /// How many bytes the program's values may take. Past it: a `budget_exhausted` error.
    ///
    /// In this process (the default), the interpreter refuses up front any value it can
    /// size before making it past the limit (`"a" * 10**10`, `[0] * 10**9`, `2 ** 10**9`,
    /// a `replace` that grows a string); memory a program gathers a little at a time is
    /// bounded only by its interpreter time. A sandbox with a [worker](SandboxBuilder::worker)
    /// counts every byte: the limit holds exactly.
    #[must_use]
    pub fn memory(mut self, bytes: usize) -> Self {
        self.memory = bytes;
        self
    }

    /// How deep the program's own functions may call each other (a catchable
    /// `RecursionError` past it, as in Python).
    #[must_use]
    pub fn recursion(mut self, depth: usize) -> Self {
        self.recursion = depth;
        self
    }

    /// How many tool calls one program may make. The first call past it ends the program
    /// with a `budget_exhausted` error.
    #[must_use]
    pub fn calls(mut self, calls: u32) -> Self {
        self.calls = calls;
        self
    }

    /// How many of a program's tool calls may run at once (at least 1, the default).
    ///
    /// At 1 the tools are plain functions: each call runs as the program makes it, one after
    /// another. Above 1 they are `async def` (the signatures and `run_code`'s description
    /// say so): the program awaits each call, and runs several at once with
    /// `asyncio.gather(...)`, at most this many at a time. Either way each call goes through
    /// the door on its own, is numbered in the order the program made it, and is kept in the
    /// journal.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use toolsmith::sandbox::{Limits, Sandbox};
    /// use toolsmith::{tool, ToolContext, Toolbox};
    ///
    /// /// Doubles a number. Read-only. Not for floats.
    /// #[tool(effect = "read")]
    /// async fn double(
    ///     /// The number.
    ///     #[arg(range(max = 1000))]
    ///     n: u32,
    /// ) -> u32 {
    ///     n * 2
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let tools = Arc::new(Toolbox::new().with(Double));
    /// let sandbox = Sandbox::builder(tools).limits(Limits::default().in_flight(4)).build().unwrap();
    /// assert!(sandbox.signatures().contains("async def double(*, n: int) -> int:"));
    /// let program = "import asyncio\nawait asyncio.gather(*[double(n=i) for i in range(6)])";
    /// let answer = sandbox.run(program, &ToolContext::new()).await.unwrap();
    /// assert_eq!(answer.result, toolsmith::serde_json::json!([0, 2, 4, 6, 8, 10]));
    /// # });
    /// ```
    #[must_use]
    pub fn in_flight(mut self, calls: usize) -> Self {
        self.in_flight = calls.max(1);
        self
    }

    /// How many bytes the program's answer (as JSON) and its printed text may take together.
    /// Past it: an `invalid_arguments` error asking for a smaller answer.
    #[must_use]
    pub fn output_bytes(mut self, bytes: usize) -> Self {
        self.output_bytes = bytes;
        self
    }

    /// How long a program's source may be, in bytes (the `maxLength` of `run_code`'s `code`).
    #[must_use]
    pub fn source_bytes(mut self, bytes: usize) -> Self {
        self.source_bytes = bytes;
        self
    }

    /// The interpreter time limit.
    #[must_use]
    pub fn max_time(&self) -> Duration {
        self.time
    }

    /// The whole program's time limit.
    #[must_use]
    pub fn max_wall_time(&self) -> Duration {
        self.wall_time
    }

    /// The memory limit, in bytes.
    #[must_use]
    pub fn max_memory(&self) -> usize {
        self.memory
    }

    /// The recursion limit.
    #[must_use]
    pub fn max_recursion(&self) -> usize {
        self.recursion
    }

    /// The calls-in-flight limit.
    #[must_use]
    pub fn max_in_flight(&self) -> usize {
        self.in_flight
    }

    /// The tool-call limit.
    #[must_use]
    pub fn max_calls(&self) -> u32 {
        self.calls
    }

    /// The answer-and-printed-text limit.
    #[must_use]
    pub fn max_output_bytes(&self) -> usize {
        self.output_bytes
    }

    /// The source limit.
    #[must_use]
    pub fn max_source_bytes(&self) -> usize {
        self.source_bytes
    }
}

/// What a program gave back: the value of its last expression, what it printed, and how
/// many tool calls it made. `run_code`'s result is this, as JSON.
///
/// ```
/// use std::sync::Arc;
/// use toolsmith::sandbox::Sandbox;
/// use toolsmith::{tool, ToolContext, Toolbox};
///
/// /// Says hello. Read-only. Not for real conversations.
/// #[tool(effect = "read")]
/// fn say_hello() -> String { "hello".into() }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let sandbox = Sandbox::builder(Arc::new(Toolbox::new().with(SayHello))).build().unwrap();
/// let answer = sandbox.run("print('saying it')\nsay_hello().upper()", &ToolContext::new()).await.unwrap();
/// assert_eq!(answer.result, "HELLO");
/// assert_eq!(answer.printed, "saying it\n");
/// assert_eq!(answer.calls, 1);
/// # });
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProgramAnswer {
    /// The value of the program's last line, as JSON (`null` when the last line is a
    /// statement).
    pub result: Value,
    /// What the program printed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub printed: String,
    /// How many tool calls it made.
    pub calls: u32,
}

/// Why a sandbox could not be built.
///
/// ```
/// use std::sync::Arc;
/// use toolsmith::sandbox::{Sandbox, SandboxError};
/// use toolsmith::Toolbox;
///
/// let empty = Sandbox::builder(Arc::new(Toolbox::new())).build().unwrap_err();
/// assert_eq!(empty, SandboxError::NoTools);
/// let missing = Sandbox::builder(Arc::new(Toolbox::new())).only(["send_email"]).build().unwrap_err();
/// assert_eq!(missing.to_string(), "the toolbox has no tool `send_email` to offer");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SandboxError {
    /// A tool named to offer is not in the toolbox.
    UnknownTool(String),
    /// Two offered tools have the same Python name (`a.b` and `a_b` are both `a_b`).
    SameName(String, String),
    /// No tool is offered.
    NoTools,
}

impl fmt::Display for SandboxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownTool(name) => write!(f, "the toolbox has no tool `{name}` to offer"),
            Self::SameName(a, b) => write!(
                f,
                "tools `{a}` and `{b}` have the same Python name; offer one of them, or rename one with a toolset"
            ),
            Self::NoTools => write!(f, "a sandbox needs at least one tool to offer"),
        }
    }
}

impl std::error::Error for SandboxError {}

/// One tool call a program made, as it ended: for
/// [`SandboxBuilder::on_call`], which shows a program's steps to the application.
#[derive(Debug)]
#[non_exhaustive]
pub struct ChildCall<'a> {
    /// The tool's registered name.
    pub tool: &'a str,
    /// The call's id (`<program's call id>.<n>`).
    pub call_id: &'a str,
    /// The program's call id.
    pub parent_call_id: &'a str,
    /// The outcome, as a direct call of the tool would have had it.
    pub outcome: &'a ToolOutcome,
}

type OnCall = Arc<dyn Fn(&ChildCall<'_>) + Send + Sync>;

/// Builds a [`Sandbox`]: which tools, which limits.
#[must_use]
pub struct SandboxBuilder {
    toolbox: Arc<Toolbox>,
    only: Option<Vec<String>>,
    limits: Limits,
    on_call: Option<OnCall>,
    worker: Option<PathBuf>,
}

impl SandboxBuilder {
    /// Runs each program in a worker process of its own, started from the binary at `path`
    /// (for one, `toolsmith-sandbox`: `cargo install toolsmith --features sandbox`), so that
    /// the [memory limit](Limits::memory) holds for every byte and a program that breaks
    /// its interpreter cannot touch this process. Each program costs a process start (a
    /// few milliseconds); its tool calls still run here, through the toolbox's door. See
    /// [`worker`](mod@crate::sandbox::worker).
    pub fn worker(mut self, path: impl Into<PathBuf>) -> Self {
        self.worker = Some(path.into());
        self
    }

    /// Offers only these tools instead of every tool of the toolbox, by the names models are
    /// shown (a toolset's rename, else the registered name).
    pub fn only<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.only = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Sets the limits.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Calls `f` with each tool call a program makes, as it ends (before the program reads
    /// its result): to show a program's steps, or to keep them.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use toolsmith::sandbox::Sandbox;
    /// use toolsmith::{tool, ToolContext, Toolbox};
    ///
    /// /// Doubles a number. Read-only. Not for floats.
    /// #[tool(effect = "read")]
    /// fn double(
    ///     /// The number.
    ///     #[arg(range(max = 1000))]
    ///     n: u32,
    /// ) -> u32 {
    ///     n * 2
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let log = Arc::clone(&seen);
    /// let sandbox = Sandbox::builder(Arc::new(Toolbox::new().with(Double)))
    ///     .on_call(move |call| log.lock().unwrap().push((call.call_id.to_owned(), call.outcome.to_json())))
    ///     .build()
    ///     .unwrap();
    /// let ctx = ToolContext::new().with_call_id("c7");
    /// sandbox.run("double(n=double(n=3))", &ctx).await.unwrap();
    /// let seen = seen.lock().unwrap();
    /// assert_eq!(seen[1], ("c7.2".to_owned(), r#"{"status":"success","data":12}"#.to_owned()));
    /// # });
    /// ```
    pub fn on_call(mut self, f: impl Fn(&ChildCall<'_>) + Send + Sync + 'static) -> Self {
        self.on_call = Some(Arc::new(f));
        self
    }

    /// The sandbox.
    ///
    /// # Errors
    ///
    /// A named tool the toolbox lacks, two tools with one Python name, or no tool at all.
    pub fn build(self) -> Result<Sandbox, SandboxError> {
        let shown: BTreeMap<&str, (&ToolDefinition, &str)> = self
            .toolbox
            .shown_and_registered()
            .map(|(view, registered)| (view.name(), (view, registered)))
            .collect();
        let names: Vec<String> = match self.only {
            Some(names) => names,
            None => self.toolbox.names().map(str::to_owned).collect(),
        };
        let mut tools = BTreeMap::new();
        for name in names {
            let Some(&(view, registered)) = shown.get(name.as_str()) else {
                return Err(SandboxError::UnknownTool(name));
            };
            let signature = Signature::python(view);
            let python = signature.name().to_owned();
            if let Some(other) = tools.get(&python).map(|t: &Offered| t.name.clone()) {
                if other != registered {
                    return Err(SandboxError::SameName(other, name));
                }
                continue;
            }
            tools.insert(
                python,
                Offered {
                    name: registered.to_owned(),
                    signature,
                    effect: view.effect(),
                },
            );
        }
        if tools.is_empty() {
            return Err(SandboxError::NoTools);
        }
        let offer = Offer::new(tools.values().map(|t| t.name.clone()));
        let definition = definition(&tools, &self.limits);
        Ok(Sandbox {
            shared: Arc::new(Shared {
                toolbox: self.toolbox,
                tools,
                offer,
                limits: self.limits,
                definition,
                on_call: self.on_call,
                worker: self.worker,
            }),
        })
    }
}

/// Some of a toolbox's tools, offered to programs: run one with [`run`](Self::run), or give
/// the model [`tool`](Self::tool) (`run_code`). Cheap to clone.
#[derive(Clone)]
pub struct Sandbox {
    shared: Arc<Shared>,
}

/// A tool offered to programs.
struct Offered {
    /// Its registered name.
    name: String,
    signature: Signature,
    effect: Option<Effect>,
}

struct Shared {
    toolbox: Arc<Toolbox>,
    /// By Python name, in order: the description lists them so.
    tools: BTreeMap<String, Offered>,
    offer: Offer,
    limits: Limits,
    definition: ToolDefinition,
    on_call: Option<OnCall>,
    /// The worker binary, when programs run in a process of their own.
    worker: Option<PathBuf>,
}

impl Sandbox {
    /// A sandbox over `toolbox`, offering each of its tools unless
    /// [`only`](SandboxBuilder::only) names some.
    pub fn builder(toolbox: Arc<Toolbox>) -> SandboxBuilder {
        SandboxBuilder {
            toolbox,
            only: None,
            limits: Limits::default(),
            on_call: None,
            worker: None,
        }
    }

    /// The `run_code` tool, for the toolbox the model calls.
    #[must_use]
    pub fn tool(&self) -> RunCode {
        RunCode {
            sandbox: self.clone(),
        }
    }

    /// The limits.
    #[must_use]
    pub fn limits(&self) -> &Limits {
        &self.shared.limits
    }

    /// The typed signatures of the offered tools, as `run_code`'s description shows them.
    #[must_use]
    pub fn signatures(&self) -> String {
        signatures(&self.shared.tools, &self.shared.limits)
    }

    /// Lint `untyped_output` (warn): each offered tool without an output schema, whose
    /// result a program must guess (its signature returns `Any`).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use toolsmith::sandbox::Sandbox;
    /// use toolsmith::serde_json::json;
    /// use toolsmith::{tool, Tool, ToolDefinition, Toolbox};
    ///
    /// /// Counts words. Read-only. Not for code.
    /// #[tool(effect = "read")]
    /// fn count_words(
    ///     /// The text.
    ///     #[arg(length(max = 1000))]
    ///     text: String,
    /// ) -> usize {
    ///     text.split_whitespace().count()
    /// }
    ///
    /// let sandbox = Sandbox::builder(Arc::new(Toolbox::new().with(CountWords))).build().unwrap();
    /// assert!(sandbox.lint().is_empty());
    /// ```
    #[must_use]
    pub fn lint(&self) -> Vec<LintFinding> {
        let rule = toolsmith_lint_rules::UNTYPED_OUTPUT;
        self.shared
            .tools
            .values()
            .filter_map(|offered| {
                let tool = self.shared.toolbox.get(&offered.name)?;
                let def = tool.definition();
                if def.output_schema().is_some() {
                    return None;
                }
                let level = def.lint_level(rule, None);
                (level != LintLevel::Allow).then(|| LintFinding {
                    lint: rule,
                    level,
                    tool: offered.name.clone(),
                    path: String::new(),
                    message: format!(
                        "tool `{}` is offered to programs but declares no output schema, so its signature returns `Any` and the model must guess the shape of its result; return a type that derives `JsonSchema` (or set `ToolDefinition::with_output_schema`)",
                        offered.name
                    ),
                })
            })
            .collect()
    }
}

impl fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sandbox")
            .field(
                "tools",
                &self
                    .shared
                    .tools
                    .values()
                    .map(|t| t.name.as_str())
                    .collect::<Vec<_>>(),
            )
            .field("limits", &self.shared.limits)
            .finish()
    }
}

/// The tool that runs a program in a [`Sandbox`]: one cache-stable definition (its
/// description changes only when the offered tools or the limits do).
///
/// ```
/// use std::sync::Arc;
/// use toolsmith::sandbox::{Sandbox, RUN_CODE};
/// use toolsmith::{tool, Tool, Toolbox};
///
/// /// Says hello. Read-only. Not for real conversations.
/// #[tool(effect = "read")]
/// fn say_hello() -> String { "hello".into() }
///
/// let sandbox = Sandbox::builder(Arc::new(Toolbox::new().with(SayHello))).build().unwrap();
/// let run_code = sandbox.tool();
/// assert_eq!(run_code.definition().name(), RUN_CODE);
/// assert!(run_code.definition().description().contains("def say_hello() -> str:"));
/// assert_eq!(run_code.definition().effect(), Some(toolsmith::Effect::Read));
/// ```
#[derive(Clone, Debug)]
pub struct RunCode {
    sandbox: Sandbox,
}

impl Tool for RunCode {
    fn definition(&self) -> &ToolDefinition {
        &self.sandbox.shared.definition
    }

    fn call<'a>(
        &'a self,
        arguments: Arguments<'a>,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let arguments = match self.definition().validate(arguments) {
                Ok(arguments) => arguments,
                Err(err) => return ToolOutcome::Error(err),
            };
            let code = arguments["code"].as_str().unwrap_or_default();
            match self.sandbox.run(code, ctx).await {
                Ok(answer) => ToolOutcome::success(&answer).unwrap_or_else(ToolOutcome::Error),
                Err(err) => ToolOutcome::Error(err),
            }
        })
    }
}

fn signatures(tools: &BTreeMap<String, Offered>, limits: &Limits) -> String {
    let mut text = String::from(PRELUDE);
    for offered in tools.values() {
        text.push('\n');
        let signature = offered.signature.text();
        if limits.in_flight > 1 {
            // The one line that starts with `def` (classes' lines start with `class` or
            // are indented) is the function's.
            let def = format!("def {}(", offered.signature.name());
            match signature.find(&format!("\n{def}")) {
                _ if signature.starts_with(&def) => text.push_str("async "),
                Some(at) => {
                    text.push_str(&signature[..=at]);
                    text.push_str("async ");
                    text.push_str(&signature[at + 1..]);
                    continue;
                }
                None => {}
            }
        }
        text.push_str(signature);
    }
    text
}

/// `run_code`'s definition: the signatures in its description, the source limit in its
/// schema, `read` when every offered tool reads and `write` otherwise (each call a program
/// makes is gated and keyed as itself, so the program needs no approval and no idempotency
/// key of its own), one attempt.
fn definition(tools: &BTreeMap<String, Offered>, limits: &Limits) -> ToolDefinition {
    let description = format!(
        "Runs a short Python program that calls the functions below and answers with the value of its last line. Use it to call several tools and filter or join their results in code: only the answer is returned. Not for work a single call does.\n\nThe functions take keyword arguments only and return the types shown. A failed call raises an exception whose message starts with its error code, e.g. `ValueError('[invalid_arguments] ...')`. The program has no files, network, clock or environment; imports beyond `typing` are not needed.{} At most {} tool calls and {} bytes of answer and printed text.\n\n```python\n{}```",
        if limits.in_flight > 1 {
            format!(
                " The functions are async: `await` each call, and run several at once with `await asyncio.gather(...)` (at most {} at a time).",
                limits.in_flight
            )
        } else {
            String::new()
        },
        limits.calls,
        limits.output_bytes,
        signatures(tools, limits)
    );
    let schema = json!({
        "type": "object",
        "properties": {
            "code": {
                "type": "string",
                "minLength": 1,
                "maxLength": limits.source_bytes,
                "description": "The Python program. Its last line is the answer, e.g. `[t for t in list_tickets() if t[\"open\"]]`."
            }
        },
        "required": ["code"],
        "additionalProperties": false
    });
    let reads_only = tools.values().all(|t| t.effect == Some(Effect::Read));
    let policy = ToolPolicy {
        max_attempts: Some(1),
        ..ToolPolicy::default()
    };
    ToolDefinition::new(RUN_CODE, description, schema)
        .with_effect(if reads_only {
            Effect::Read
        } else {
            Effect::Write
        })
        .with_policy(policy)
        .with_composite()
        .with_output_schema(json!({
            "type": "object",
            "properties": {
                "result": {"description": "The value of the program's last line."},
                "printed": {"type": "string", "description": "What the program printed."},
                "calls": {"type": "integer", "minimum": 0, "description": "How many tool calls it made."}
            },
            "required": ["result", "calls"]
        }))
}

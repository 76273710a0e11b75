//! One program's run: the interpreter steps between tool calls on the blocking pool (a step
//! is bounded by the interpreter's time limit), each tool call through the toolbox's door.

use std::sync::Arc;

use monty::{FunctionCall, MontyRun, RunProgress};
use monty_types::{
    CompileOptions, ExcType, ExtFunctionResult, MontyException, MontyObject, NameLookupResult,
    PrintWriter, ResourceLimits, ResourceTracker,
};
use serde_json::Value;

use crate::context::ToolContext;
use crate::echo::echo;
use crate::error::{ErrorCode, ToolError};
use crate::outcome::ToolOutcome;
use crate::toolbox::Spelling;

use super::journal::{Journal, Kept};
use super::value::{to_json, to_object, type_name};
use super::{ChildCall, ProgramAnswer, Sandbox, Shared};

/// The file name the interpreter gives the program in its tracebacks.
const SCRIPT: &str = "program.py";

impl Sandbox {
    /// Runs `code` in `ctx`: each tool call through the toolbox's door in a context of its
    /// own (call id `<ctx's call id>.<n>`, parent call id `ctx`'s call id), within the
    /// limits.
    ///
    /// # Errors
    ///
    /// The error the model reads: `invalid_arguments` for a program that does not parse,
    /// raises, or answers what JSON cannot hold or more than the output limit;
    /// `timeout` past the time limits; `budget_exhausted` past the call limit;
    /// `internal_error` if the interpreter fails.
    pub async fn run(&self, code: &str, ctx: &ToolContext) -> Result<ProgramAnswer, ToolError> {
        Program::new(&self.shared, ctx).run(code).await
    }
}

/// One program, from its source to its answer.
pub(super) struct Program<'a> {
    shared: &'a Shared,
    ctx: &'a ToolContext,
    /// The call that runs the program: its children's ids start with it.
    parent: Arc<str>,
    calls: u32,
    printed: String,
    journal: Journal,
}

/// Where an interpreter step left the program, with what it printed on the way.
type Stepped = (Result<RunProgress, MontyException>, String);

/// What a tool call gives the program: a value or exception it may handle, or an end it may
/// not (a limit passed).
enum Answer {
    Resume(ExtFunctionResult),
    End(ToolError),
}

impl<'a> Program<'a> {
    pub(super) fn new(shared: &'a Shared, ctx: &'a ToolContext) -> Self {
        let (store, ttl) = shared.toolbox.program_journal();
        Self {
            journal: Journal::new(store, ttl, ctx),
            shared,
            ctx,
            parent: Arc::from(ctx.call_id().unwrap_or(super::RUN_CODE)),
            calls: 0,
            printed: String::new(),
        }
    }

    pub(super) async fn run(mut self, code: &str) -> Result<ProgramAnswer, ToolError> {
        let limits = &self.shared.limits;
        if code.len() > limits.source_bytes {
            return Err(ToolError::invalid_arguments(format!(
                "The program is {} bytes; at most {} are accepted. Write a shorter program.",
                code.len(),
                limits.source_bytes
            )));
        }
        let wall = limits.wall_time;
        match tokio::time::timeout(wall, self.steps(code)).await {
            Ok(answer) => answer,
            Err(_) => Err(ToolError::new(
                ErrorCode::Timeout,
                format!(
                    "The program ran past its {} ms in all (tool calls included) and was stopped. Make fewer or faster calls.",
                    wall.as_millis()
                ),
            )),
        }
    }

    async fn steps(&mut self, code: &str) -> Result<ProgramAnswer, ToolError> {
        let names: Vec<String> = self.shared.tools.keys().cloned().collect();
        let functions: Vec<MontyObject> = self
            .shared
            .tools
            .iter()
            .map(|(python, offered)| MontyObject::Function {
                name: python.clone(),
                docstring: Some(offered.name.clone()),
            })
            .collect();
        let runner = MontyRun::new(code.to_owned(), SCRIPT, names, CompileOptions::default())
            .map_err(|exc| program_error("does not parse", &exc))?;
        let limits = &self.shared.limits;
        let tracker = ResourceTracker::new(
            ResourceLimits::default()
                .max_duration(limits.time)
                .max_recursion_depth(limits.recursion)
                .max_suspensions(
                    usize::try_from(limits.calls)
                        .unwrap_or(usize::MAX)
                        .saturating_add(1),
                ),
        );
        let room = self.room();
        let mut stepped = step(move |print| runner.start(functions, tracker, print), room).await?;
        loop {
            let (progress, printed) = stepped;
            self.printed.push_str(&printed);
            let room = self.room();
            stepped = match progress.map_err(|exc| self.raised(&exc))? {
                RunProgress::Complete(object) => return self.answer(&object),
                RunProgress::FunctionCall(mut call) => {
                    match self.call(Request::take(&mut call)).await {
                        Answer::Resume(result) => {
                            step(move |print| call.resume(result, print), room)
                        }
                        Answer::End(err) => return Err(err),
                    }
                    .await?
                }
                RunProgress::NameLookup(lookup) => {
                    step(
                        move |print| lookup.resume(NameLookupResult::Undefined, print),
                        room,
                    )
                    .await?
                }
                RunProgress::OsCall(call) => {
                    let what = echo(&call.function_call.to_string()).into_owned();
                    let exc = MontyException::new(
                        ExcType::PermissionError,
                        Some(format!(
                            "the sandbox has no files, network, clock or environment: `{what}` is not available"
                        )),
                    );
                    step(move |print| call.abort(exc, print), room).await?
                }
                RunProgress::ResolveFutures(pending) => {
                    let exc = MontyException::new(
                        ExcType::RuntimeError,
                        Some(
                            "tool calls are not awaitable: call them directly, one after another"
                                .to_owned(),
                        ),
                    );
                    step(move |print| pending.abort(exc, print), room).await?
                }
            };
        }
    }

    /// How many bytes of printed text may still be collected.
    fn room(&self) -> usize {
        self.shared
            .limits
            .output_bytes
            .saturating_sub(self.printed.len())
    }

    /// The program's answer, within the output limit.
    fn answer(&mut self, object: &MontyObject) -> Result<ProgramAnswer, ToolError> {
        let result = to_json(object).map_err(|problem| {
            ToolError::invalid_arguments(format!(
                "The program's answer cannot be sent back: {problem}. End the program with a value made of strings, numbers, booleans, None, lists and dicts."
            ))
        })?;
        let size = serde_json::to_vec(&result).map_or(usize::MAX, |v| v.len());
        let limit = self.shared.limits.output_bytes;
        if size.saturating_add(self.printed.len()) > limit {
            return Err(ToolError::invalid_arguments(format!(
                "The program's answer is {size} bytes and it printed {} more; at most {limit} in all are returned. Filter or summarize in the program and answer with less.",
                self.printed.len()
            )));
        }
        Ok(ProgramAnswer {
            result,
            printed: std::mem::take(&mut self.printed),
            calls: self.calls,
        })
    }

    /// An exception the program did not handle (a limit passed included), as the model reads
    /// it.
    fn raised(&self, exc: &MontyException) -> ToolError {
        match exc.exc_type() {
            ExcType::TimeoutError if is_time_limit(exc) => ToolError::new(
                ErrorCode::Timeout,
                format!(
                    "The program ran past its {} ms of interpreter time and was stopped. Do less work in the program: filter with the tools' own arguments where you can.",
                    self.shared.limits.time.as_millis()
                ),
            ),
            ExcType::MemoryError if exc.message().is_some_and(|m| m.contains("limit")) => {
                ToolError::invalid_arguments(format!(
                    "The program printed more than the {} bytes returned. Print less.",
                    self.shared.limits.output_bytes
                ))
            }
            _ => program_error("raised an exception", exc),
        }
    }

    /// One tool call of the program, through the door.
    async fn call(&mut self, call: Request) -> Answer {
        let Some(offered) = self.shared.tools.get(&call.function_name) else {
            return Answer::Resume(ExtFunctionResult::NotFound(call.function_name));
        };
        if call.positional {
            return Answer::Resume(raise(
                ExcType::TypeError,
                format!(
                    "{}() takes keyword arguments only: write {}(name=value, ...)",
                    call.function_name, call.function_name
                ),
            ));
        }
        let arguments = match keyword_arguments(&call.kwargs) {
            Ok(arguments) => arguments,
            Err(problem) => {
                return Answer::Resume(raise(
                    ExcType::TypeError,
                    format!("{}(): {problem}", call.function_name),
                ));
            }
        };
        if self.calls >= self.shared.limits.calls {
            return Answer::End(ToolError::new(
                ErrorCode::BudgetExhausted,
                format!(
                    "The program made more than {} tool calls and was stopped. Make fewer calls: use the tools' own filters, or ask for more at once.",
                    self.shared.limits.calls
                ),
            ));
        }
        self.calls += 1;
        let n = self.calls;
        if let Some(kept) = self.journal.replay(n, &offered.name, &arguments).await {
            return Answer::Resume(handed(kept));
        }
        let call_id = format!("{}.{}", self.parent, n);
        let ctx = self
            .ctx
            .clone()
            .with_call_id(call_id.as_str())
            .with_parent_call_id(Arc::clone(&self.parent));
        let toolbox = &self.shared.toolbox;
        let outcome = match toolbox
            .admit(
                &offered.name,
                Spelling::Registered,
                &ctx,
                Some(&self.shared.offer),
            )
            .await
        {
            Ok(admitted) => admitted.call(&arguments, &ctx).await,
            Err(err) => ToolOutcome::Error(err),
        };
        if let Some(on_call) = &self.shared.on_call {
            on_call(&ChildCall {
                tool: &offered.name,
                call_id: &call_id,
                parent_call_id: &self.parent,
                outcome: &outcome,
            });
        }
        // A call waiting for a person ends the program, the wait handed up: an agent run
        // pauses on it, and the decision reaches this call when the program runs again.
        if let Some(stop) = outcome
            .error()
            .and_then(|err| waiting(err, n, &offered.name, call_id))
        {
            return Answer::End(stop);
        }
        let kept = match outcome.error() {
            Some(err) => tool_exception(err),
            // What a program reads is checked as what a model reads.
            None => match crate::output::data_for_program(&outcome)
                .and_then(|data| serde_json::from_str::<Value>(&data).ok())
            {
                Some(data) => Kept::Value(data),
                None => Kept::raised(
                    ExcType::RuntimeError,
                    "[internal_error] the tool's result could not be read",
                ),
            },
        };
        self.journal.keep(n, &offered.name, &arguments, &kept).await;
        Answer::Resume(handed(kept))
    }
}

/// What a paused program asks of a tool, taken out of the interpreter's snapshot (which
/// stays on this side of every wait).
struct Request {
    function_name: String,
    /// Whether it passed positional arguments (or called a method).
    positional: bool,
    kwargs: Vec<(MontyObject, MontyObject)>,
}

impl Request {
    fn take(call: &mut FunctionCall) -> Self {
        Self {
            function_name: call.function_name.clone(),
            positional: call.object_id.is_some() || !call.args.is_empty(),
            kwargs: std::mem::take(&mut call.kwargs),
        }
    }
}

/// Runs one interpreter step on the blocking pool, collecting at most `room` bytes of
/// printed text. A panic inside the interpreter is an internal error, never the caller's.
async fn step<F>(f: F, room: usize) -> Result<Stepped, ToolError>
where
    F: FnOnce(PrintWriter<'_>) -> Result<RunProgress, MontyException> + Send + 'static,
{
    tokio::task::spawn_blocking(move || {
        let mut printed = String::new();
        let progress = f(PrintWriter::CollectString(&mut printed, Some(room)));
        (progress, printed)
    })
    .await
    .map_err(|_| ToolError::internal("the program's interpreter failed"))
}

/// A tool call's keyword arguments as the JSON object the tool reads.
fn keyword_arguments(kwargs: &[(MontyObject, MontyObject)]) -> Result<Value, String> {
    let mut object = serde_json::Map::new();
    for (key, value) in kwargs {
        let MontyObject::String(key) = key else {
            return Err(format!("a keyword is a {}, not a name", type_name(key)));
        };
        let value =
            to_json(value).map_err(|problem| format!("argument `{}`: {problem}", echo(key)))?;
        object.insert(key.clone(), value);
    }
    Ok(Value::Object(object))
}

/// The program's end at its call `n` of `tool` (id `call_id`), when that call waits for a
/// person: the call's wait, with its place in the program.
fn waiting(err: &ToolError, n: u32, tool: &str, call_id: String) -> Option<ToolError> {
    let awaited = err.awaited()?.clone();
    Some(
        ToolError::approval_required(format!(
            "The program stopped at its call {n} (`{tool}`): {}",
            err.message()
        ))
        .with_awaited(crate::error::Awaited {
            within: Some(call_id),
            ..awaited
        }),
    )
}

/// What the program is handed for a call, from what was kept of it.
fn handed(kept: Kept) -> ExtFunctionResult {
    match kept {
        Kept::Value(value) => ExtFunctionResult::Return(to_object(&value)),
        Kept::Raised { kind, message } => {
            raise(kind.parse().unwrap_or(ExcType::RuntimeError), message)
        }
    }
}

/// The exception a program sees for a tool's error: its message starts with the error code,
/// the type is the nearest Python one.
fn tool_exception(err: &ToolError) -> Kept {
    let code = err.code();
    let kind = match code {
        ErrorCode::InvalidArguments | ErrorCode::TruncatedArguments => ExcType::ValueError,
        ErrorCode::PermissionDenied
        | ErrorCode::ApprovalDenied
        | ErrorCode::ApprovalRequired
        | ErrorCode::ApprovalExpired => ExcType::PermissionError,
        ErrorCode::NotFound | ErrorCode::UnknownTool => ExcType::LookupError,
        ErrorCode::Timeout => ExcType::TimeoutError,
        _ => ExcType::RuntimeError,
    };
    Kept::raised(kind, &format!("[{}] {}", code.as_str(), err.message()))
}

fn raise(kind: ExcType, message: String) -> ExtFunctionResult {
    ExtFunctionResult::Error(MontyException::new(kind, Some(message)))
}

/// Whether an exception is the interpreter's time limit rather than one the program raised.
fn is_time_limit(exc: &MontyException) -> bool {
    exc.message()
        .is_some_and(|m| m.starts_with("time limit exceeded"))
}

/// A program's own mistake, for the model to fix: the exception and the line it came from,
/// the model's own text cut short.
fn program_error(what: &str, exc: &MontyException) -> ToolError {
    let line = exc
        .traceback()
        .last()
        .map(|frame| format!(" (line {})", frame.start.line))
        .unwrap_or_default();
    ToolError::invalid_arguments(format!(
        "The program {what}{line}: {}. Fix the program and run it again.",
        echo(&exc.summary())
    ))
}

//! The interpreter's side of a program: it steps the program on the blocking pool (a step is
//! bounded by the interpreter's time limit) until the program asks for a tool call or ends,
//! and stops there. The same code runs in this process or in a worker process of its own
//! ([`super::worker`]); either way it never sees the toolbox, only the calls' answers.

use monty::{FunctionCall, MontyRun, ResolveFutures, RunProgress};
use monty_types::{
    CompileOptions, ExcType, ExtFunctionResult, MontyException, MontyObject, NameLookupResult,
    PrintWriter, ResourceLimits, ResourceTracker,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::echo::echo;
use crate::error::{ErrorCode, ToolError};

use super::Limits;
use super::journal::Kept;
use super::value::{to_json, to_object, type_name};

/// The file name the interpreter gives the program in its tracebacks.
const SCRIPT: &str = "program.py";

/// Where the program stopped, with what it printed on the way there.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Stop {
    pub(super) printed: String,
    pub(super) event: Event,
}

/// What the program stopped for.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Event {
    /// It asks for tool calls, in the order it made them: one it called, or those it awaits
    /// at once. It waits for a [`Reply`] to each, in the same order.
    Calls(Vec<Request>),
    /// It ended with this value, as JSON.
    Done(Value),
}

/// What a program asks of a tool, taken out of the interpreter's snapshot (which stays on the
/// interpreter's side of every wait).
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Request {
    /// The interpreter's id of an awaited call (`None` for a call answered at once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) future: Option<u32>,
    /// The function's Python name.
    pub(super) function_name: String,
    /// Whether it passed positional arguments (or called a method).
    pub(super) positional: bool,
    /// Its keyword arguments as the JSON object the tool reads, or why they are not JSON.
    pub(super) arguments: Result<Value, String>,
}

impl Request {
    fn take(call: &FunctionCall, future: bool) -> Self {
        Self {
            future: future.then_some(call.call_id),
            function_name: call.function_name.clone(),
            positional: call.object_id.is_some() || !call.args.is_empty(),
            arguments: keyword_arguments(&call.kwargs),
        }
    }
}

/// The answer to a [`Request`].
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Reply {
    /// What was kept of the call: a value or an exception.
    Kept(Kept),
    /// No such function (a `NameError` in the program).
    NotFound(String),
}

impl Reply {
    fn into_result(self) -> ExtFunctionResult {
        match self {
            Self::Kept(Kept::Value(value)) => ExtFunctionResult::Return(to_object(&value)),
            Self::Kept(Kept::Raised { kind, message }) => {
                raise(kind.parse().unwrap_or(ExcType::RuntimeError), message)
            }
            Self::NotFound(name) => ExtFunctionResult::NotFound(name),
        }
    }

    /// An awaited call's result (a missing function is a `NameError` there too).
    fn into_resolved(self) -> ExtFunctionResult {
        match self {
            Self::NotFound(name) => raise(
                ExcType::NameError,
                format!("name '{}' is not defined", echo(&name)),
            ),
            reply => reply.into_result(),
        }
    }

    /// An exception of `kind` for the program to handle.
    pub(super) fn raise(kind: ExcType, message: String) -> Self {
        Self::Kept(Kept::Raised {
            kind: kind.to_string(),
            message,
        })
    }
}

/// A program in this process's interpreter.
pub(super) struct Here {
    limits: Limits,
    /// The offered tools: each Python name, and the registered name it stands for.
    tools: Vec<(String, String)>,
    /// Printed bytes so far.
    printed: usize,
    /// What the program waits on.
    waiting: Option<Waiting>,
    /// Awaitable calls made and not yet handed out.
    made: Vec<Request>,
}

/// What a stopped program waits on.
enum Waiting {
    /// The answer to the call it made.
    Call(Box<FunctionCall>),
    /// The results of the calls it awaits, by their ids.
    Futures(Box<ResolveFutures>, Vec<u32>),
}

/// Where an interpreter step left the program, what it printed on the way, and how much it
/// was allowed to print.
type Stepped = (Result<RunProgress, MontyException>, String, usize);

impl Here {
    pub(super) fn new(limits: Limits, tools: Vec<(String, String)>) -> Self {
        Self {
            limits,
            tools,
            printed: 0,
            waiting: None,
            made: Vec::new(),
        }
    }

    /// Compiles and starts `code`, up to its first stop.
    pub(super) async fn start(&mut self, code: &str) -> Result<Stop, ToolError> {
        let names: Vec<String> = self
            .tools
            .iter()
            .map(|(python, _)| python.clone())
            .collect();
        let functions: Vec<MontyObject> = self
            .tools
            .iter()
            .map(|(python, registered)| MontyObject::Function {
                name: python.clone(),
                docstring: Some(registered.clone()),
            })
            .collect();
        let runner = MontyRun::new(code.to_owned(), SCRIPT, names, CompileOptions::default())
            .map_err(|exc| program_error("does not parse", &exc))?;
        let limits = &self.limits;
        let tracker = ResourceTracker::new(
            ResourceLimits::default()
                .max_duration(limits.time)
                .max_memory(limits.memory)
                .max_recursion_depth(limits.recursion)
                .max_suspensions(
                    usize::try_from(limits.calls)
                        .unwrap_or(usize::MAX)
                        .saturating_add(1),
                ),
        );
        let stepped = step(
            move |print| runner.start(functions, tracker, print),
            self.room(),
        )
        .await?;
        self.settle(stepped).await
    }

    /// Hands the calls the program waits on their answers (in the order of its
    /// [`Event::Calls`]) and runs the program to its next stop.
    pub(super) async fn resume(&mut self, replies: Vec<Reply>) -> Result<Stop, ToolError> {
        let room = self.room();
        let stepped = match (self.waiting.take(), replies.len()) {
            (Some(Waiting::Call(call)), 1) => {
                let result = replies.into_iter().map(Reply::into_result).next();
                let result = result.unwrap_or(ExtFunctionResult::NotFound(String::new()));
                step(move |print| call.resume(result, print), room).await?
            }
            (Some(Waiting::Futures(pending, ids)), n) if n == ids.len() => {
                let results: Vec<(u32, ExtFunctionResult)> = ids
                    .into_iter()
                    .zip(replies.into_iter().map(Reply::into_resolved))
                    .collect();
                step(move |print| pending.resume(results, print), room).await?
            }
            _ => {
                return Err(ToolError::internal(
                    "the program was not waiting for these calls",
                ));
            }
        };
        self.settle(stepped).await
    }

    /// Steps on past what the interpreter answers itself (names, the OS, futures) to the
    /// next stop.
    async fn settle(&mut self, mut stepped: Stepped) -> Result<Stop, ToolError> {
        let mut printed = String::new();
        loop {
            let (progress, text, room) = stepped;
            self.printed = self.printed.saturating_add(text.len());
            printed.push_str(&text);
            let next = self.room();
            stepped = match progress.map_err(|exc| self.raised(&exc, room))? {
                RunProgress::Complete(object) => {
                    let value = to_json(&object).map_err(|problem| {
                        ToolError::invalid_arguments(format!(
                            "The program's answer cannot be sent back: {problem}. End the program with a value made of strings, numbers, booleans, None, lists and dicts."
                        ))
                    })?;
                    return Ok(Stop {
                        printed,
                        event: Event::Done(value),
                    });
                }
                RunProgress::FunctionCall(call) if self.limits.in_flight > 1 => {
                    // An `async def` tool: the call is a future the program awaits later,
                    // alone or with others.
                    self.made.push(Request::take(&call, true));
                    let id = call.call_id;
                    step(
                        move |print| call.resume(ExtFunctionResult::Future(id), print),
                        next,
                    )
                    .await?
                }
                RunProgress::FunctionCall(call) => {
                    let request = Request::take(&call, false);
                    self.waiting = Some(Waiting::Call(Box::new(call)));
                    return Ok(Stop {
                        printed,
                        event: Event::Calls(vec![request]),
                    });
                }
                RunProgress::NameLookup(lookup) => {
                    step(
                        move |print| lookup.resume(NameLookupResult::Undefined, print),
                        next,
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
                    step(move |print| call.abort(exc, print), next).await?
                }
                RunProgress::ResolveFutures(pending) => {
                    let ids = pending.pending_call_ids().to_vec();
                    let (awaited, later): (Vec<Request>, Vec<Request>) =
                        std::mem::take(&mut self.made)
                            .into_iter()
                            .partition(|r| r.future.is_some_and(|id| ids.contains(&id)));
                    self.made = later;
                    if awaited.len() != ids.len() {
                        let exc = MontyException::new(
                            ExcType::RuntimeError,
                            Some(
                                "tool calls are not awaitable here: call them directly, one after another"
                                    .to_owned(),
                            ),
                        );
                        step(move |print| pending.abort(exc, print), next).await?
                    } else {
                        let ids = awaited.iter().filter_map(|r| r.future).collect();
                        self.waiting = Some(Waiting::Futures(Box::new(pending), ids));
                        return Ok(Stop {
                            printed,
                            event: Event::Calls(awaited),
                        });
                    }
                }
            };
        }
    }

    /// How many bytes of printed text may still be collected.
    fn room(&self) -> usize {
        self.limits.output_bytes.saturating_sub(self.printed)
    }

    /// An exception the program did not handle (a limit passed included), as the model reads
    /// it. `room` is what the step that raised it was allowed to print.
    fn raised(&self, exc: &MontyException, room: usize) -> ToolError {
        match exc.exc_type() {
            ExcType::TimeoutError if is_limit(exc, "time limit exceeded") => ToolError::new(
                ErrorCode::Timeout,
                format!(
                    "The program ran past its {} ms of interpreter time and was stopped. Do less work in the program: filter with the tools' own arguments where you can.",
                    self.limits.time.as_millis()
                ),
            ),
            // The print buffer's limit and the memory limit say the same words; the number
            // tells them apart.
            ExcType::MemoryError if is_limit(exc, &format!("> {room} bytes")) => {
                ToolError::invalid_arguments(format!(
                    "The program printed more than the {} bytes returned. Print less.",
                    self.limits.output_bytes
                ))
            }
            ExcType::MemoryError if is_limit(exc, "memory limit exceeded") => {
                memory_error(self.limits.memory)
            }
            _ => program_error("raised an exception", exc),
        }
    }
}

/// The error for a program past its memory limit.
pub(super) fn memory_error(limit: usize) -> ToolError {
    ToolError::new(
        ErrorCode::BudgetExhausted,
        format!(
            "The program needed more than its {} KiB of memory and was stopped. Work on less data at once: filter with the tools' own arguments, and keep only what the answer needs.",
            limit / 1024
        ),
    )
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
        (progress, printed, room)
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

fn raise(kind: ExcType, message: String) -> ExtFunctionResult {
    ExtFunctionResult::Error(MontyException::new(kind, Some(message)))
}

/// Whether an exception is one of the interpreter's limits (its message holds `words`) rather
/// than one the program raised.
fn is_limit(exc: &MontyException, words: &str) -> bool {
    exc.message().is_some_and(|m| {
        (m.starts_with("time limit exceeded") || m.starts_with("memory limit exceeded"))
            && m.contains(words)
    })
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

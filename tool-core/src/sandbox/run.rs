//! One program's run: the interpreter ([`super::interp`], here or in a worker process) runs
//! the program to each tool call, and each call goes through the toolbox's door.

use std::sync::Arc;

use futures_util::stream::{self, StreamExt};
use monty_types::ExcType;
use serde_json::Value;

use crate::context::ToolContext;
use crate::error::{ErrorCode, ToolError};
use crate::outcome::ToolOutcome;
use crate::toolbox::Spelling;

use super::interp::{Event, Here, Reply, Request, Stop};
use super::journal::{Journal, Kept};
use super::worker::Worker;
use super::{ChildCall, Offered, ProgramAnswer, Sandbox, Shared};

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
        let tools: Vec<(String, String)> = self
            .shared
            .tools
            .iter()
            .map(|(python, offered)| (python.clone(), offered.name.clone()))
            .collect();
        let limits = self.shared.limits.clone();
        let mut engine = match &self.shared.worker {
            None => Engine::Here(Here::new(limits, tools)),
            Some(path) => Engine::Worker(Box::new(Worker::spawn(path, limits, tools)?)),
        };
        let mut stop = engine.start(code).await?;
        loop {
            self.printed.push_str(&stop.printed);
            let requests = match stop.event {
                Event::Done(value) => return self.answer(value),
                Event::Calls(requests) => requests,
            };
            let replies = self.answer_calls(requests).await?;
            stop = engine.resume(replies).await?;
        }
    }

    /// The program's answer, within the output limit.
    fn answer(&mut self, result: Value) -> Result<ProgramAnswer, ToolError> {
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

    /// The calls the program stopped for, in the order it made them: each refused, answered
    /// from the journal, or run through the door (at most the in-flight limit at once). A
    /// limit passed, or a call waiting for a person, ends the program instead.
    async fn answer_calls(&mut self, requests: Vec<Request>) -> Result<Vec<Reply>, ToolError> {
        let mut replies: Vec<Option<Reply>> = Vec::with_capacity(requests.len());
        let mut jobs: Vec<(usize, Job<'a>)> = Vec::new();
        for request in requests {
            match self.prepare(request)? {
                Prepared::Answered(reply) => replies.push(Some(reply)),
                Prepared::Run(job) => {
                    jobs.push((replies.len(), job));
                    replies.push(None);
                }
            }
        }
        let asked: Vec<(u32, &str, &Value)> = jobs
            .iter()
            .map(|(_, job)| (job.n, job.offered.name.as_str(), &job.arguments))
            .collect();
        let kept = self.journal.replay(&asked).await;
        let this = &*self;
        let in_flight = this.shared.limits.in_flight;
        let ran: Vec<Result<Kept, ToolError>> = if in_flight == 1 || jobs.len() == 1 {
            let mut ran = Vec::with_capacity(jobs.len());
            for ((_, job), kept) in jobs.iter().zip(kept) {
                ran.push(this.run_unless_kept(job, kept).await);
            }
            ran
        } else {
            let runs: Vec<_> = jobs
                .iter()
                .zip(kept)
                .map(|((_, job), kept)| this.run_unless_kept(job, kept))
                .collect();
            stream::iter(runs).buffered(in_flight).collect().await
        };
        for ((i, _), result) in jobs.iter().zip(ran) {
            // The first call waiting for a person ends the program, once every call made
            // with it has finished and been kept.
            replies[*i] = Some(Reply::Kept(result?));
        }
        Ok(replies
            .into_iter()
            .map(|reply| {
                reply.unwrap_or_else(|| Reply::raise(ExcType::RuntimeError, String::new()))
            })
            .collect())
    }

    /// A call's checks before it runs: an offered tool, keyword arguments of JSON, and room
    /// in the call limit. Numbers it.
    fn prepare(&mut self, call: Request) -> Result<Prepared<'a>, ToolError> {
        let Some(offered) = self.shared.tools.get(&call.function_name) else {
            return Ok(Prepared::Answered(Reply::NotFound(call.function_name)));
        };
        if call.positional {
            return Ok(Prepared::Answered(Reply::raise(
                ExcType::TypeError,
                format!(
                    "{}() takes keyword arguments only: write {}(name=value, ...)",
                    call.function_name, call.function_name
                ),
            )));
        }
        let arguments = match call.arguments {
            Ok(arguments) => arguments,
            Err(problem) => {
                return Ok(Prepared::Answered(Reply::raise(
                    ExcType::TypeError,
                    format!("{}(): {problem}", call.function_name),
                )));
            }
        };
        if self.calls >= self.shared.limits.calls {
            return Err(ToolError::new(
                ErrorCode::BudgetExhausted,
                format!(
                    "The program made more than {} tool calls and was stopped. Make fewer calls: use the tools' own filters, or ask for more at once.",
                    self.shared.limits.calls
                ),
            ));
        }
        self.calls += 1;
        Ok(Prepared::Run(Job {
            n: self.calls,
            offered,
            arguments,
        }))
    }

    /// What the journal kept of a call, or else the call, run.
    async fn run_unless_kept(&self, job: &Job<'_>, kept: Option<Kept>) -> Result<Kept, ToolError> {
        match kept {
            Some(kept) => Ok(kept),
            None => self.run_one(job).await,
        }
    }

    /// One tool call of the program, through the door; what the program is handed is kept
    /// in the journal.
    async fn run_one(&self, job: &Job<'_>) -> Result<Kept, ToolError> {
        let Job {
            n,
            offered,
            arguments,
        } = job;
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
            Ok(admitted) => admitted.call(arguments, &ctx).await,
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
            .and_then(|err| waiting(err, *n, &offered.name, call_id))
        {
            return Err(stop);
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
        self.journal.keep(*n, &offered.name, arguments, &kept).await;
        Ok(kept)
    }
}

/// A call ready to run: its place in the program, its tool and its arguments.
struct Job<'a> {
    n: u32,
    offered: &'a Offered,
    arguments: Value,
}

/// A call after its checks.
enum Prepared<'a> {
    /// Refused before running: the program is told why.
    Answered(Reply),
    Run(Job<'a>),
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

/// Where a program runs: in this process, or in a worker process of its own.
enum Engine {
    Here(Here),
    Worker(Box<Worker>),
}

impl Engine {
    async fn start(&mut self, code: &str) -> Result<Stop, ToolError> {
        match self {
            Self::Here(here) => here.start(code).await,
            Self::Worker(worker) => worker.start(code).await,
        }
    }

    async fn resume(&mut self, replies: Vec<Reply>) -> Result<Stop, ToolError> {
        match self {
            Self::Here(here) => here.resume(replies).await,
            Self::Worker(worker) => worker.resume(replies).await,
        }
    }
}

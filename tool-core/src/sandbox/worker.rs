//! Programs in a worker process of their own, for a memory limit that holds.
//!
//! The interpreter can only count memory through the process's global allocator (Monty's
//! `monty-alloc`), which counts the whole process. So a program that must not pass a memory
//! limit runs in a process that does nothing else: a worker, a small binary whose global
//! allocator is [`CountingAllocator`] and whose `main` calls [`serve`]. The toolsmith
//! package builds one, `toolsmith-sandbox` (feature `sandbox`); any binary of yours can be
//! one too.
//!
//! The worker holds the interpreter and nothing else: no toolbox, no state, no environment
//! (it starts with an empty one). It speaks JSON lines over its standard input and output:
//! the limits and the program first, then, each time the program stops at a tool call, the
//! call one way and its answer the other. The tool call itself runs in the parent, through
//! the toolbox's door. A worker past its memory limit raises `MemoryError` at its next
//! checkpoint, or, past the limit's headroom, exits with [`OOM_EXIT_CODE`]; either way the
//! model reads the memory error. The worker is killed when its program ends, for whatever
//! reason (the wall-time limit included).

use std::io::{BufRead, Write};
use std::path::Path;
use std::process::{ExitCode, Stdio};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::error::{ErrorCode, ToolError};

use super::Limits;
use super::interp::{Event, Here, Reply, Stop, memory_error};

/// The global allocator a worker binary installs: it counts the process's live bytes, which
/// is how the interpreter knows its memory.
///
/// ```no_run
/// #[global_allocator]
/// static ALLOCATOR: toolsmith::sandbox::worker::CountingAllocator =
///     toolsmith::sandbox::worker::CountingAllocator;
///
/// fn main() -> std::process::ExitCode {
///     toolsmith::sandbox::worker::serve()
/// }
/// ```
pub use monty_alloc::LimitedAllocator as CountingAllocator;

/// The exit code of a worker that passed its memory limit's headroom.
pub use monty_types::OOM_EXIT_CODE;

/// The first line the parent sends: what to run and within what.
#[derive(Serialize, Deserialize)]
struct Start {
    limits: Limits,
    tools: Vec<(String, String)>,
    code: String,
}

/// A line the worker sends: where the program stopped, or why it ended.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Line {
    Stop(Stop),
    Ended { code: ErrorCode, message: String },
}

/// The worker's side: reads the program from standard input, runs it, and answers each stop
/// on standard output until the program ends. Call it from the `main` of a binary whose
/// global allocator is [`CountingAllocator`]; without it the worker refuses to run, since its
/// memory limit would not hold.
///
/// Returns the process's exit code: success once the program ended (whatever its end), a
/// failure when the parent's lines cannot be read.
#[must_use]
pub fn serve() -> ExitCode {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut output = std::io::stdout().lock();
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread().build() else {
        return ExitCode::FAILURE;
    };
    let Some(start) = read::<Start>(&mut input) else {
        return ExitCode::FAILURE;
    };
    if monty_alloc::set_limit(Some(start.limits.memory), false).is_err() {
        let err = ToolError::internal(
            "the sandbox worker counts no memory: its global allocator is not the sandbox's",
        );
        return write(&mut output, &ended(&err));
    }
    let mut here = Here::new(start.limits, start.tools);
    let mut stopped = runtime.block_on(here.start(&start.code));
    loop {
        let stop = match stopped {
            Ok(stop) => stop,
            Err(err) => return write(&mut output, &ended(&err)),
        };
        let waits = matches!(stop.event, Event::Calls(_));
        let code = write(&mut output, &Line::Stop(stop));
        if !waits || code != ExitCode::SUCCESS {
            return code;
        }
        let Some(replies) = read::<Vec<Reply>>(&mut input) else {
            return ExitCode::FAILURE;
        };
        stopped = runtime.block_on(here.resume(replies));
    }
}

fn ended(err: &ToolError) -> Line {
    Line::Ended {
        code: err.code(),
        message: err.message().to_owned(),
    }
}

fn read<T: for<'de> Deserialize<'de>>(input: &mut impl BufRead) -> Option<T> {
    let mut line = String::new();
    input.read_line(&mut line).ok()?;
    serde_json::from_str(&line).ok()
}

fn write(output: &mut impl Write, line: &Line) -> ExitCode {
    let written = serde_json::to_writer(&mut *output, line)
        .map_err(std::io::Error::from)
        .and_then(|()| output.write_all(b"\n"))
        .and_then(|()| output.flush());
    if written.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The parent's side: one worker process for one program.
pub(super) struct Worker {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    limits: Limits,
    tools: Vec<(String, String)>,
}

impl Worker {
    /// Starts the worker at `path`, with an empty environment.
    pub(super) fn spawn(
        path: &Path,
        limits: Limits,
        tools: Vec<(String, String)>,
    ) -> Result<Self, ToolError> {
        let mut child = Command::new(path)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|_| ToolError::internal("the program's worker could not start"))?;
        let (Some(input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(ToolError::internal("the program's worker could not start"));
        };
        Ok(Self {
            child,
            input,
            output: BufReader::new(output),
            limits,
            tools,
        })
    }

    pub(super) async fn start(&mut self, code: &str) -> Result<Stop, ToolError> {
        let start = Start {
            limits: self.limits.clone(),
            tools: std::mem::take(&mut self.tools),
            code: code.to_owned(),
        };
        self.send(&start).await?;
        self.receive().await
    }

    pub(super) async fn resume(&mut self, replies: Vec<Reply>) -> Result<Stop, ToolError> {
        self.send(&replies).await?;
        self.receive().await
    }

    async fn send(&mut self, message: &impl Serialize) -> Result<(), ToolError> {
        let mut line = serde_json::to_vec(message)
            .map_err(|_| ToolError::internal("the program's worker could not be written to"))?;
        line.push(b'\n');
        if self.input.write_all(&line).await.is_err() || self.input.flush().await.is_err() {
            return Err(self.ended().await);
        }
        Ok(())
    }

    /// The worker's next line, at most as long as its memory and output limits allow.
    async fn receive(&mut self) -> Result<Stop, ToolError> {
        let cap = self
            .limits
            .memory
            .saturating_add(self.limits.output_bytes)
            .saturating_add(64 * 1024);
        let mut line = Vec::new();
        let read = (&mut self.output)
            .take(u64::try_from(cap).unwrap_or(u64::MAX))
            .read_until(b'\n', &mut line)
            .await;
        if !matches!(read, Ok(n) if n > 0 && line.ends_with(b"\n")) {
            return Err(self.ended().await);
        }
        match serde_json::from_slice::<Line>(&line) {
            Ok(Line::Stop(stop)) => Ok(stop),
            Ok(Line::Ended { code, message }) => Err(ToolError::new(code, message)),
            Err(_) => Err(ToolError::internal(
                "the program's worker answered what cannot be read",
            )),
        }
    }

    /// Why the worker stopped talking: its memory limit, or a failure of its own.
    async fn ended(&mut self) -> ToolError {
        let status = match tokio::time::timeout(Duration::from_secs(1), self.child.wait()).await {
            Ok(status) => status,
            Err(_) => {
                let _ = self.child.start_kill();
                self.child.wait().await
            }
        };
        match status {
            Ok(status) if status.code() == Some(OOM_EXIT_CODE) => memory_error(self.limits.memory),
            _ => ToolError::internal("the program's worker stopped"),
        }
    }
}

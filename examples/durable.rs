//! A run that survives its process: checkpoints and idempotency keys in Redis, a process
//! killed with SIGKILL while its run waits for a person, the person's decision (with who
//! decided and why) recorded in between, and the run finished by a second process.
//!
//! ```sh
//! cargo run --example durable --features redis
//! ```
//!
//! It starts a `redis-server` of its own on 127.0.0.1 (a free port) and stops it at the end;
//! `apt-get install redis-server` if it is missing. The same binary is the worker the crash
//! matrix (tests/crash_matrix.rs) kills at every step boundary:
//!
//! ```sh
//! durable worker run|resume <redis-url> <dir> <run-id> <seed> [<point>:<n>]
//! durable worker decide <redis-url> <dir> <run-id> <seed> <path> approve|deny [<point>:<n>]
//! ```
//!
//! A worker prints `KILLME <point>` and waits to be killed when it reaches the `n`th
//! `<point>`; `PAUSED <path>…` when its run waits for a person; `ANSWER <text>` when the model
//! answered; `DECIDED` after a decision. The tools' effects land in `<dir>`: one file per
//! idempotency key, made whole or not at all, as a system that takes idempotency keys would.

mod telemetry;
mod tickets;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::time::Duration;

use tickets::{AddNote, DeleteTicket, LEDGER, LookupTicket, SeededModel, point};
use toolsmith::agent::{Agent, AgentError, AgentEvent, Stop, Verdict};
use toolsmith::idempotency::IdempotencyPolicy;
use toolsmith::policy::{Approvals, Defaults};
use toolsmith::state::{Acquired, CheckpointStore, Fenced, Lease, RedisStore, State, StoreError};
use toolsmith::tool::BoxFuture;
use toolsmith::{Dialect, ToolContext, Toolbox};

/// The key every process seals runs with (a real deployment reads it from a secret store).
const KEY: &str = "the durable example's key: 32 bytes or more of secret";
/// Whose run it is.
const PRINCIPAL: &str = "ada";

/// The Redis checkpoint store, with the step boundaries on either side of a save.
struct Hooked(Arc<RedisStore>);

impl CheckpointStore for Hooked {
    fn save<'a>(
        &'a self,
        key: &'a str,
        state: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            point("checkpoint.before");
            let saved = self.0.save(key, state, ttl).await;
            point("checkpoint.after");
            saved
        })
    }

    fn load<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        self.0.load(key)
    }

    fn remove<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        self.0.remove(key)
    }

    fn acquire<'a>(
        &'a self,
        key: &'a str,
        owner: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Acquired, StoreError>> {
        self.0.acquire(key, owner, ttl)
    }

    fn renew<'a>(
        &'a self,
        key: &'a str,
        lease: &'a Lease,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.0.renew(key, lease, ttl)
    }

    fn release<'a>(
        &'a self,
        key: &'a str,
        lease: &'a Lease,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.0.release(key, lease)
    }

    fn save_fenced<'a>(
        &'a self,
        key: &'a str,
        state: &'a str,
        ttl: Duration,
        fence: u64,
    ) -> BoxFuture<'a, Result<Fenced, StoreError>> {
        Box::pin(async move {
            point("checkpoint.before");
            let saved = self.0.save_fenced(key, state, ttl, fence).await;
            point("checkpoint.after");
            saved
        })
    }

    fn keep_decision<'a>(
        &'a self,
        key: &'a str,
        call: &'a str,
        decision: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.0.keep_decision(key, call, decision, ttl)
    }

    fn decisions<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Vec<(String, String)>, StoreError>> {
        self.0.decisions(key)
    }
}

/// The agent every process builds alike: the same tools, key and stores. With
/// `TOOLSMITH_CRASH_PROGRAMS` set (and the `sandbox` feature), the model writes each turn's
/// calls as one program for the sandbox's `run_code`, over the same tools.
fn agent(redis: &str, dir: &Path, seed: u64) -> Result<Agent, String> {
    let store = Arc::new(RedisStore::open(redis).map_err(|e| e.to_string())?);
    let audit = toolsmith::audit::JsonLinesSink::create(dir.join("audit.jsonl"))
        .map_err(|e| e.to_string())?;
    let state = State::shared(Arc::clone(&store)).with_key(KEY);
    let toolbox = Toolbox::new()
        .with(LookupTicket)
        .with(AddNote)
        .with(DeleteTicket)
        .with_approver(Approvals::new())
        .with_audit(audit)
        .with_defaults(Defaults {
            // A key held by a process that died is free again a second later.
            idempotency: IdempotencyPolicy {
                lease: Duration::from_secs(1),
                wait: Duration::from_secs(5),
                ..IdempotencyPolicy::default()
            },
            ..Defaults::default()
        })
        .with_state(state.clone());
    let (toolbox, model) = if std::env::var_os("TOOLSMITH_CRASH_PROGRAMS").is_some() {
        programs(toolbox, state, seed)?
    } else {
        (toolbox, SeededModel::new(seed))
    };
    Ok(
        Agent::new(toolbox, Dialect::Anthropic { strict: false }, model)
            .with_checkpoints(Hooked(store))
            // A run whose worker was killed is taken over a second after its last renewal;
            // the next worker waits for that rather than answering that the run is busy.
            .with_lease(Duration::from_secs(1))
            .with_busy_wait(Duration::from_secs(3))
            .with_events(|event| match event {
                AgentEvent::ModelAnswered { .. } => point("model.after"),
                AgentEvent::ToolFinished { .. } => point("tool.after"),
                _ => {}
            }),
    )
}

/// The model's toolbox when it writes programs: `run_code` over `tools`, in the same state,
/// with a step boundary after each call a program makes (before the program's journal keeps
/// it).
#[cfg(feature = "sandbox")]
fn programs(tools: Toolbox, state: State, seed: u64) -> Result<(Toolbox, SeededModel), String> {
    let sandbox = toolsmith::sandbox::Sandbox::builder(Arc::new(tools))
        .on_call(|_| point("program.call"))
        .build()
        .map_err(|e| e.to_string())?;
    let toolbox = Toolbox::new()
        .with(sandbox.tool())
        .with_approver(Approvals::new())
        .with_state(state);
    Ok((toolbox, SeededModel::programs(seed)))
}

#[cfg(not(feature = "sandbox"))]
fn programs(_: Toolbox, _: State, _: u64) -> Result<(Toolbox, SeededModel), String> {
    Err("programs need the `sandbox` feature".into())
}

/// Reports where a run stopped, as the worker's last line.
fn report(stop: &Stop) {
    match stop {
        Stop::Answered(text) => println!("ANSWER {text}"),
        Stop::Paused(pending) => {
            let paths: Vec<String> = pending.iter().map(|p| p.path.join("/")).collect();
            println!("PAUSED {}", paths.join(" "));
            point("paused");
        }
        other => println!("STOPPED {other:?}"),
    }
}

/// One worker process: runs, resumes or decides on run `run_id`.
async fn worker(args: &[String]) -> Result<(), String> {
    let [mode, redis, dir, run_id, seed, rest @ ..] = args else {
        return Err(
            "usage: durable worker run|resume|decide <redis-url> <dir> <run-id> <seed> …".into(),
        );
    };
    let seed: u64 = seed.parse().map_err(|_| "the seed is a number")?;
    let dir = PathBuf::from(dir);
    let _ = LEDGER.set(dir.clone());
    let (kill, rest) = match rest {
        [.., last] if last.contains(':') => (Some(last.as_str()), &rest[..rest.len() - 1]),
        _ => (None, rest),
    };
    if let Some(kill) = kill {
        tickets::kill_at(kill)?;
    }
    let agent = agent(redis, &dir, seed)?;
    let ctx = ToolContext::new()
        .with_principal(PRINCIPAL)
        .with_run_id(run_id.as_str());
    match (mode.as_str(), rest) {
        ("run", []) => {
            let mut state = agent.start("Tidy up the tickets.");
            let stop = agent
                .run(&mut state, &ctx)
                .await
                .map_err(|e| e.to_string())?;
            report(&stop);
        }
        ("resume", []) => {
            // A run that died before its first checkpoint landed starts again: `UnknownRun`
            // means nothing is kept. A checkpoint that is kept and refused (`Sealed`: altered,
            // another run's) is an error, never a reason to start over it.
            let mut state = match agent.load(run_id, &ctx).await {
                Err(AgentError::UnknownRun(_)) => agent.start("Tidy up the tickets."),
                loaded => loaded.map_err(|e| e.to_string())?,
            };
            point("resume.loaded");
            let stop = agent
                .run(&mut state, &ctx)
                .await
                .map_err(|e| e.to_string())?;
            report(&stop);
        }
        ("decide", [path, verdict]) => {
            let path: Vec<String> = path.split('/').map(str::to_owned).collect();
            let verdict = match verdict.as_str() {
                "approve" => Verdict::approve().because("checked with the customer"),
                _ => Verdict::deny("the ticket is evidence in an open case"),
            }
            .by("lin@example.com");
            point("decision.before");
            agent
                .decide_stored(run_id, &ctx, &path, &verdict)
                .await
                .map_err(|e| e.to_string())?;
            point("decision.after");
            println!("DECIDED");
        }
        _ => return Err(format!("unknown worker mode `{mode}`")),
    }
    Ok(())
}

/// Runs this binary as a worker and reads its last line; `kill_at` kills it there.
fn spawn(
    args: &[&str],
) -> Result<
    (
        std::process::Child,
        std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
    ),
    String,
> {
    use std::io::BufRead;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut child = Command::new(exe)
        .arg("worker")
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    Ok((child, std::io::BufReader::new(stdout).lines()))
}

/// The demo: a run paused for a person, its process killed, the decision, the resume.
fn demo() -> Result<(), String> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| e.to_string())?
        .port();
    let mut redis = Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| {
            format!(
                "this example needs redis-server on the PATH (apt-get install redis-server): {e}"
            )
        })?;
    // Ready when it takes a connection (up to 10 s, on a busy machine).
    let ready = (0..200).any(|_| {
        let open = std::net::TcpStream::connect(("127.0.0.1", port)).is_ok();
        if !open {
            std::thread::sleep(Duration::from_millis(50));
        }
        open
    });
    if !ready {
        let _ = redis.kill();
        let _ = redis.wait();
        return Err(format!(
            "redis-server did not listen on port {port} within 10 s"
        ));
    }
    let url = format!("redis://127.0.0.1:{port}/");
    let dir = std::env::temp_dir().join(format!("toolsmith-durable-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let dir_s = dir.display().to_string();
    let result = (|| {
        println!(
            "process 1 runs until the model asks to delete ticket 7, then is killed (SIGKILL) while it waits:"
        );
        let (mut first, mut lines) = spawn(&["run", &url, &dir_s, "run-demo", "0", "paused:1"])?;
        let mut path = String::new();
        for line in lines.by_ref().map_while(Result::ok) {
            println!("  {line}");
            if let Some(paths) = line.strip_prefix("PAUSED ") {
                path = paths.split(' ').next().unwrap_or_default().to_owned();
            }
            if line.starts_with("KILLME") {
                first.kill().map_err(|e| e.to_string())?;
                break;
            }
        }
        let _ = first.wait();
        println!("the person approves {path}, with a reason, from a third process:");
        let (mut decide, lines) =
            spawn(&["decide", &url, &dir_s, "run-demo", "0", &path, "approve"])?;
        lines
            .map_while(Result::ok)
            .for_each(|line| println!("  {line}"));
        let _ = decide.wait();
        println!("process 2 resumes the run from its checkpoint:");
        let (mut second, lines) = spawn(&["resume", &url, &dir_s, "run-demo", "0"])?;
        lines
            .map_while(Result::ok)
            .for_each(|line| println!("  {line}"));
        let _ = second.wait();
        tickets::report(&dir)
    })();
    let _ = redis.kill();
    let _ = redis.wait();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn main() -> ExitCode {
    let _telemetry = telemetry::export();
    let args: Vec<String> = std::env::args().skip(1).collect();
    tickets::exit(match args.split_first() {
        Some((first, rest)) if first == "worker" => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())
            .and_then(|rt| rt.block_on(worker(rest))),
        _ => demo(),
    })
}

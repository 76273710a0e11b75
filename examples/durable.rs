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

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use toolsmith::agent::{
    Agent, AgentError, AgentEvent, ModelClient, ModelError, ModelRequest, Stop, Verdict,
};
use toolsmith::idempotency::IdempotencyPolicy;
use toolsmith::policy::{Approvals, Defaults};
use toolsmith::serde_json::{self, Value, json};
use toolsmith::state::{CheckpointStore, RedisStore, State, StoreError};
use toolsmith::tool::BoxFuture;
use toolsmith::{Dialect, ToolContext, Toolbox, tool};

/// The key every process seals runs with (a real deployment reads it from a secret store).
const KEY: &str = "the durable example's key: 32 bytes or more of secret";
/// Whose run it is.
const PRINCIPAL: &str = "ada";

/// Where the worker is to be killed: a step boundary's name and which time it is reached.
static KILL_AT: OnceLock<Mutex<Option<(String, u32)>>> = OnceLock::new();
/// Where the tools' effects land.
static LEDGER: OnceLock<PathBuf> = OnceLock::new();

/// A step boundary: when it is the one to be killed at, say so and wait for SIGKILL.
fn point(name: &str) {
    let Some(kill) = KILL_AT.get() else { return };
    let Ok(mut kill) = kill.lock() else { return };
    if let Some((at, left)) = kill.as_mut()
        && at == name
    {
        *left -= 1;
        if *left == 0 {
            println!("KILLME {name}");
            let _ = std::io::stdout().flush();
            loop {
                std::thread::sleep(Duration::from_secs(3600));
            }
        }
    }
}

/// Applies `effect` once per idempotency key: a key's file is made whole (written aside,
/// then linked into place, which fails if it exists) or not at all.
fn apply(ctx: &ToolContext, effect: &str) -> String {
    let Some(dir) = LEDGER.get() else {
        return "no ledger".into();
    };
    let key: String = ctx
        .idempotency_key()
        .unwrap_or("no-key")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let run = ctx.run_id().unwrap_or("no-run");
    let aside = dir.join(format!(".{key}.{}", std::process::id()));
    let _ = std::fs::write(&aside, format!("{run}\t{effect}\n"));
    let _ = std::fs::hard_link(&aside, dir.join(format!("effect-{key}")));
    let _ = std::fs::remove_file(&aside);
    format!("done: {effect}")
}

/// Looks up a ticket's status. Read-only. Not for changing tickets.
#[tool(effect = "read")]
fn lookup_ticket(
    /// The ticket.
    #[arg(range(max = 1000))]
    id: u32,
) -> String {
    point("tool.before");
    point("read.inside");
    format!("ticket {id} is open")
}

/// Adds a note to a ticket. Writes data. Not for closing tickets.
#[tool(effect = "write")]
fn add_note(
    ctx: &ToolContext,
    /// The ticket.
    #[arg(range(max = 1000))]
    id: u32,
    /// The note.
    #[arg(length(min = 1, max = 80))]
    note: String,
) -> String {
    point("tool.before");
    let receipt = apply(ctx, &format!("note on {id}: {note}"));
    point("tool.inside");
    receipt
}

/// Deletes a ticket. Destructive: it cannot be undone. Not for closing tickets.
#[tool(effect = "destructive")]
fn delete_ticket(
    ctx: &ToolContext,
    /// The ticket.
    #[arg(range(max = 1000))]
    id: u32,
) -> String {
    point("tool.before");
    let receipt = apply(ctx, &format!("deleted {id}"));
    point("tool.inside");
    receipt
}

/// A model whose answers follow from a seed and the turn: the same in every process, so a
/// resumed run is asked what the first process would have asked.
struct SeededModel {
    script: Vec<Vec<(String, Value)>>,
}

/// A small deterministic generator.
fn next(state: &mut u64) -> u64 {
    *state = state
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    *state >> 33
}

impl SeededModel {
    /// The calls of each turn: reads, writes and deletes (which wait for a person).
    fn new(seed: u64) -> Self {
        if seed == 0 {
            // The demo: a read and a note, then a deletion a person decides on.
            return Self {
                script: vec![
                    vec![
                        ("lookup_ticket".into(), json!({"id": 7})),
                        (
                            "add_note".into(),
                            json!({"id": 7, "note": "duplicate of 6"}),
                        ),
                    ],
                    vec![("delete_ticket".into(), json!({"id": 7}))],
                ],
            };
        }
        let mut rng = seed;
        let turns = 1 + next(&mut rng) % 3;
        let script = (0..turns)
            .map(|_| {
                (0..1 + next(&mut rng) % 3)
                    .map(|_| {
                        let id = next(&mut rng) % 100;
                        match next(&mut rng) % 4 {
                            0 => ("lookup_ticket".into(), json!({"id": id})),
                            1 => ("delete_ticket".into(), json!({"id": id})),
                            _ => (
                                "add_note".into(),
                                json!({"id": id, "note": format!("seen {}", next(&mut rng) % 10)}),
                            ),
                        }
                    })
                    .collect()
            })
            .collect();
        Self { script }
    }
}

/// What the tools answered so far, as the model read them: each result's data, or its
/// error's code (a replayed result reads as the first one did).
fn results_read(body: &Value) -> Vec<String> {
    let mut read = Vec::new();
    for message in body["messages"].as_array().into_iter().flatten() {
        for block in message["content"].as_array().into_iter().flatten() {
            if block["type"] != "tool_result" {
                continue;
            }
            let text = match &block["content"] {
                Value::String(text) => text.clone(),
                Value::Array(parts) => parts
                    .iter()
                    .filter_map(|part| part["text"].as_str())
                    .collect(),
                other => other.to_string(),
            };
            let envelope: Value = serde_json::from_str(&text).unwrap_or(Value::String(text));
            read.push(match (&envelope["data"], &envelope["error"]["code"]) {
                (Value::String(data), _) => data.clone(),
                (_, Value::String(code)) => code.clone(),
                _ => envelope.to_string(),
            });
        }
    }
    read
}

impl ModelClient for SeededModel {
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<Value, ModelError>> {
        Box::pin(async move {
            point("model.before");
            let turn = request.turn as usize;
            let usage = json!({"input_tokens": 100, "output_tokens": 10});
            Ok(match self.script.get(turn) {
                Some(calls) => json!({
                    "role": "assistant", "stop_reason": "tool_use", "usage": usage,
                    "content": calls.iter().enumerate().map(|(k, (name, input))| json!({
                        "type": "tool_use", "id": format!("toolu_{turn}_{k}"),
                        "name": name, "input": input,
                    })).collect::<Vec<_>>(),
                }),
                None => json!({
                    "role": "assistant", "stop_reason": "end_turn", "usage": usage,
                    "content": [{"type": "text",
                        "text": format!("Done. {}", results_read(&request.body).join(" | "))}],
                }),
            })
        })
    }
}

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
}

/// The agent every process builds alike: the same tools, key and stores.
fn agent(redis: &str, dir: &Path, seed: u64) -> Result<Agent, String> {
    let store = Arc::new(RedisStore::open(redis).map_err(|e| e.to_string())?);
    let audit = toolsmith::audit::JsonLinesSink::create(dir.join("audit.jsonl"))
        .map_err(|e| e.to_string())?;
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
        .with_state(State::shared(Arc::clone(&store)).with_key(KEY));
    Ok(Agent::new(
        toolbox,
        Dialect::Anthropic { strict: false },
        SeededModel::new(seed),
    )
    .with_checkpoints(Hooked(store))
    .with_events(|event| match event {
        AgentEvent::ModelAnswered { .. } => point("model.after"),
        AgentEvent::ToolFinished { .. } => point("tool.after"),
        _ => {}
    }))
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
    if let Some((at, n)) = kill.and_then(|k| k.split_once(':')) {
        let n = n.parse().map_err(|_| "a kill point is <point>:<n>")?;
        let _ = KILL_AT.set(Mutex::new(Some((at.to_owned(), n))));
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
            // A run that died before its first checkpoint landed starts again.
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
    std::thread::sleep(Duration::from_millis(300));
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
        let audit = std::fs::read_to_string(dir.join("audit.jsonl")).unwrap_or_default();
        for line in audit.lines().filter(|l| l.contains("\"approval\"")) {
            let record: Value = serde_json::from_str(line).unwrap_or_default();
            println!(
                "audit: {} {} {}",
                record["tool"], record["status"], record["approval"]
            );
        }
        let effects = std::fs::read_dir(&dir)
            .map_err(|e| e.to_string())?
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with("effect-"))
            .count();
        println!("effects applied: {effects} (one note, one deletion)");
        Ok(())
    })();
    let _ = redis.kill();
    let _ = redis.wait();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.split_first() {
        Some((first, rest)) if first == "worker" => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())
            .and_then(|rt| rt.block_on(worker(rest))),
        _ => demo(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            println!("ERROR {err}");
            ExitCode::FAILURE
        }
    }
}

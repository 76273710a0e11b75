//! What the durable examples share: tickets to look up, note and delete, whose effects land
//! in a ledger outside the process (one file per idempotency key, made whole or not at all,
//! as a system that takes idempotency keys would), a model that answers from a seed, and the
//! step boundaries a worker can be told to wait at, to be killed there.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use toolsmith::agent::{ModelClient, ModelError, ModelRequest};
use toolsmith::serde_json::{self, Value, json};
use toolsmith::tool::BoxFuture;
use toolsmith::{ToolContext, tool};

/// Sets where the worker is to be killed: `<point>:<n>`, the `n`th time it reaches `<point>`.
pub fn kill_at(spec: &str) -> Result<(), String> {
    let (at, n) = spec.split_once(':').ok_or("a kill point is <point>:<n>")?;
    let n = n.parse().map_err(|_| "a kill point is <point>:<n>")?;
    let _ = KILL_AT.set(Mutex::new(Some((at.to_owned(), n))));
    Ok(())
}

/// Where the worker is to be killed: a step boundary's name and which time it is reached.
pub static KILL_AT: OnceLock<Mutex<Option<(String, u32)>>> = OnceLock::new();
/// Where the tools' effects land.
pub static LEDGER: OnceLock<PathBuf> = OnceLock::new();

/// A step boundary: when it is the one to be killed at, say so and wait for SIGKILL.
pub fn point(name: &str) {
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
pub fn lookup_ticket(
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
pub fn add_note(
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
pub fn delete_ticket(
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
pub struct SeededModel {
    /// The seed; `None` reads it from the run's prompt (`… seed <n>`).
    seed: Option<u64>,
    /// Whether each turn's calls are one program for `run_code` instead.
    programs: bool,
}

/// A small deterministic generator.
fn next(state: &mut u64) -> u64 {
    *state = state
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    *state >> 33
}

impl SeededModel {
    /// A model of `seed`'s script.
    #[allow(dead_code)]
    pub fn new(seed: u64) -> Self {
        Self {
            seed: Some(seed),
            programs: false,
        }
    }

    /// A model of `seed`'s script that writes each turn's calls as one program, for the
    /// sandbox's `run_code`: each call in a `try`, so a denied one reads as its error.
    #[allow(dead_code)]
    pub fn programs(seed: u64) -> Self {
        Self {
            seed: Some(seed),
            programs: true,
        }
    }

    /// A model that reads each run's seed from its prompt, which ends `seed <n>`.
    #[allow(dead_code)]
    pub fn from_prompt() -> Self {
        Self {
            seed: None,
            programs: false,
        }
    }

    /// The seed of the run `body` is a request of.
    fn seed_of(&self, body: &Value) -> u64 {
        self.seed.unwrap_or_else(|| {
            let prompt = body["messages"][0]["content"].as_str().unwrap_or_default();
            prompt
                .rsplit_once("seed ")
                .and_then(|(_, n)| n.trim_end_matches('.').parse().ok())
                .unwrap_or(0)
        })
    }
}

/// The calls of each turn of `seed`'s run: reads, writes and deletes (which wait for a
/// person).
fn script(seed: u64) -> Vec<Vec<(String, Value)>> {
    if seed == 0 {
        // The demo: a read and a note, then a deletion a person decides on.
        return vec![
            vec![
                ("lookup_ticket".into(), json!({"id": 7})),
                (
                    "add_note".into(),
                    json!({"id": 7, "note": "duplicate of 6"}),
                ),
            ],
            vec![("delete_ticket".into(), json!({"id": 7}))],
        ];
    }
    let mut rng = seed;
    let turns = 1 + next(&mut rng) % 3;
    (0..turns)
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
        .collect()
}

/// A turn's calls as one program: each in a `try`, its result or its error's first words
/// collected in order; the list is the answer.
fn program(calls: &[(String, Value)]) -> String {
    let mut code = String::from("r = []\n");
    for (name, input) in calls {
        let args: Vec<String> = input
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        code.push_str(&format!(
            "try:\n    r.append({name}({}))\nexcept Exception as e:\n    r.append(str(e)[:30])\n",
            args.join(", ")
        ));
    }
    code.push('r');
    code
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
            let script = script(self.seed_of(&request.body));
            let answer = match script.get(turn) {
                Some(calls) if self.programs => json!({
                    "role": "assistant", "stop_reason": "tool_use", "usage": usage,
                    "content": [{"type": "tool_use", "id": format!("toolu_{turn}"),
                        "name": "run_code", "input": {"code": program(calls)}}],
                }),
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
            };
            point("model.answered");
            Ok(answer)
        })
    }
}

/// Prints the audit records that carry a decision, and how many effects the ledger in `dir`
/// holds.
pub fn report(dir: &Path) -> Result<(), String> {
    let audit = std::fs::read_to_string(dir.join("audit.jsonl")).unwrap_or_default();
    for line in audit.lines().filter(|l| l.contains("\"approval\"")) {
        let record: Value = serde_json::from_str(line).unwrap_or_default();
        println!(
            "audit: {} {} {}",
            record["tool"], record["status"], record["approval"]
        );
    }
    let effects = std::fs::read_dir(dir)
        .map_err(|e| e.to_string())?
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("effect-"))
        .count();
    println!("effects applied: {effects} (one note, one deletion)");
    Ok(())
}

/// The process's exit: an error is the last line, `ERROR <what>`.
pub fn exit(result: Result<(), String>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            println!("ERROR {err}");
            ExitCode::FAILURE
        }
    }
}

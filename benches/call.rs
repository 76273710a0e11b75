//! Per-call overhead of `search_web` against plain serde. Each benchmark is a pair measured
//! interleaved (every sample runs the floor, then the subject, the same number of times), and
//! the ratio of their totals is printed at the end:
//!
//! - the floor: `serde_json::from_str::<Args>` + the function + `serde_json::to_string`;
//! - `success/call_into`: `Toolbox::call_into`, the fastest public path (envelope written into a
//!   reused buffer), inline tool;
//! - `success/call_then_to_json`: `Toolbox::call` then `ToolOutcome::to_json`, inline tool;
//! - `success/call_into_value`: `call_into` with arguments already parsed into a `Value`, against
//!   a floor that reads the struct from the `Value`;
//! - `success/async_then_to_json`: the same function as an `async fn`, `call` then `to_json`;
//! - `success/blocking_then_to_json`: the same function without `inline`, on the blocking pool;
//! - `registry/1000_tools_vs_1`: `call_into` among 1,000 registered tools against the tool alone;
//! - `failure/*`: invalid arguments (one violation, four violations), every violation collected
//!   with its pointer, against the success floor;
//! - `idempotent/*`: a write with the in-memory idempotency store, a first call (fresh
//!   arguments each time, the floor reads the same texts) and a replay, against the same
//!   function's floor.
//!
//! `cargo bench --bench call` (add a filter such as `success` to run part of it).
//!
//! With `TOOLSMITH_COUNT=<path>:<n>` set, the benchmark instead makes `n` calls of one path
//! and exits, for `scripts/bench-instructions.sh`, which counts their instructions with
//! callgrind: timings on a shared machine drift, instruction counts do not.

mod support;

use std::hint::black_box;

use criterion::Criterion;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolsmith::{ToolContext, Toolbox, tool};

/// A recent time window.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DateRestrict {
    /// The last day.
    D1,
    /// The last week.
    W1,
    /// The last month.
    M1,
}

/// What a search would run.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Plan {
    /// The keywords.
    query: String,
    /// How many results.
    num_results: u8,
    /// The window, if any.
    date_restrict: Option<DateRestrict>,
}

fn plan(query: String, num_results: u8, date_restrict: Option<DateRestrict>) -> Plan {
    Plan {
        query,
        num_results,
        date_restrict,
    }
}

/// Search the web for real-time information. Read-only. Not for private internal documents.
#[tool(effect = "read", open_world, inline)]
fn search_web(
    /// Search keywords in natural language; never a URL or SQL.
    #[arg(length(min = 2, max = 300))]
    query: String,
    /// How many results to return.
    #[arg(range(min = 1, max = 10), default = 5)]
    num_results: u8,
    /// Only results from this recent window; omit for no limit.
    date_restrict: Option<DateRestrict>,
) -> Plan {
    plan(query, num_results, date_restrict)
}

// The same function, not inline: it runs on the blocking pool.
/// Search the web for real-time information. Read-only. Not for private internal documents.
#[tool(effect = "read", open_world)]
fn search_web_blocking(
    /// Search keywords in natural language; never a URL or SQL.
    #[arg(length(min = 2, max = 300))]
    query: String,
    /// How many results to return.
    #[arg(range(min = 1, max = 10), default = 5)]
    num_results: u8,
    /// Only results from this recent window; omit for no limit.
    date_restrict: Option<DateRestrict>,
) -> Plan {
    plan(query, num_results, date_restrict)
}

// The same function, async: it runs as a future on the caller's task.
/// Search the web for real-time information. Read-only. Not for private internal documents.
#[tool(effect = "read", open_world)]
async fn search_web_async(
    /// Search keywords in natural language; never a URL or SQL.
    #[arg(length(min = 2, max = 300))]
    query: String,
    /// How many results to return.
    #[arg(range(min = 1, max = 10), default = 5)]
    num_results: u8,
    /// Only results from this recent window; omit for no limit.
    date_restrict: Option<DateRestrict>,
) -> Plan {
    plan(query, num_results, date_restrict)
}

/// A created ticket.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Ticket {
    /// The ticket's number.
    id: usize,
    /// Its title.
    title: String,
}

fn ticket(title: String) -> Ticket {
    Ticket {
        id: title.len(),
        title,
    }
}

/// Create a support ticket. Writes data. Not for incidents.
#[tool(effect = "write", inline)]
fn create_ticket(
    /// The ticket's title.
    #[arg(length(min = 1, max = 200))]
    title: String,
) -> Ticket {
    ticket(title)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FloorTicket {
    title: String,
}

fn floor_ticket(text: &str) -> Result<String, serde_json::Error> {
    let args: FloorTicket = serde_json::from_str(text)?;
    serde_json::to_string(&ticket(args.title))
}

fn fillers(n: usize) -> impl Iterator<Item = support::Defined> {
    (0..n).map(|i| {
        support::Defined(toolsmith::ToolDefinition::new(
            format!("filler_tool_{i:04}"),
            "Look up a filler record. Read-only. Not for real data.",
            serde_json::json!({"type": "object", "properties": {"id": {"type": "string"}},
                "required": ["id"], "additionalProperties": false}),
        ))
    })
}

/// The floor: what a hand-written dispatcher without checks does.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FloorArgs {
    query: String,
    #[serde(default)]
    num_results: Option<u8>,
    #[serde(default)]
    date_restrict: Option<DateRestrict>,
}

fn floor(text: &str) -> Result<String, serde_json::Error> {
    floor_of(serde_json::from_str(text)?)
}

/// The floor for arguments that arrive parsed (Anthropic, Gemini, MCP): read from the `Value`.
fn floor_value(value: &serde_json::Value) -> Result<String, serde_json::Error> {
    floor_of(FloorArgs::deserialize(value)?)
}

fn floor_of(args: FloorArgs) -> Result<String, serde_json::Error> {
    let out = plan(
        args.query,
        args.num_results.unwrap_or(5),
        args.date_restrict,
    );
    serde_json::to_string(&out)
}

const VALID: &str = r#"{"query":"rust async traits","num_results":3,"date_restrict":"w1"}"#;
const ONE_VIOLATION: &str = r#"{"query":"rust async traits","num_results":11}"#;
const FOUR_VIOLATIONS: &str =
    r#"{"query":"r","num_results":11,"date_restrict":"y1","sort":"date"}"#;

/// Appends a call's envelope to `out`, cleared first, as a dispatcher reusing its buffer does.
fn call_into(
    rt: &tokio::runtime::Runtime,
    toolbox: &Toolbox,
    name: &str,
    arguments: &str,
    ctx: &ToolContext,
    out: &mut Vec<u8>,
) -> toolsmith::outcome::CallStatus {
    out.clear();
    support::run(rt, toolbox.call_into(name, black_box(arguments), ctx, out))
}

fn success(c: &mut Criterion, rt: &tokio::runtime::Runtime) {
    let toolbox = Toolbox::new()
        .with(SearchWeb)
        .with(SearchWebBlocking)
        .with(SearchWebAsync);
    let ctx = ToolContext::new();
    // Warm the definition caches.
    let _ = support::run(rt, toolbox.call("search_web", VALID, &ctx));
    let _ = support::run(rt, toolbox.call("search_web_blocking", VALID, &ctx));
    let _ = support::run(rt, toolbox.call("search_web_async", VALID, &ctx));

    let mut group = c.benchmark_group("success");
    let mut out = Vec::with_capacity(256);
    support::bench_pair(
        &mut group,
        "success",
        "call_into",
        |_| floor(black_box(VALID)),
        |_| call_into(rt, &toolbox, "search_web", VALID, &ctx, &mut out),
    );
    let neutral = neutralizing();
    support::bench_pair(
        &mut group,
        "success",
        "call_into_neutralize",
        |_| floor(black_box(VALID)),
        |_| call_into(rt, &neutral, "search_web", VALID, &ctx, &mut out),
    );
    support::bench_pair(
        &mut group,
        "success",
        "call_then_to_json",
        |_| floor(black_box(VALID)),
        |_| support::run(rt, toolbox.call("search_web", black_box(VALID), &ctx)).to_json(),
    );
    let parsed: serde_json::Value = serde_json::from_str(VALID).expect("valid JSON");
    support::bench_pair(
        &mut group,
        "success",
        "call_into_value",
        |_| floor_value(black_box(&parsed)),
        |_| {
            out.clear();
            support::run(
                rt,
                toolbox.call_into("search_web", black_box(&parsed), &ctx, &mut out),
            )
        },
    );
    support::bench_pair(
        &mut group,
        "success",
        "async_then_to_json",
        |_| floor(black_box(VALID)),
        |_| support::run(rt, toolbox.call("search_web_async", black_box(VALID), &ctx)).to_json(),
    );
    support::bench_pair(
        &mut group,
        "success",
        "blocking_then_to_json",
        |_| floor(black_box(VALID)),
        |_| {
            let call = toolbox.call("search_web_blocking", black_box(VALID), &ctx);
            support::run(rt, call).to_json()
        },
    );
    group.finish();
}

fn registry(c: &mut Criterion, rt: &tokio::runtime::Runtime) {
    let alone = Toolbox::new().with(SearchWeb);
    let mut crowded = Toolbox::new();
    for filler in fillers(999) {
        crowded.register(filler).expect("distinct names");
    }
    let crowded = crowded.with(SearchWeb);
    let ctx = ToolContext::new();
    let mut group = c.benchmark_group("registry");
    let (mut a, mut b) = (Vec::with_capacity(256), Vec::with_capacity(256));
    support::bench_pair(
        &mut group,
        "registry",
        "1000_tools_vs_1",
        |_| call_into(rt, &alone, "search_web", VALID, &ctx, &mut a),
        |_| call_into(rt, &crowded, "search_web", VALID, &ctx, &mut b),
    );
    group.finish();
}

fn failure(c: &mut Criterion, rt: &tokio::runtime::Runtime) {
    let toolbox = Toolbox::new().with(SearchWeb);
    let ctx = ToolContext::new();
    let _ = support::run(rt, toolbox.call("search_web", FOUR_VIOLATIONS, &ctx));

    let mut group = c.benchmark_group("failure");
    let mut out = Vec::with_capacity(2048);
    for (label, text) in [
        ("one_violation", ONE_VIOLATION),
        ("four_violations", FOUR_VIOLATIONS),
    ] {
        support::bench_pair(
            &mut group,
            "failure",
            label,
            |_| floor(black_box(VALID)),
            |_| call_into(rt, &toolbox, "search_web", text, &ctx, &mut out),
        );
    }
    group.finish();
}

fn idempotent(c: &mut Criterion, rt: &tokio::runtime::Runtime) {
    let toolbox = Toolbox::new().with(CreateTicket).with_state(
        toolsmith::state::State::memory()
            .with_idempotency(toolsmith::state::MemoryIdempotencyStore::new(100_000)),
    );
    let ctx = ToolContext::new().with_run_id("bench");
    let replayed = r#"{"title":"Printer on fire"}"#;
    let _ = support::run(rt, toolbox.call("create_ticket", replayed, &ctx));

    let mut group = c.benchmark_group("idempotent");
    let mut out = Vec::with_capacity(256);
    // Fresh arguments for every first call; the floor reads the same texts.
    let fresh = |i: u64| format!(r#"{{"title":"Ticket number {i}"}}"#);
    let mut round = 0u64;
    support::bench_pair(
        &mut group,
        "idempotent",
        "first_call",
        |i| floor_ticket(&fresh(i)),
        |_| {
            round += 1;
            call_into(rt, &toolbox, "create_ticket", &fresh(round), &ctx, &mut out)
        },
    );
    support::bench_pair(
        &mut group,
        "idempotent",
        "replay",
        |_| floor_ticket(black_box(replayed)),
        |_| call_into(rt, &toolbox, "create_ticket", replayed, &ctx, &mut out),
    );
    group.finish();
}

/// `search_web` with the output mode of a tool that is not `open_world` (neutralize: the
/// output scanned, nothing added to a clean envelope).
fn neutralizing() -> Toolbox {
    Toolbox::new().with(SearchWeb).with_tool_policy(
        "search_web",
        toolsmith::policy::ToolPolicy {
            output_safety: Some(toolsmith::output::OutputSafety::Neutralize),
            ..toolsmith::policy::ToolPolicy::default()
        },
    )
}

/// What scanning and neutralizing outputs costs per KB: clean prose, and an HTML page whose
/// scripts and comments are escaped.
fn output(c: &mut Criterion) {
    let prose = "The quick brown fox jumps over the lazy dog, then rests in the shade of an old oak tree while the farmer counts his sheep. ".repeat(9);
    let prose = &prose[..1024];
    let html = "<div class=\"note\"><p>Order 42 shipped.</p><!-- tracking --><script>track()</script></div>\n".repeat(12);
    let html = &html[..1024];
    let mut group = c.benchmark_group("output");
    group.throughput(criterion::Throughput::Bytes(1024));
    group.bench_function("scan 1 KiB of prose", |b| {
        b.iter(|| toolsmith::output::scan(black_box(prose)))
    });
    group.bench_function("neutralize 1 KiB of HTML", |b| {
        b.iter(|| toolsmith::output::neutralize(black_box(html)))
    });
    group.bench_function("redact 1 KiB of prose", |b| {
        b.iter(|| toolsmith::output::redact(black_box(prose)))
    });
    group.finish();
}

/// `n` calls of one path, for counting instructions (see the module docs).
fn count(rt: &tokio::runtime::Runtime, path: &str, n: u64) {
    let toolbox = Toolbox::new()
        .with(SearchWeb)
        .with(SearchWebAsync)
        .with(CreateTicket)
        .with_state(
            toolsmith::state::State::memory()
                .with_idempotency(toolsmith::state::MemoryIdempotencyStore::new(100_000)),
        );
    let ctx = ToolContext::new().with_run_id("bench");
    let parsed: serde_json::Value = serde_json::from_str(VALID).expect("valid JSON");
    let mut out = Vec::with_capacity(2048);
    let neutral = neutralizing();
    let replayed = r#"{"title":"Printer on fire"}"#;
    let _ = support::run(rt, toolbox.call("create_ticket", replayed, &ctx));
    for i in 0..n {
        match path {
            "floor" => drop(black_box(floor(black_box(VALID)))),
            "call_into" => {
                black_box(call_into(rt, &toolbox, "search_web", VALID, &ctx, &mut out));
            }
            "call_into_neutralize" => {
                black_box(call_into(rt, &neutral, "search_web", VALID, &ctx, &mut out));
            }
            "call_then_to_json" => drop(black_box(
                support::run(rt, toolbox.call("search_web", black_box(VALID), &ctx)).to_json(),
            )),
            "call_into_value" => {
                out.clear();
                let call = toolbox.call_into("search_web", black_box(&parsed), &ctx, &mut out);
                black_box(support::run(rt, call));
            }
            "async_then_to_json" => drop(black_box(
                support::run(rt, toolbox.call("search_web_async", black_box(VALID), &ctx))
                    .to_json(),
            )),
            "one_violation" => {
                black_box(call_into(
                    rt,
                    &toolbox,
                    "search_web",
                    ONE_VIOLATION,
                    &ctx,
                    &mut out,
                ));
            }
            "four_violations" => {
                black_box(call_into(
                    rt,
                    &toolbox,
                    "search_web",
                    FOUR_VIOLATIONS,
                    &ctx,
                    &mut out,
                ));
            }
            "idempotent_first" => {
                let fresh = format!(r#"{{"title":"Ticket number {i}"}}"#);
                black_box(call_into(
                    rt,
                    &toolbox,
                    "create_ticket",
                    &fresh,
                    &ctx,
                    &mut out,
                ));
            }
            "idempotent_replay" => {
                black_box(call_into(
                    rt,
                    &toolbox,
                    "create_ticket",
                    replayed,
                    &ctx,
                    &mut out,
                ));
            }
            other => panic!("unknown path `{other}`"),
        }
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let _entered = rt.enter();
    if let Ok(spec) = std::env::var("TOOLSMITH_COUNT") {
        let (path, n) = spec.split_once(':').expect("TOOLSMITH_COUNT=<path>:<n>");
        count(&rt, path, n.parse().expect("a number of calls"));
        return;
    }
    let mut c = Criterion::default().configure_from_args();
    success(&mut c, &rt);
    registry(&mut c, &rt);
    failure(&mut c, &rt);
    idempotent(&mut c, &rt);
    output(&mut c);
    c.final_summary();
    support::report_pairs(
        "search_web per call, against the floor (serde_json::from_str + call + to_string), interleaved",
        &[
            ("success/call_into", 1.15),
            ("success/call_into_neutralize", 1.15),
            ("success/call_then_to_json", 1.25),
            ("success/call_into_value", f64::INFINITY),
            ("success/async_then_to_json", 2.0),
            ("success/blocking_then_to_json", f64::INFINITY),
            ("registry/1000_tools_vs_1", 1.05),
            ("failure/one_violation", 3.0),
            ("failure/four_violations", 5.0),
            ("idempotent/first_call", 4.0),
            ("idempotent/replay", 3.0),
        ],
    );
}

//! Per-call overhead of `search_web` against plain serde, in one run:
//!
//! - `success/floor`: `serde_json::from_str::<Args>` + the function + `serde_json::to_string`;
//! - `success/call_into`: `Toolbox::call_into`, the fastest public path (envelope written into a
//!   reused buffer);
//! - `success/call_then_to_json`: `Toolbox::call` then `ToolOutcome::to_json`;
//! - `success/blocking_then_to_json`: the same function without `inline`, on the blocking pool;
//! - `registry/*`: `call_into` with the tool alone, and among 1,000 registered tools;
//! - `failure/*`: invalid arguments (one violation, four violations), every violation collected
//!   with its pointer, against the success floor;
//! - `idempotent/*`: a write with the in-memory idempotency store, a first call (fresh
//!   arguments each time) and a replay, against the same function's floor.
//!
//! `cargo bench --bench call`; the ratios are printed at the end.

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
    let args: FloorArgs = serde_json::from_str(text)?;
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

fn success(c: &mut Criterion, rt: &tokio::runtime::Runtime) {
    let toolbox = Toolbox::new().with(SearchWeb).with(SearchWebBlocking);
    let ctx = ToolContext::new();
    // Warm the definition caches.
    let _ = support::run(rt, toolbox.call("search_web", VALID, &ctx));
    let _ = support::run(rt, toolbox.call("search_web_blocking", VALID, &ctx));

    let mut group = c.benchmark_group("success");
    group.bench_function("floor", |b| b.iter(|| floor(black_box(VALID))));
    support::bench_call_into(&mut group, "call_into", rt, &toolbox, "search_web", VALID);
    group.bench_function("call_then_to_json", |b| {
        b.iter(|| {
            let outcome = support::run(rt, toolbox.call("search_web", black_box(VALID), &ctx));
            outcome.to_json()
        });
    });
    group.bench_function("blocking_then_to_json", |b| {
        b.iter(|| {
            let call = toolbox.call("search_web_blocking", black_box(VALID), &ctx);
            support::run(rt, call).to_json()
        });
    });
    group.finish();
}

fn registry(c: &mut Criterion, rt: &tokio::runtime::Runtime) {
    let alone = Toolbox::new().with(SearchWeb);
    let mut crowded = Toolbox::new();
    for filler in fillers(999) {
        crowded.register(filler).expect("distinct names");
    }
    let crowded = crowded.with(SearchWeb);
    let mut group = c.benchmark_group("registry");
    for (label, toolbox) in [("1_tool", &alone), ("1000_tools", &crowded)] {
        support::bench_call_into(&mut group, label, rt, toolbox, "search_web", VALID);
    }
    group.finish();
}

fn failure(c: &mut Criterion, rt: &tokio::runtime::Runtime) {
    let toolbox = Toolbox::new().with(SearchWeb);
    let ctx = ToolContext::new();
    let _ = support::run(rt, toolbox.call("search_web", FOUR_VIOLATIONS, &ctx));

    let mut group = c.benchmark_group("failure");
    group.bench_function("floor", |b| b.iter(|| floor(black_box(VALID))));
    for (label, text) in [
        ("one_violation", ONE_VIOLATION),
        ("four_violations", FOUR_VIOLATIONS),
    ] {
        group.bench_function(label, |b| {
            let mut out = Vec::with_capacity(1024);
            b.iter(|| {
                out.clear();
                support::run(
                    rt,
                    toolbox.call_into("search_web", black_box(text), &ctx, &mut out),
                )
            });
        });
    }
    group.finish();
}

fn idempotent(c: &mut Criterion, rt: &tokio::runtime::Runtime) {
    let toolbox = Toolbox::new()
        .with(CreateTicket)
        .with_idempotency_store(toolsmith::MemoryStore::new(100_000));
    let ctx = ToolContext::new();
    let replayed = r#"{"title":"Printer on fire"}"#;
    let _ = support::run(rt, toolbox.call("create_ticket", replayed, &ctx));

    let mut group = c.benchmark_group("idempotent");
    group.bench_function("floor", |b| b.iter(|| floor_ticket(black_box(replayed))));
    let mut n = 0u64;
    group.bench_function("first_call", |b| {
        let mut out = Vec::with_capacity(256);
        b.iter_batched(
            || {
                n += 1;
                format!(r#"{{"title":"Ticket number {n}"}}"#)
            },
            |text| {
                out.clear();
                support::run(
                    rt,
                    toolbox.call_into("create_ticket", &text, &ctx, &mut out),
                )
            },
            criterion::BatchSize::SmallInput,
        );
    });
    support::bench_call_into(
        &mut group,
        "replay",
        rt,
        &toolbox,
        "create_ticket",
        replayed,
    );
    group.finish();
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let _entered = rt.enter();
    let mut c = Criterion::default().configure_from_args();
    success(&mut c, &rt);
    registry(&mut c, &rt);
    failure(&mut c, &rt);
    idempotent(&mut c, &rt);
    c.final_summary();
    let ratio = |subject, floor, target| support::Ratio {
        subject,
        floor,
        target,
        per: 1.0,
    };
    support::report(
        "search_web per call, against the floor (serde_json::from_str + call + to_string)",
        &[
            ratio("success/call_into", "success/floor", 1.15),
            ratio("success/call_then_to_json", "success/floor", 1.25),
            ratio(
                "success/blocking_then_to_json",
                "success/floor",
                f64::INFINITY,
            ),
            ratio("registry/1000_tools", "registry/1_tool", 1.05),
            ratio("failure/one_violation", "failure/floor", 3.0),
            ratio("failure/four_violations", "failure/floor", 3.0),
            ratio("idempotent/first_call", "idempotent/floor", 2.0),
            ratio("idempotent/replay", "idempotent/floor", 2.0),
        ],
    );
}

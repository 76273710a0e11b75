//! What code mode costs on this machine (`toolsmith::sandbox`):
//!
//! - `code/start`: a program of one expression (`1`), from source to answer: parsing,
//!   compiling, starting the interpreter, one step on the blocking pool;
//! - `code/program_loop_10`: a program looping ten times without calling a tool, the floor
//!   of the next one;
//! - `code/program_calls_10`: the same loop calling a tool ten times, each call through the
//!   toolbox's door;
//! - `code/direct_calls_10`: the same ten calls made directly (`Toolbox::call`);
//! - `code/worker_start`, `code/worker_calls_10`: the program `1` and the ten-call program
//!   in a worker process of their own (`SandboxBuilder::worker`), process start included.
//!
//! The report at the end gives the sandbox's start and its overhead per tool call over a
//! direct call: (`program_calls_10` − `program_loop_10` − `direct_calls_10`) / 10.
//!
//! `cargo bench --bench code --features sandbox`.

mod support;

use std::hint::black_box;
use std::sync::Arc;

use criterion::Criterion;
use serde_json::json;
use toolsmith::sandbox::Sandbox;
use toolsmith::{ToolContext, Toolbox, tool};

/// Doubles a number. Read-only. Not for floats.
#[tool(effect = "read", inline)]
fn double(
    /// The number.
    #[arg(range(max = 1_000_000))]
    n: u32,
) -> u32 {
    n * 2
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime");
    let toolbox = Arc::new(Toolbox::new().with(Double));
    let sandbox = Sandbox::builder(Arc::clone(&toolbox))
        .build()
        .expect("one tool");
    let in_worker = Sandbox::builder(Arc::clone(&toolbox))
        .worker(env!("CARGO_BIN_EXE_toolsmith-sandbox"))
        .build()
        .expect("one tool");
    let ctx = ToolContext::new().with_call_id("bench");
    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("code");
    group.bench_function("start", |b| {
        b.iter(|| black_box(rt.block_on(sandbox.run(black_box("1"), &ctx)).is_ok()));
    });
    group.bench_function("program_loop_10", |b| {
        let program = "t = 0\nfor i in range(10):\n    t = t + i * 2\nt";
        b.iter(|| black_box(rt.block_on(sandbox.run(program, &ctx)).is_ok()));
    });
    group.bench_function("program_calls_10", |b| {
        let program = "t = 0\nfor i in range(10):\n    t = t + double(n=i)\nt";
        b.iter(|| black_box(rt.block_on(sandbox.run(program, &ctx)).is_ok()));
    });
    group.bench_function("direct_calls_10", |b| {
        b.iter(|| {
            rt.block_on(async {
                for i in 0..10 {
                    let out = toolbox.call("double", json!({ "n": i }), &ctx).await;
                    black_box(out.is_success());
                }
            });
        });
    });
    group.bench_function("worker_start", |b| {
        b.iter(|| black_box(rt.block_on(in_worker.run(black_box("1"), &ctx)).is_ok()));
    });
    group.bench_function("worker_calls_10", |b| {
        let program = "t = 0\nfor i in range(10):\n    t = t + double(n=i)\nt";
        b.iter(|| black_box(rt.block_on(in_worker.run(program, &ctx)).is_ok()));
    });
    group.finish();
    c.final_summary();

    let mean = |id: &str| support::mean_ns(&format!("code/{id}"));
    if let (Some(start), Some(looped), Some(calls), Some(direct)) = (
        mean("start"),
        mean("program_loop_10"),
        mean("program_calls_10"),
        mean("direct_calls_10"),
    ) {
        println!(
            "sandbox start (program `1`, source to answer): {:.1} µs",
            start / 1000.0
        );
        println!(
            "overhead per tool call from a program over a direct call: {:.1} µs",
            (calls - looped - direct) / 10.0 / 1000.0
        );
    }
}

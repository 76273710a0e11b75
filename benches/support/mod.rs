//! What the benchmarks share: running a future that is usually ready at once, and the ratio
//! report read back from criterion's estimates.
#![allow(dead_code)] // each benchmark uses part of it

use std::future::Future;
use std::hint::black_box;
use std::path::PathBuf;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

/// Polls `future` once; a call that completes in place (an inline tool) costs no runtime
/// round trip. One that does not is finished on `rt`. Call it inside `rt.enter()`.
pub fn run<F: Future>(rt: &tokio::runtime::Runtime, future: F) -> F::Output {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(out) => out,
        Poll::Pending => rt.block_on(future),
    }
}

/// criterion's directory: `target/criterion` beside the benchmark executable's `target/*/deps`.
fn criterion_home() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return Some(home.into());
    }
    let exe = std::env::current_exe().ok()?;
    Some(exe.parent()?.parent()?.parent()?.join("criterion"))
}

/// The mean time of a benchmark (`group/function`) in this run, in nanoseconds.
pub fn mean_ns(id: &str) -> Option<f64> {
    let path = criterion_home()?
        .join(id)
        .join("new")
        .join("estimates.json");
    let text = std::fs::read_to_string(path).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    value["mean"]["point_estimate"].as_f64()
}

/// One line of the report: `subject` against `floor`, and the most the ratio may be.
pub struct Ratio {
    pub subject: &'static str,
    pub floor: &'static str,
    pub target: f64,
    /// Divides both means (per-tool figures).
    pub per: f64,
}

/// Prints `subject / floor` for each line, with its target; a line whose benchmarks did not
/// run (filtered out) says so.
pub fn report(title: &str, lines: &[Ratio]) {
    println!("\n{title}");
    println!(
        "{:<46} {:>12} {:>12} {:>8} {:>8}",
        "benchmark", "mean", "floor", "ratio", "target"
    );
    for line in lines {
        match (mean_ns(line.subject), mean_ns(line.floor)) {
            (Some(subject), Some(floor)) => {
                let ratio = subject / floor;
                let verdict = if ratio <= line.target { "ok" } else { "MISSED" };
                println!(
                    "{:<46} {:>10.1}ns {:>10.1}ns {:>7.3}x {:>7.2}x {verdict}",
                    line.subject,
                    subject / line.per,
                    floor / line.per,
                    ratio,
                    line.target
                );
            }
            _ => println!("{:<46} (not run)", line.subject),
        }
    }
}

/// Prints an absolute figure against its limit.
pub fn report_limit(id: &str, per: f64, limit_ns: f64, what: &str) {
    match mean_ns(id) {
        Some(mean) => {
            let value = mean / per;
            let verdict = if value <= limit_ns { "ok" } else { "MISSED" };
            println!(
                "{:<46} {:>10.1}ns {what} (limit {limit_ns} ns) {verdict}",
                id, value
            );
        }
        None => println!("{id:<46} (not run)"),
    }
}

/// A tool defined at run time (`ToolDefinition::new`), registered to fill a toolbox; calling
/// it is an error.
pub struct Defined(pub toolsmith::ToolDefinition);

impl toolsmith::Tool for Defined {
    fn definition(&self) -> &toolsmith::ToolDefinition {
        &self.0
    }

    fn call<'a>(
        &'a self,
        _arguments: toolsmith::Arguments<'a>,
        _ctx: &'a toolsmith::ToolContext,
    ) -> toolsmith::BoxFuture<'a, toolsmith::ToolOutcome> {
        Box::pin(std::future::ready(toolsmith::ToolOutcome::Error(
            toolsmith::ToolError::not_found("A tool defined for the benchmark only."),
        )))
    }
}

/// Benchmarks `Toolbox::call_into(tool, arguments)` into one reused buffer.
pub fn bench_call_into(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    label: &str,
    rt: &tokio::runtime::Runtime,
    toolbox: &toolsmith::Toolbox,
    tool: &str,
    arguments: &str,
) {
    let ctx = toolsmith::ToolContext::new();
    group.bench_function(label, |b| {
        let mut out = Vec::with_capacity(1024);
        b.iter(|| {
            out.clear();
            run(
                rt,
                toolbox.call_into(tool, black_box(arguments), &ctx, &mut out),
            )
        });
    });
}

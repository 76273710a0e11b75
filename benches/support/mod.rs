//! What the benchmarks share: running a future that is usually ready at once, and the ratio
//! report read back from criterion's estimates.
#![allow(dead_code)] // each benchmark uses part of it

use std::future::Future;
use std::hint::black_box;
use std::path::PathBuf;
use std::pin::pin;
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

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
    ) -> toolsmith::tool::BoxFuture<'a, toolsmith::ToolOutcome> {
        Box::pin(std::future::ready(toolsmith::ToolOutcome::Error(
            toolsmith::ToolError::not_found("A tool defined for the benchmark only."),
        )))
    }
}

/// Per pair: the floor's and the subject's total time and iterations, over every sample.
static PAIRS: Mutex<Vec<(String, Duration, Duration, u64)>> = Mutex::new(Vec::new());

/// Benchmarks `subject` against `floor`, interleaved: every criterion sample times `iters`
/// runs of the floor, then `iters` runs of the subject, back to back. criterion reports the
/// subject; the ratio comes from the totals of both, measured side by side, so that a machine
/// whose speed drifts between benchmarks (a shared VM) does not skew it.
/// `name` is the group's name, for the report (`name/id`).
pub fn bench_pair<F, S, R1, R2>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    id: &str,
    mut floor: F,
    mut subject: S,
) where
    F: FnMut(u64) -> R1,
    S: FnMut(u64) -> R2,
{
    let full = format!("{name}/{id}");
    group.bench_function(id, |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for i in 0..iters {
                black_box(floor(i));
            }
            let floor_time = start.elapsed();
            let start = Instant::now();
            for i in 0..iters {
                black_box(subject(i));
            }
            let subject_time = start.elapsed();
            if let Ok(mut pairs) = PAIRS.lock() {
                match pairs.iter_mut().find(|p| p.0 == full) {
                    Some(pair) => {
                        pair.1 += floor_time;
                        pair.2 += subject_time;
                        pair.3 += iters;
                    }
                    None => pairs.push((full.clone(), floor_time, subject_time, iters)),
                }
            }
            subject_time
        });
    });
}

/// Prints each pair's mean times and ratio against its target (pairs not run are left out).
pub fn report_pairs(title: &str, targets: &[(&str, f64)]) {
    println!("\n{title}");
    println!(
        "{:<40} {:>12} {:>12} {:>8} {:>8}",
        "benchmark", "mean", "floor", "ratio", "target"
    );
    let pairs = PAIRS.lock().map(|p| p.clone()).unwrap_or_default();
    for (id, target) in targets {
        let Some((_, floor, subject, iters)) = pairs.iter().find(|p| p.0 == *id) else {
            println!("{id:<40} (not run)");
            continue;
        };
        let per = |d: &Duration| d.as_nanos() as f64 / *iters as f64;
        let ratio = per(subject) / per(floor);
        let verdict = if ratio <= *target { "ok" } else { "MISSED" };
        let target = if target.is_finite() {
            format!("{target:.2}x")
        } else {
            "-".to_owned()
        };
        println!(
            "{:<40} {:>10.1}ns {:>10.1}ns {:>7.3}x {:>8} {verdict}",
            id,
            per(subject),
            per(floor),
            ratio,
            target
        );
    }
}

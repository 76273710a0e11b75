//! `call_all` of 1,000 calls that each wait 1 ms, at a concurrency of 64: the makespan against
//! the same 1,000 waits scheduled by hand under a 64-permit semaphore (the floor), and
//! against the ideal of ceil(1000 / 64) = 16 waits of 1 ms.
//!
//! `cargo bench --bench parallel`.

mod support;

use std::sync::Arc;
use std::time::Duration;

use criterion::Criterion;
use serde_json::json;
use toolsmith::{ToolCall, ToolContext, Toolbox, tool};

/// Wait one millisecond. Read-only. Not for real work.
#[tool(effect = "read")]
async fn wait_one_ms() {
    tokio::time::sleep(Duration::from_millis(1)).await;
}

const CALLS: usize = 1000;
const CONCURRENCY: usize = 64;

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let toolbox = Toolbox::new()
        .with(WaitOneMs)
        .with_defaults(toolsmith::policy::Defaults {
            concurrency: CONCURRENCY,
            ..toolsmith::policy::Defaults::default()
        });
    let calls: Vec<ToolCall> = (0..CALLS)
        .map(|i| ToolCall {
            id: Some(format!("call_{i}")),
            name: "wait_one_ms".into(),
            arguments: json!({}),
        })
        .collect();
    let ctx = ToolContext::new();

    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("parallel");
    group.sample_size(20);
    support::bench_pair(
        &mut group,
        "parallel",
        "call_all",
        |_| {
            rt.block_on(async {
                let permits = Arc::new(tokio::sync::Semaphore::new(CONCURRENCY));
                let mut tasks = tokio::task::JoinSet::new();
                for _ in 0..CALLS {
                    let permits = Arc::clone(&permits);
                    tasks.spawn(async move {
                        let _permit = permits.acquire_owned().await;
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    });
                }
                while tasks.join_next().await.is_some() {}
            });
        },
        |_| {
            let outcomes = rt.block_on(toolbox.call_all(&calls, &ctx));
            assert!(outcomes.iter().all(toolsmith::ToolOutcome::is_success));
        },
    );
    group.finish();
    c.final_summary();

    support::report_pairs(
        "call_all makespan, 1,000 calls of 1 ms at concurrency 64, against the same waits under a semaphore",
        &[("parallel/call_all", 1.05)],
    );
    let ideal_ns = CALLS.div_ceil(CONCURRENCY) as f64 * 1_000_000.0;
    if let Some(mean) = support::mean_ns("parallel/call_all") {
        println!(
            "{:<40} {:>10.2}ms against the ideal {:.0} ms: {:.3}x",
            "parallel/call_all vs 16 waits of 1 ms",
            mean / 1e6,
            ideal_ns / 1e6,
            mean / ideal_ns
        );
    }
}

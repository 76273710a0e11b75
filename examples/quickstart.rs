//! Three tools, their canonical JSON, one valid call and three invalid ones.
//!
//! Run with `cargo run --example quickstart`; the tools are in `examples/tools/mod.rs`.

mod telemetry;
mod tools;

use toolsmith::ToolContext;

#[tokio::main]
async fn main() {
    let _telemetry = telemetry::export();
    let toolbox = tools::toolbox();

    println!("== Tool definitions (canonical JSON Schema 2020-12)\n");
    for def in toolbox.definitions() {
        println!(
            "{}\n",
            serde_json::to_string_pretty(def).unwrap_or_default()
        );
    }

    let ctx = ToolContext::new().with_principal("user_42");
    let calls = [
        (
            "valid call",
            "search_web",
            r#"{"query": "rust async traits", "num_results": 2}"#,
        ),
        (
            "out of range and unknown key",
            "search_web",
            r#"{"query": "rust", "num_results": 11, "sort": "date"}"#,
        ),
        (
            "missing, too short, wrong enum",
            "search_web",
            r#"{"query": "r", "date_restrict": "y1"}"#,
        ),
        ("unknown tool", "search_news", r#"{"query": "rust"}"#),
    ];
    for (label, name, arguments) in calls {
        println!("== {label}: {name}({arguments})");
        let outcome = toolbox.call(name, arguments, &ctx).await;
        println!(
            "{}\n",
            serde_json::to_string_pretty(&outcome).unwrap_or_default()
        );
    }
}

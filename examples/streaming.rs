//! A recorded OpenAI Chat stream, read as it arrives, with the tool's schema: one call is
//! valid and runs; one is refused while the model is still writing it (a room no room starts
//! with); one is cut off although the stream ends with `finish_reason: "tool_calls"`, and never
//! runs. Every call is answered, and the cut-off one goes back into the history in a form the
//! provider accepts.
//!
//! Run with `cargo run --example streaming`.

use std::sync::atomic::Ordering;

use serde_json::Value;
use toolsmith::{Dialect, ToolContext, ToolOutcome, Toolbox};

mod telemetry;
#[path = "tools/thermostat.rs"]
mod thermostat;

use thermostat::{SET as RAN, SetThermostat};

/// The recorded stream: server-sent events, one `data:` line each.
const STREAM: &str = include_str!("../tests/fixtures/streams/checked_openai_chat.sse");

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let _telemetry = telemetry::export();
    let toolbox = Toolbox::new().with(SetThermostat);
    let dialect = Dialect::OpenAiChat { strict: true };
    let openai = toolbox.provider(dialect);
    let mut stream = openai.call_stream();

    let mut calls = Vec::new();
    let mut outcomes = Vec::new();
    let mut history = Vec::new();
    let events = STREAM.lines().filter_map(|l| l.strip_prefix("data: "));
    for (n, data) in events.enumerate() {
        for finished in stream.push_text(data) {
            match finished {
                Ok(call) => {
                    println!(
                        "event {n}: {} {} is whole; running it",
                        call.name, call.arguments
                    );
                    outcomes.push(openai.run(&call, &ToolContext::new()).await);
                    history.push(serde_json::json!({"id": call.id, "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments}}));
                    calls.push(call);
                }
                Err(refused) => {
                    println!(
                        "event {n}: {} refused: {} ({})",
                        refused.call.name,
                        refused.error.code(),
                        refused.error.message()
                    );
                    history.push(refused.replay(dialect));
                    calls.push(refused.call);
                    outcomes.push(ToolOutcome::Error(refused.error));
                }
            }
        }
    }
    for refused in stream.finish().into_iter().filter_map(Result::err) {
        println!(
            "end: {} refused: {}",
            refused.call.name,
            refused.error.code()
        );
        history.push(refused.replay(dialect));
        calls.push(refused.call);
        outcomes.push(ToolOutcome::Error(refused.error));
    }

    let answers = openai.messages(&calls, &outcomes);
    let assistant =
        serde_json::json!({"role": "assistant", "content": Value::Null, "tool_calls": history});
    println!("the assistant's turn in the history: {assistant}");
    for answer in &answers {
        println!("answer: {answer}");
    }
    println!(
        "{} calls answered, {} ran",
        answers.len(),
        RAN.load(Ordering::SeqCst)
    );
    Ok(())
}

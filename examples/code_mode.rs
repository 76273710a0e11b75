//! Code mode, end to end over scripted models (no network): the same question answered by
//! direct calls and by one program, in each provider's dialect, with the input tokens each
//! way counted.
//!
//! The question: which open tickets come from enterprise customers, and what is those
//! customers' yearly revenue? Answering it takes nine tool calls (the open tickets, then each
//! ticket's customer). As direct calls, every result enters the conversation and is sent
//! again with each later request. In code mode the model sends one program to `run_code`
//! (`toolsmith::sandbox`); the program makes the nine calls through the toolbox, keeps the
//! enterprise rows and answers with them alone.
//!
//! Run with `cargo run --example code_mode --features sandbox,tokens`.

mod telemetry;

use std::sync::Arc;

use serde_json::{Value, json};
use toolsmith::agent::{Agent, ScriptedModel, Stop};
use toolsmith::provider::o200k_tokens;
use toolsmith::sandbox::Sandbox;
use toolsmith::{Dialect, ToolContext, Toolbox, tool};

/// Where a ticket is.
#[derive(
    Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
enum Status {
    Open,
    Closed,
}

/// A support ticket.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Ticket {
    /// The ticket's id.
    id: u32,
    /// The customer who opened it.
    customer_id: u32,
    /// Where it is.
    status: Status,
    /// Its title.
    title: String,
    /// What the customer wrote.
    description: String,
}

/// A customer's plan.
#[derive(serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Plan {
    Free,
    Team,
    Enterprise,
}

/// A customer.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Customer {
    /// The customer's id.
    id: u32,
    /// The company's name.
    name: String,
    /// Their plan.
    plan: Plan,
    /// Yearly revenue from them, in US dollars.
    arr_usd: u32,
    /// Their region.
    region: String,
    /// The account team's notes.
    notes: String,
}

/// The desk's 24 tickets: every third one open, each from customer `id + 100`.
fn tickets() -> Vec<Ticket> {
    (1..=24)
        .map(|id| Ticket {
            id,
            customer_id: id + 100,
            status: if id % 3 == 0 { Status::Open } else { Status::Closed },
            title: format!("Export to CSV fails on report {id}"),
            description: format!(
                "Since the upgrade last week the scheduled export of report {id} stops halfway with a timeout. \
                 We tried smaller date ranges and a different browser, and the error stays the same. \
                 The finance team needs the file every Monday morning, so this blocks our weekly close."
            ),
        })
        .collect()
}

/// Lists tickets by status, newest first. Read-only. Not for a ticket's history.
// A desk of two dozen tickets: the whole list fits in an answer.
#[tool(effect = "read", allow(unbounded_list))]
fn list_tickets(
    /// Which tickets.
    status: Status,
) -> Vec<Ticket> {
    tickets()
        .into_iter()
        .filter(|t| t.status == status)
        .collect()
}

/// Gets a customer by id. Read-only. Not for searching customers by name.
#[tool(effect = "read")]
fn get_customer(
    /// The customer's id.
    #[arg(range(min = 1, max = 100_000))]
    id: u32,
) -> Customer {
    Customer {
        id,
        name: format!("Company {id}"),
        plan: match id % 4 {
            0 => Plan::Enterprise,
            1 => Plan::Team,
            _ => Plan::Free,
        },
        arr_usd: id * 100,
        region: "eu-west".to_owned(),
        notes: "Renewal in the spring; the account team meets them every quarter and the champion is the head of finance.".to_owned(),
    }
}

/// The program the model sends in code mode.
const PROGRAM: &str = r#"rows = []
for t in list_tickets(status="open"):
    c = get_customer(id=t["customer_id"])
    if c["plan"] == "enterprise":
        rows.append({"ticket": t["id"], "customer": c["name"], "arr_usd": c["arr_usd"]})
{"enterprise": rows, "total_arr_usd": sum(r["arr_usd"] for r in rows)}"#;

const QUESTION: &str = "Which open tickets come from enterprise customers, and what is those customers' yearly revenue?";
const ANSWER: &str = "Tickets 12 and 24 come from enterprise customers (Company 112 and Company 124): 23,600 USD a year.";

/// A response asking for `calls` (`(id, name, arguments)`), in `dialect`.
fn asks(dialect: Dialect, calls: &[(String, &str, Value)]) -> Value {
    match dialect {
        Dialect::OpenAiChat { .. } => {
            let calls: Vec<Value> = calls
                .iter()
                .map(|(id, name, args)| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}}))
                .collect();
            json!({"choices": [{"index": 0, "finish_reason": "tool_calls",
                "message": {"role": "assistant", "content": null, "tool_calls": calls}}]})
        }
        Dialect::OpenAiResponses { .. } => {
            let items: Vec<Value> = calls
                .iter()
                .map(|(id, name, args)| json!({"type": "function_call", "call_id": id, "name": name, "arguments": args.to_string()}))
                .collect();
            json!({ "output": items })
        }
        Dialect::Anthropic { .. } => {
            let content: Vec<Value> = calls
                .iter()
                .map(|(id, name, args)| json!({"type": "tool_use", "id": id, "name": name, "input": args}))
                .collect();
            json!({"role": "assistant", "content": content, "stop_reason": "tool_use"})
        }
        _ => {
            let parts: Vec<Value> = calls
                .iter()
                .map(|(_, name, args)| json!({"functionCall": {"name": name, "args": args}}))
                .collect();
            json!({"candidates": [{"content": {"role": "model", "parts": parts}}]})
        }
    }
}

/// A response answering in text, in `dialect`.
fn says(dialect: Dialect, text: &str) -> Value {
    match dialect {
        Dialect::OpenAiChat { .. } => json!({"choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": text}}]}),
        Dialect::OpenAiResponses { .. } => {
            json!({"output": [{"type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": text}]}]})
        }
        Dialect::Anthropic { .. } => json!({"role": "assistant", "stop_reason": "end_turn",
            "content": [{"type": "text", "text": text}]}),
        _ => json!({"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}}]}),
    }
}

/// How the model works through the question.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Way {
    /// One direct call per request: the tickets, then each customer in turn.
    OneByOne,
    /// The tickets, then every customer in one request (parallel calls).
    Parallel,
    /// One program.
    Code,
}

/// The model's script for `way`.
fn script(dialect: Dialect, way: Way) -> Vec<Value> {
    let customers: Vec<u32> = list_tickets(Status::Open)
        .iter()
        .map(|t| t.customer_id)
        .collect();
    let call = |i: usize, name: &'static str, args: Value| (format!("call_{i}"), name, args);
    let mut out = Vec::new();
    match way {
        Way::Code => out.push(asks(
            dialect,
            &[call(0, "run_code", json!({ "code": PROGRAM }))],
        )),
        Way::OneByOne | Way::Parallel => {
            out.push(asks(
                dialect,
                &[call(0, "list_tickets", json!({"status": "open"}))],
            ));
            let each: Vec<_> = customers
                .iter()
                .enumerate()
                .map(|(i, id)| call(i + 1, "get_customer", json!({ "id": id })))
                .collect();
            if way == Way::Parallel {
                out.push(asks(dialect, &each));
            } else {
                out.extend(each.into_iter().map(|c| asks(dialect, &[c])));
            }
        }
    }
    out.push(says(dialect, ANSWER));
    out
}

/// What one way cost: requests, tool calls run, input tokens (o200k) of every request.
#[derive(Debug)]
pub struct Cost {
    pub requests: usize,
    pub calls: u32,
    pub input_tokens: usize,
}

/// Runs the question `way` in `dialect`; what it cost.
pub async fn measure(dialect: Dialect, way: Way) -> Cost {
    let tools = Arc::new(Toolbox::new().with(ListTickets).with(GetCustomer));
    let sandbox = Sandbox::builder(Arc::clone(&tools))
        .build()
        .expect("two tools");
    let toolbox = match way {
        Way::Code => Toolbox::new().with(sandbox.tool()),
        _ => Toolbox::new().with(ListTickets).with(GetCustomer),
    };
    let model = Arc::new(ScriptedModel::new(script(dialect, way)));
    let agent = Agent::new(toolbox, dialect, Arc::clone(&model));
    let mut state = agent.start(QUESTION);
    let stop = agent
        .run(&mut state, &ToolContext::new())
        .await
        .expect("the run ends");
    assert!(matches!(stop, Stop::Answered(_)), "{stop:?}");
    let requests = model.requests();
    let input_tokens = requests
        .iter()
        .map(|r| o200k_tokens(&r.body.to_string()))
        .sum();
    // The program's answer, as the model read it in its last request.
    if way == Way::Code {
        let last = requests.last().expect("a request").body.to_string();
        assert!(last.contains("total_arr_usd"), "{last}");
        assert!(
            !last.contains("finance team needs the file"),
            "no ticket text"
        );
    }
    Cost {
        requests: requests.len(),
        calls: state.calls(),
        input_tokens,
    }
}

#[tokio::main]
async fn main() {
    let _telemetry = telemetry::export();
    let tools = Arc::new(Toolbox::new().with(ListTickets).with(GetCustomer));
    let sandbox = Sandbox::builder(tools).build().expect("two tools");
    let answer = sandbox
        .run(PROGRAM, &ToolContext::new().with_call_id("call_0"))
        .await
        .expect("the program runs");
    println!("program answer: {}", answer.result);
    println!("tool calls made by the program: {}", answer.calls);
    assert_eq!(answer.calls, 9);
    assert_eq!(answer.result["total_arr_usd"], 11_200 + 12_400);

    println!("\ninput tokens (o200k) for the whole question:");
    for dialect in [
        Dialect::OpenAiChat { strict: true },
        Dialect::OpenAiResponses { strict: true },
        Dialect::Anthropic { strict: false },
        Dialect::Gemini,
    ] {
        let one = measure(dialect, Way::OneByOne).await;
        let parallel = measure(dialect, Way::Parallel).await;
        let code = measure(dialect, Way::Code).await;
        let saved =
            |direct: &Cost| 100.0 * (1.0 - code.input_tokens as f64 / direct.input_tokens as f64);
        println!(
            "{:<28} one by one {:>6} ({} requests)  parallel {:>6} ({} requests)  code {:>5} ({} requests): {:.0} % and {:.0} % fewer",
            dialect.name(),
            one.input_tokens,
            one.requests,
            parallel.input_tokens,
            parallel.requests,
            code.input_tokens,
            code.requests,
            saved(&one),
            saved(&parallel),
        );
    }
}

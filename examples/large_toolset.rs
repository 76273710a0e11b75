//! A large tool set: 200 tools, most of them deferred, found by tool search instead of sent on
//! every turn. Prints what the tool block costs with and without deferral for each provider,
//! then three scripted turns of an OpenAI Chat agent: the model searches (the toolbox answers,
//! since Chat has no search of its own), calls the tool it found under a forced choice that
//! resets itself, and answers; each turn says how its tool list changed for the prompt cache.
//!
//! ```sh
//! cargo run --example large_toolset --features tokens
//! ```

mod telemetry;

use std::process::ExitCode;

use serde_json::{Value, json};
use toolsmith::provider::{CacheChange, ToolBlock, ToolChoice, ToolRequest};
use toolsmith::tool::BoxFuture;
use toolsmith::{Arguments, Dialect, Tool, ToolContext, ToolDefinition, ToolOutcome, Toolbox};

/// The domains and what can be done in each: 20 × 10 = 200 tools.
const DOMAINS: [&str; 20] = [
    "invoices",
    "orders",
    "customers",
    "tickets",
    "shipments",
    "refunds",
    "payments",
    "products",
    "coupons",
    "reviews",
    "suppliers",
    "warehouses",
    "returns",
    "subscriptions",
    "quotes",
    "contracts",
    "employees",
    "meetings",
    "documents",
    "reports",
];
const ACTIONS: [(&str, &str, &str); 10] = [
    ("list", "Lists", "read"),
    ("get", "Gets one of the", "read"),
    ("search", "Searches the", "read"),
    ("create", "Creates one of the", "write"),
    ("update", "Updates one of the", "write"),
    ("archive", "Archives one of the", "write"),
    ("export", "Exports the", "read"),
    ("count", "Counts the", "read"),
    ("tag", "Tags one of the", "write"),
    ("comment", "Comments on one of the", "write"),
];

/// One generated tool: its definition, and a canned answer.
struct Generated(ToolDefinition);

impl Tool for Generated {
    fn definition(&self) -> &ToolDefinition {
        &self.0
    }

    fn call<'a>(&'a self, _: Arguments<'a>, _: &'a ToolContext) -> BoxFuture<'a, ToolOutcome> {
        let name = self.0.name().to_owned();
        Box::pin(async move {
            ToolOutcome::success(&json!({"done": name})).unwrap_or_else(ToolOutcome::Error)
        })
    }
}

fn generated(domain: &str, action: &str, verb: &str, effect: &str) -> Generated {
    let effect_text = if effect == "read" {
        "Read-only"
    } else {
        "Writes data"
    };
    let definition = ToolDefinition::new(
        format!("{domain}.{action}"),
        format!(
            "{verb} {domain} of the company's back office. {effect_text}. Not for other records than {domain}."
        ),
        json!({
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": format!("The id of one of the {domain}, when the action is on one."), "maxLength": 64},
                "query": {"type": "string", "description": "Words to narrow the records down.", "maxLength": 200},
                "limit": {"type": "integer", "description": "How many records, at most.", "minimum": 1, "maximum": 100}
            },
            "additionalProperties": false
        }),
    );
    Generated(definition)
}

fn toolbox() -> Result<Toolbox, String> {
    let mut toolbox = Toolbox::new();
    for domain in DOMAINS {
        for (action, verb, effect) in ACTIONS {
            toolbox
                .register(generated(domain, action, verb, effect))
                .map_err(|e| e.to_string())?;
        }
    }
    Ok(toolbox)
}

/// Every tool deferred but the ten of `invoices`, which most turns need.
fn deferred(toolbox: &Toolbox) -> Vec<String> {
    toolbox
        .names()
        .filter(|name| !name.starts_with("invoices."))
        .map(str::to_owned)
        .collect()
}

fn describe(turn: usize, block: &ToolBlock, before: Option<&ToolBlock>) {
    let change = match before.map(|b| block.change_from(b)) {
        None => "first request".to_owned(),
        Some(CacheChange::Unchanged) => "tools unchanged: the cached prefix is used".to_owned(),
        Some(CacheChange::Appended(names)) => {
            format!("appended {names:?}: the prefix before them is still cached")
        }
        Some(CacheChange::Broken(reason)) => format!("cache broken: {reason}"),
        Some(other) => format!("{other:?}"),
    };
    println!(
        "turn {turn}: {} tools sent, {} tokens, tool_choice {}, tools {}…; {change}",
        block.tool_names().len(),
        block.tokens().total,
        block
            .fields
            .get("tool_choice")
            .map_or("auto".into(), Value::to_string),
        &block.tools_hash()[..12],
    );
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let _telemetry = telemetry::export();
    let toolbox = match toolbox() {
        Ok(toolbox) => toolbox,
        Err(err) => {
            eprintln!("{err}");
            return ExitCode::FAILURE;
        }
    };
    let defer = deferred(&toolbox);
    println!(
        "{} tools, {} of them deferred\n",
        toolbox.len(),
        defer.len()
    );
    println!("what the tool block costs on every turn, in tokens:");
    for dialect in [
        Dialect::OpenAiChat { strict: false },
        Dialect::OpenAiResponses { strict: false },
        Dialect::Anthropic { strict: false },
        Dialect::Gemini,
    ] {
        let provider = toolbox.provider(dialect);
        let all = provider.request(&ToolRequest::default());
        let some = provider.request(&ToolRequest {
            defer: defer.clone(),
            ..ToolRequest::default()
        });
        match (all, some) {
            (Ok(all), Ok(some)) => {
                let (all, some) = (all.tokens(), some.tokens());
                let kind = match (all.exact, some.exact) {
                    (true, true) => "exact",
                    (true, false) => "exact; deferred: an estimate",
                    _ => "estimates",
                };
                println!(
                    "  {:<18} all sent: {:>6}   deferred: {:>5}   ({kind})",
                    dialect.name(),
                    all.total,
                    some.total
                );
            }
            (Err(err), _) | (_, Err(err)) => {
                eprintln!("{dialect}: {err}");
                return ExitCode::FAILURE;
            }
        }
    }

    // Three turns of an OpenAI Chat agent, its model scripted.
    println!();
    let openai = toolbox.provider(Dialect::OpenAiChat { strict: false });
    let ctx = ToolContext::new().with_run_id("large-toolset-example");
    let mut request = ToolRequest {
        defer,
        ..ToolRequest::default()
    };
    let scripted = [
        json!({"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "tool_search", "arguments": "{\"query\": \"archive a refund\", \"max_results\": 3}"}}]}),
        json!({"role": "assistant", "tool_calls": [{"id": "call_2", "type": "function",
            "function": {"name": "refunds_archive", "arguments": "{\"id\": \"rf_7\"}"}}]}),
        json!({"role": "assistant", "content": "Refund rf_7 is archived."}),
    ];
    let mut before: Option<ToolBlock> = None;
    for (turn, reply) in scripted.iter().enumerate() {
        let block = match openai.request(&request) {
            Ok(block) => block,
            Err(err) => {
                eprintln!("turn {}: {err}", turn + 1);
                return ExitCode::FAILURE;
            }
        };
        describe(turn + 1, &block, before.as_ref());
        let response = json!({"choices": [{"message": reply}]});
        let outcome = match openai.respond_to(&response, &ctx).await {
            Ok(outcome) => outcome,
            Err(err) => {
                eprintln!("turn {}: {err}", turn + 1);
                return ExitCode::FAILURE;
            }
        };
        for (call, result) in outcome.calls.iter().zip(&outcome.outcomes) {
            println!("    {} → {}", call.name, result.to_json());
        }
        if outcome.is_final() {
            println!("    the model answered: {}", reply["content"]);
            break;
        }
        request = outcome.next_request(&request);
        if turn == 0 {
            // The application wants the tool the search found called now: a forced choice,
            // reset after the turn that calls it.
            request.choice = ToolChoice::Tool("refunds.archive".into());
        }
        before = Some(block);
    }
    ExitCode::SUCCESS
}

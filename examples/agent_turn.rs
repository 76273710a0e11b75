//! A whole agent loop against a scripted model: a support desk's tools with application state
//! in the context, Anthropic Messages responses in, the next messages out.
//!
//! The model (scripted, no network) asks for two calls at once, one of them with an invalid
//! argument; reads the error and fixes the call; asks to delete a ticket, which waits for a
//! person's approval; repeats it once approved, sends an email, and answers.
//!
//! Run with `cargo run --example agent_turn`.

mod telemetry;

use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::{Value, json};
use toolsmith::output::{Cursor, Page};
use toolsmith::policy::Approvals;
use toolsmith::{Dialect, ToolContext, ToolError, Toolbox, tool};

/// The application's state: what the tools read and change. In a real backend, a database
/// pool and an email client.
#[derive(Default)]
struct Desk {
    tickets: Mutex<Vec<Ticket>>,
    outbox: Mutex<Vec<String>>,
}

#[derive(Clone, Serialize)]
struct Ticket {
    id: u64,
    title: String,
    open: bool,
}

fn desk(ctx: &ToolContext) -> Result<&Desk, ToolError> {
    ctx.get::<Desk>()
        .ok_or_else(|| ToolError::internal("the desk is missing from the context"))
}

/// Searches open tickets by words in their title. Read-only. Not for closed tickets.
#[tool(name = "tickets.search", effect = "read")]
async fn search_tickets(
    ctx: &ToolContext,
    /// Words to look for in ticket titles.
    #[arg(length(min = 1, max = 100))]
    text: String,
    /// Where to continue: the `next_cursor` of the previous page; leave it out for the first.
    cursor: Option<Cursor>,
) -> Result<Page<String>, ToolError> {
    // The cursor holds the id of the last ticket shown, signed by the toolbox.
    let after: u64 = match &cursor {
        Some(cursor) => cursor.open(ctx)?,
        None => 0,
    };
    let tickets = desk(ctx)?
        .tickets
        .lock()
        .map_err(|_| ToolError::internal("lock"))?;
    let needle = text.to_lowercase();
    let found: Vec<&Ticket> = tickets
        .iter()
        .filter(|t| t.open && t.title.to_lowercase().contains(&needle))
        .filter(|t| t.id > after)
        .collect();
    let page: Vec<String> = found
        .iter()
        .take(2)
        .map(|t| format!("{}: {}", t.id, t.title))
        .collect();
    if found.len() > 2 {
        Page::more(page, &found[1].id, ctx)
    } else {
        Ok(Page::last(page))
    }
}

/// Gets one ticket by id. Read-only. Not for searching.
#[tool(name = "tickets.get", effect = "read")]
async fn get_ticket(
    ctx: &ToolContext,
    /// The ticket's id (from a search).
    #[arg(range(min = 1, max = 1_000_000))]
    id: u64,
) -> Result<Value, ToolError> {
    let tickets = desk(ctx)?
        .tickets
        .lock()
        .map_err(|_| ToolError::internal("lock"))?;
    let ticket = tickets
        .iter()
        .find(|t| t.id == id)
        .ok_or_else(|| ToolError::not_found(format!("There is no ticket {id}. Search first.")))?;
    Ok(json!(ticket))
}

/// Deletes a ticket for good. Destructive: it cannot be undone. Not for closing tickets.
#[tool(name = "tickets.delete", effect = "destructive", requires_approval)]
async fn delete_ticket(
    ctx: &ToolContext,
    /// The ticket's id.
    #[arg(range(min = 1, max = 1_000_000))]
    id: u64,
) -> Result<String, ToolError> {
    let mut tickets = desk(ctx)?
        .tickets
        .lock()
        .map_err(|_| ToolError::internal("lock"))?;
    let before = tickets.len();
    tickets.retain(|t| t.id != id);
    if tickets.len() == before {
        return Err(ToolError::not_found(format!("There is no ticket {id}.")));
    }
    Ok(format!("ticket {id} deleted"))
}

/// Sends an email to a customer of the desk. Sends a message. Not for internal notes.
#[tool(name = "email.send", effect = "write")]
async fn send_email(
    ctx: &ToolContext,
    /// The customer's address at the company's domain.
    #[arg(pattern = "^[a-z.]+@example\\.com$", length(max = 80))]
    to: String,
    /// The subject line.
    #[arg(length(min = 1, max = 120))]
    subject: String,
) -> Result<String, ToolError> {
    let mut outbox = desk(ctx)?
        .outbox
        .lock()
        .map_err(|_| ToolError::internal("lock"))?;
    outbox.push(format!("{to}: {subject}"));
    Ok(format!("sent to {to}"))
}

/// The model, scripted: Anthropic Messages responses, each checked against what it was sent.
struct ScriptedModel {
    step: usize,
}

impl ScriptedModel {
    fn reply(&mut self, tools: &Value, messages: &[Value]) -> Value {
        assert_eq!(
            tools.as_array().map(Vec::len),
            Some(4),
            "four tools offered"
        );
        self.step += 1;
        let last = messages.last().cloned().unwrap_or(Value::Null);
        let results = |id: &str| -> Value {
            last["content"]
                .as_array()
                .and_then(|blocks| blocks.iter().find(|b| b["tool_use_id"] == id))
                .map(|b| {
                    serde_json::from_str(b["content"][0]["text"].as_str().unwrap_or("null"))
                        .unwrap_or(Value::Null)
                })
                .unwrap_or(Value::Null)
        };
        match self.step {
            // Two calls at once; the second has an id of 0, which the schema forbids.
            1 => message(json!([
                {"type": "text", "text": "Let me look for the VPN tickets."},
                {"type": "tool_use", "id": "toolu_01", "name": "tickets_search", "input": {"text": "vpn"}},
                {"type": "tool_use", "id": "toolu_02", "name": "tickets_get", "input": {"id": 0}}
            ])),
            // The model reads the error and fixes the call; it also wants the duplicate gone.
            2 => {
                let error = results("toolu_02");
                assert_eq!(error["error"]["code"], "invalid_arguments", "{error}");
                assert_eq!(
                    results("toolu_01")["data"]["items"][0],
                    "2: VPN drops every hour"
                );
                message(json!([
                    {"type": "tool_use", "id": "toolu_03", "name": "tickets_get", "input": {"id": 2}},
                    {"type": "tool_use", "id": "toolu_04", "name": "tickets_delete", "input": {"id": 3}}
                ]))
            }
            // The deletion waited for a person, who approved it meanwhile: the model repeats it,
            // and writes to the customer.
            3 => {
                assert_eq!(results("toolu_04")["error"]["code"], "approval_required");
                message(json!([
                    {"type": "tool_use", "id": "toolu_05", "name": "tickets_delete", "input": {"id": 3}},
                    {"type": "tool_use", "id": "toolu_06", "name": "email_send", "input": {"to": "ada@example.com", "subject": "Your VPN ticket 2 is being worked on"}}
                ]))
            }
            _ => {
                assert_eq!(results("toolu_05")["data"], "ticket 3 deleted");
                assert_eq!(results("toolu_06")["status"], "success");
                message(
                    json!([{"type": "text", "text": "Ticket 2 is open and Ada has been told; the duplicate, ticket 3, is deleted."}]),
                )
            }
        }
    }
}

fn message(content: Value) -> Value {
    let stop = if content
        .as_array()
        .is_some_and(|c| c.iter().any(|b| b["type"] == "tool_use"))
    {
        "tool_use"
    } else {
        "end_turn"
    };
    json!({"id": "msg_scripted", "type": "message", "role": "assistant", "model": "claude-scripted",
           "content": content, "stop_reason": stop})
}

#[tokio::main]
async fn main() {
    let _telemetry = telemetry::export();
    let state = Arc::new(Desk::default());
    if let Ok(mut tickets) = state.tickets.lock() {
        for (id, title) in [
            (1, "Printer jam"),
            (2, "VPN drops every hour"),
            (3, "VPN drops every hour (duplicate)"),
        ] {
            tickets.push(Ticket {
                id,
                title: title.into(),
                open: true,
            });
        }
    }
    let approvals = Approvals::new();
    let toolbox = Toolbox::new()
        .with(SearchTickets)
        .with(GetTicket)
        .with(DeleteTicket)
        .with(SendEmail)
        .with_approver(approvals.clone());
    // App state enters through the context: every tool of this run reads the same desk.
    let ctx = ToolContext::new()
        .with_run_id("support-run-1")
        .with_principal("agent@desk")
        .with_shared_extension(Arc::clone(&state));

    let anthropic = toolbox.provider(Dialect::Anthropic { strict: false });
    let tools = anthropic.export().unwrap_or_default();
    let mut model = ScriptedModel { step: 0 };
    let mut messages = vec![
        json!({"role": "user", "content": "Are there VPN tickets? Tell Ada and clean up duplicates."}),
    ];
    loop {
        let response = model.reply(&tools, &messages);
        messages.push(json!({"role": "assistant", "content": response["content"]}));
        let turn = match anthropic.respond_to(&response, &ctx).await {
            Ok(turn) => turn,
            Err(err) => panic!("not an Anthropic message: {err}"),
        };
        if turn.is_final() {
            println!("assistant: {}", response["content"][0]["text"]);
            break;
        }
        for (call, outcome) in turn.calls.iter().zip(&turn.outcomes) {
            println!("{}({}) -> {}", call.name, call.arguments, outcome.to_json());
        }
        // A person reviews what waits for approval (here: approves it).
        for pending in approvals.pending() {
            println!(
                "approval asked: {} {} (effect {:?}); approved",
                pending.tool, pending.arguments, pending.effect
            );
            approvals.approve(&pending);
        }
        messages.extend(turn.messages);
    }
    let outbox = state.outbox.lock().map(|o| o.clone()).unwrap_or_default();
    let left: Vec<u64> = state
        .tickets
        .lock()
        .map(|t| t.iter().map(|t| t.id).collect())
        .unwrap_or_default();
    assert_eq!(
        outbox,
        ["ada@example.com: Your VPN ticket 2 is being worked on"]
    );
    assert_eq!(left, [1, 2]);
    println!("outbox: {outbox:?}; tickets left: {left:?}");
}

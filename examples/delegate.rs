//! A parent agent that delegates to a child agent, over scripted models (no network).
//!
//! The parent (Anthropic) has a research tool of its own and a `helpdesk` tool that is a
//! whole child agent (OpenAI Chat) with the ticket tools. The child wants to delete a ticket,
//! which needs a person's approval: the parent's run pauses with the call's path
//! (parent call, child call), the person approves it there, the paused run is stored as JSON
//! and read back, and the child resumes where it stopped.
//!
//! Run with `cargo run --example delegate`.

mod telemetry;

use std::sync::Mutex;

use serde_json::{Value, json};
use toolsmith::agent::{Agent, AgentEvent, AgentTool, RunState, ScriptedModel, Stop};
use toolsmith::policy::Approvals;
use toolsmith::{Dialect, ToolContext, Toolbox, tool};

/// The tickets the helpdesk tools change.
static TICKETS: Mutex<Vec<(u64, &str)>> = Mutex::new(Vec::new());

/// Lists the open tickets. Read-only. Not for closed tickets.
// A desk of a few tickets: the whole list fits in an answer.
#[tool(effect = "read", allow(unbounded_list))]
fn list_tickets() -> Vec<String> {
    TICKETS
        .lock()
        .map(|t| {
            t.iter()
                .map(|(id, title)| format!("{id}: {title}"))
                .collect()
        })
        .unwrap_or_default()
}

/// Deletes a ticket. Destructive: it cannot be undone. Not for closing tickets.
#[tool(effect = "destructive", requires_approval)]
fn delete_ticket(
    /// The ticket's id.
    #[arg(range(min = 1, max = 100_000))]
    id: u64,
) -> String {
    if let Ok(mut tickets) = TICKETS.lock() {
        tickets.retain(|(t, _)| *t != id);
    }
    format!("ticket {id} deleted")
}

/// Looks a topic up in the knowledge base. Read-only. Not for tickets.
#[tool(effect = "read")]
fn look_up(
    /// The topic.
    #[arg(length(min = 1, max = 100))]
    topic: String,
) -> String {
    format!("{topic}: duplicates are deleted, not closed")
}

/// The child's model: lists the tickets, deletes the duplicate, answers.
fn child_model() -> ScriptedModel {
    let call = |id: &str, name: &str, arguments: Value| {
        json!({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": id, "type": "function", "function": {"name": name, "arguments": arguments.to_string()}}]}}],
            "usage": {"prompt_tokens": 120, "completion_tokens": 12}})
    };
    ScriptedModel::new([
        call("call_list", "list_tickets", json!({})),
        call("call_delete", "delete_ticket", json!({"id": 2})),
        json!({"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant",
            "content": "Ticket 2 was a duplicate of ticket 1; I deleted it."}}],
            "usage": {"prompt_tokens": 180, "completion_tokens": 15}}),
    ])
}

/// The parent's model: reads the policy, delegates, answers the user.
fn parent_model() -> ScriptedModel {
    let tool_use = |id: &str, name: &str, input: Value| {
        json!({"role": "assistant", "stop_reason": "tool_use",
            "content": [{"type": "tool_use", "id": id, "name": name, "input": input}],
            "usage": {"input_tokens": 300, "output_tokens": 25}})
    };
    ScriptedModel::new([
        tool_use(
            "toolu_policy",
            "look_up",
            json!({"topic": "duplicate tickets"}),
        ),
        tool_use(
            "toolu_helpdesk",
            "helpdesk",
            json!({"task": "Find the duplicate ticket among the open ones and delete it."}),
        ),
        json!({"role": "assistant", "stop_reason": "end_turn",
            "content": [{"type": "text", "text": "Done: the duplicate (ticket 2) is deleted."}],
            "usage": {"input_tokens": 420, "output_tokens": 14}}),
    ])
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let _telemetry = telemetry::export();
    if let Ok(mut tickets) = TICKETS.lock() {
        *tickets = vec![(1, "Printer on fire"), (2, "Printer on fire (again)")];
    }
    // One store of decisions, for the child's toolbox: the person decides from the parent.
    let approvals = Approvals::new();
    let child = Agent::new(
        Toolbox::new()
            .with(ListTickets)
            .with(DeleteTicket)
            .with_approver(approvals.clone()),
        Dialect::OpenAiChat { strict: true },
        child_model(),
    );
    let helpdesk = AgentTool::new(
        "helpdesk",
        "Handles one helpdesk task with the ticket tools: list and delete tickets. Changes tickets. Not for anything outside the helpdesk.",
        child,
    );
    let parent = Agent::new(
        Toolbox::new().with(LookUp).with(helpdesk),
        Dialect::Anthropic { strict: false },
        parent_model(),
    )
    .with_events(|event| match event {
        AgentEvent::ModelRequested { turn } => println!("  [parent] asks its model (turn {turn})"),
        AgentEvent::ToolFinished { call, .. } => println!("  [parent] {} answered", call.name),
        AgentEvent::Paused(pending) => {
            println!("  [parent] paused: {} call(s) wait", pending.len())
        }
        _ => {}
    });

    let ctx = ToolContext::new()
        .with_principal("ada")
        .with_run_id("support-run-7");
    let mut state = parent.start("Clean up the duplicate printer tickets.");
    let stop = parent.run(&mut state, &ctx).await?;
    let Stop::Paused(pending) = stop else {
        return Err(format!("expected a pause, got {stop:?}").into());
    };
    for call in &pending {
        println!(
            "waiting for a person: {} {} at path {}",
            call.tool,
            call.arguments,
            call.path.join(" > ")
        );
    }

    // The run is plain data: store it, and read it back when the person has decided.
    let stored = serde_json::to_string(&state)?;
    println!("stored the paused run ({} bytes)", stored.len());
    let mut state: RunState = serde_json::from_str(&stored)?;
    parent.approve(&mut state, &pending[0].path)?;

    let stop = parent.run(&mut state, &ctx).await?;
    let Stop::Answered(answer) = stop else {
        return Err(format!("expected an answer, got {stop:?}").into());
    };
    println!("answer: {answer}");
    println!(
        "{} model requests by the parent, {} tokens in all (the child's included)",
        state.turns(),
        state.usage().total()
    );
    let left = TICKETS.lock().map(|t| t.len()).unwrap_or_default();
    println!("tickets left: {left}");
    Ok(())
}

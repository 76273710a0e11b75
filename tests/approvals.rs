//! Approvals in an agent's flow: a parsed call approved as the model sent it, what a person
//! sees while a call waits, single-use approvals, principals kept apart, a prompt in the
//! context that asks on the spot, and errors for approvals that could change nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use toolsmith::policy::{
    ApprovalDecision, ApprovalError, ApprovalPrompt, ApprovalRequest, Approvals, PromptForApproval,
};
use toolsmith::tool::BoxFuture;
use toolsmith::{Dialect, Effect, ErrorCode, ToolCall, ToolContext, Toolbox, tool};

/// Deletes a ticket. Destructive: it cannot be undone. Not for closing tickets.
#[tool(
    name = "tickets.delete",
    title = "Delete ticket",
    effect = "destructive",
    requires_approval
)]
async fn delete_ticket(
    /// The ticket.
    #[arg(range(min = 1))]
    id: u64,
    /// The admin password of the ticket system.
    #[arg(sensitive, length(max = 64))]
    admin_password: String,
) -> u64 {
    let _ = admin_password;
    id
}

/// Searches tickets. Read-only. Not for closed tickets.
#[tool(name = "tickets.search", effect = "read", allow(unbounded_list))]
async fn search_tickets(
    /// Words to look for.
    #[arg(length(max = 100))]
    text: String,
) -> Vec<String> {
    vec![text]
}

fn toolbox(approvals: &Approvals) -> Toolbox {
    Toolbox::new()
        .with(DeleteTicket)
        .with(SearchTickets)
        .with_approver(approvals.clone())
}

fn openai_call(arguments: &str) -> ToolCall {
    ToolCall {
        id: Some("call_1".into()),
        name: "tickets_delete".into(),
        arguments: json!(arguments),
    }
}

#[tokio::test]
async fn a_parsed_call_is_approved_as_the_model_sent_it() {
    let approvals = Approvals::new();
    let toolbox = toolbox(&approvals);
    let openai = toolbox.provider(Dialect::OpenAiChat { strict: true });
    let ctx = ToolContext::new().with_principal("ada");
    // OpenAI's spelling of the name, the arguments as a JSON string.
    let call = openai_call(r#"{"id": 7, "admin_password": "hunter2"}"#);
    let first = openai.run(&call, &ctx).await;
    assert_eq!(first.error().unwrap().code(), ErrorCode::ApprovalRequired);
    openai.approve(&call, &ctx).unwrap();
    // The model's repeat, with the keys in another order and other spacing: the same call.
    let again = openai_call(r#"{ "admin_password": "hunter2", "id": 7 }"#);
    let out = openai.run(&again, &ctx).await;
    assert_eq!(out.into_result::<u64>().unwrap(), 7);

    // Anthropic: the same tool, its arguments an object.
    let anthropic = toolbox.provider(Dialect::Anthropic { strict: false });
    let call = ToolCall {
        id: Some("toolu_1".into()),
        name: "tickets_delete".into(),
        arguments: json!({"id": 8, "admin_password": "hunter2"}),
    };
    anthropic
        .deny(&call, &ctx, "Ticket 8 is evidence.")
        .unwrap();
    let out = anthropic.run(&call, &ctx).await;
    let err = out.error().unwrap();
    assert_eq!(err.code(), ErrorCode::ApprovalDenied);
    assert!(
        err.message().contains("Ticket 8 is evidence. Do not retry"),
        "one period between the reason and what follows: {}",
        err.message()
    );
}

#[tokio::test]
async fn approvals_are_single_use_and_per_principal() {
    let approvals = Approvals::new();
    let toolbox = toolbox(&approvals);
    let ada = ToolContext::new().with_principal("ada");
    let bob = ToolContext::new().with_principal("bob");
    let args = json!({"id": 3, "admin_password": "x"});
    toolbox
        .approvals()
        .approve("tickets.delete", &args, &ada)
        .unwrap();
    // Ada's approval is not Bob's.
    let out = toolbox.call("tickets.delete", &args, &bob).await;
    assert_eq!(out.error().unwrap().code(), ErrorCode::ApprovalRequired);
    assert!(
        toolbox
            .call("tickets.delete", &args, &ada)
            .await
            .is_success()
    );
    // Used up: a second identical call waits for a new approval.
    let out = toolbox.call("tickets.delete", &args, &ada).await;
    assert_eq!(out.error().unwrap().code(), ErrorCode::ApprovalRequired);
    // (The tool ran once: the second call was refused before it, as its error says.)

    // A reusable store lets identical calls through until the approval expires.
    let approvals = Approvals::new().reusable();
    let toolbox = toolbox_with(&approvals);
    toolbox
        .approvals()
        .approve("tickets.delete", &args, &ada)
        .unwrap();
    for _ in 0..3 {
        assert!(
            toolbox
                .call("tickets.delete", &args, &ada)
                .await
                .is_success()
        );
    }
}

fn toolbox_with(approvals: &Approvals) -> Toolbox {
    toolbox(approvals)
}

#[tokio::test]
async fn a_person_sees_what_is_waiting_without_secrets() {
    let approvals = Approvals::new();
    let toolbox = toolbox(&approvals);
    let ctx = ToolContext::new()
        .with_principal("ada")
        .with_run_id("run_7")
        .with_call_id("call_3");
    let args = json!({"id": 11, "admin_password": "hunter2"});
    let out = toolbox.call("tickets.delete", &args, &ctx).await;
    assert_eq!(out.error().unwrap().code(), ErrorCode::ApprovalRequired);
    // Asked twice: listed once.
    let _ = toolbox.call("tickets.delete", &args, &ctx).await;
    let pending = toolbox.approvals().pending();
    assert_eq!(pending.len(), 1);
    let request = &pending[0];
    assert_eq!(request.tool, "tickets.delete");
    assert_eq!(request.title.as_deref(), Some("Delete ticket"));
    assert!(request.description.starts_with("Deletes a ticket."));
    assert_eq!(
        request.arguments,
        json!({"id": 11, "admin_password": "[redacted]"})
    );
    assert_eq!(request.effect, Some(Effect::Destructive));
    assert_eq!(request.annotations.destructive, Some(true));
    assert_eq!(request.principal.as_deref(), Some("ada"));
    assert_eq!(request.run_id.as_deref(), Some("run_7"));
    assert_eq!(request.call_id.as_deref(), Some("call_3"));
    assert!(request.arguments_hash.starts_with("sha256:"));

    approvals.approve(request);
    assert!(approvals.pending().is_empty(), "decided: no longer pending");
    assert!(
        toolbox
            .call("tickets.delete", &args, &ctx)
            .await
            .is_success()
    );
}

#[tokio::test]
async fn approvals_that_could_change_nothing_are_errors() {
    let approvals = Approvals::new();
    let toolbox = toolbox(&approvals);
    let openai = toolbox.provider(Dialect::OpenAiChat { strict: true });
    let ctx = ToolContext::new();
    let unknown = ToolCall {
        id: None,
        name: "tickets_remove".into(),
        arguments: json!("{}"),
    };
    match openai.approve(&unknown, &ctx) {
        Err(ApprovalError::UnknownTool {
            needing_approval, ..
        }) => assert_eq!(
            needing_approval,
            ["tickets_delete"],
            "the provider's spelling"
        ),
        other => panic!("{other:?}"),
    }
    let err = toolbox
        .approvals()
        .approve("tickets.search", json!({"text": "x"}), &ctx)
        .unwrap_err();
    assert!(matches!(err, ApprovalError::NotNeeded { .. }), "{err}");
    let err = toolbox
        .approvals()
        .approve("tickets.delete", json!({"id": 0}), &ctx)
        .unwrap_err();
    assert!(
        matches!(err, ApprovalError::InvalidArguments { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("admin_password"), "{err}");

    // An approver of one's own has its own store: the toolbox cannot record into it.
    let custom = Toolbox::new()
        .with(DeleteTicket)
        .with_approver(|_: &ApprovalRequest<'_>| ApprovalDecision::Pending);
    let err = custom
        .approvals()
        .approve(
            "tickets.delete",
            json!({"id": 1, "admin_password": "x"}),
            &ctx,
        )
        .unwrap_err();
    assert_eq!(err, ApprovalError::NoStore);
}

/// A person at a prompt, answering from a script.
struct Person {
    answer: Option<ApprovalDecision>,
    asked: Arc<AtomicUsize>,
}

impl ApprovalPrompt for Person {
    fn ask<'a>(
        &'a self,
        request: &'a ApprovalRequest<'a>,
    ) -> BoxFuture<'a, Option<ApprovalDecision>> {
        assert_eq!(request.tool, "tickets.delete");
        self.asked.fetch_add(1, Ordering::SeqCst);
        let answer = self.answer.clone();
        Box::pin(async move { answer })
    }
}

#[tokio::test]
async fn a_prompt_in_the_context_asks_the_person_on_the_spot() {
    let asked = Arc::new(AtomicUsize::new(0));
    let person = |answer| Person {
        answer,
        asked: Arc::clone(&asked),
    };
    // No approver at all: the person at the prompt decides.
    let toolbox = Toolbox::new().with(DeleteTicket);
    let args = json!({"id": 5, "admin_password": "x"});
    let yes = ToolContext::new().with_extension(PromptForApproval::new(person(Some(
        ApprovalDecision::Approved,
    ))));
    assert!(
        toolbox
            .call("tickets.delete", &args, &yes)
            .await
            .is_success()
    );
    let no = ToolContext::new().with_extension(PromptForApproval::new(person(Some(
        ApprovalDecision::Denied("not today".into()),
    ))));
    let out = toolbox.call("tickets.delete", &args, &no).await;
    assert_eq!(out.error().unwrap().code(), ErrorCode::ApprovalDenied);
    // Nobody could be asked: as without a prompt.
    let unreachable = ToolContext::new().with_extension(PromptForApproval::new(person(None)));
    let out = toolbox.call("tickets.delete", &args, &unreachable).await;
    assert_eq!(out.error().unwrap().code(), ErrorCode::ApprovalRequired);
    assert_eq!(asked.load(Ordering::SeqCst), 3);

    // With a store, a decision already made is not asked again.
    let approvals = Approvals::new();
    let toolbox = toolbox_with(&approvals);
    let ctx = ToolContext::new();
    toolbox
        .approvals()
        .deny("tickets.delete", &args, &ctx, "frozen")
        .unwrap();
    let asking = ctx
        .clone()
        .with_extension(PromptForApproval::new(person(Some(
            ApprovalDecision::Approved,
        ))));
    let out = toolbox.call("tickets.delete", &args, &asking).await;
    assert_eq!(out.error().unwrap().code(), ErrorCode::ApprovalDenied);
    assert_eq!(asked.load(Ordering::SeqCst), 3);
}

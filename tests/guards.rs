//! Input guards: after the arguments are read and before approval, a guard refuses a call or
//! rewrites its arguments; a rewrite is read again, and the approver, the idempotency key, the
//! audit and the tool all see it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::json;
use toolsmith::audit::MemorySink;
use toolsmith::policy::{Approvals, Defaults, Guard, GuardDecision, GuardRequest};
use toolsmith::{Dialect, ToolCall, ToolContext, ToolError, Toolbox, tool};

static TRANSFERS: AtomicU32 = AtomicU32::new(0);
/// Guard calls of the test that counts them (tests run at once).
static ASKED: AtomicU32 = AtomicU32::new(0);

/// Transfers money between accounts. Destructive: it cannot be undone. Not for refunds.
#[tool(effect = "destructive", requires_approval)]
fn transfer(
    /// The account to pay: an IBAN.
    #[arg(length(min = 1, max = 42), pattern = "^[A-Za-z0-9 ]+$")]
    to: String,
    /// The amount in cents.
    #[arg(range(min = 1, max = 1_000_000))]
    cents: u64,
) -> String {
    TRANSFERS.fetch_add(1, Ordering::SeqCst);
    format!("sent {cents} to {to}")
}

/// IBANs without spaces, in capitals; at most 500 € without a second look.
fn guard(asked: &'static AtomicU32) -> Guard {
    Guard::new(move |request: &GuardRequest<'_>| {
        asked.fetch_add(1, Ordering::SeqCst);
        let cents = request.arguments["cents"].as_u64().unwrap_or_default();
        if cents > 50_000 {
            return GuardDecision::Refuse(ToolError::permission_denied(
                "Transfers above 500 € are not made from a conversation; tell the user to use the bank's app.",
            ));
        }
        let to = request.arguments["to"].as_str().unwrap_or_default();
        GuardDecision::Rewrite(json!({"to": to.replace(' ', "").to_uppercase(), "cents": cents}))
    })
}

fn toolbox(approvals: &Approvals, sink: &Arc<MemorySink>) -> Toolbox {
    static UNCOUNTED: AtomicU32 = AtomicU32::new(0);
    counted_toolbox(approvals, sink, &UNCOUNTED)
}

fn counted_toolbox(
    approvals: &Approvals,
    sink: &Arc<MemorySink>,
    asked: &'static AtomicU32,
) -> Toolbox {
    Toolbox::new()
        .with(Transfer)
        .with_approver(approvals.clone())
        .with_audit(Arc::clone(sink))
        .with_defaults(Defaults {
            guards: vec![guard(asked)],
            ..Defaults::default()
        })
}

#[tokio::test]
async fn a_rewrite_is_what_the_approver_the_audit_and_the_tool_see() {
    let approvals = Approvals::new();
    let sink = Arc::new(MemorySink::default());
    let toolbox = toolbox(&approvals, &sink);
    let ctx = ToolContext::new()
        .with_principal("ada")
        .with_run_id("r-guard");
    let anthropic = toolbox.provider(Dialect::Anthropic { strict: false });
    let call = ToolCall {
        id: Some("toolu_1".into()),
        name: "transfer".into(),
        arguments: json!({"to": "de44 5001 0517 5407 3249 31", "cents": 1200}),
    };
    let first = anthropic.run(&call, &ctx).await;
    assert_eq!(first.error().unwrap().code().as_str(), "approval_required");
    // The person is shown the rewritten arguments.
    let pending = approvals.pending();
    assert_eq!(
        pending[0].arguments,
        json!({"to": "DE44500105175407324931", "cents": 1200})
    );
    approvals.approve(&pending[0]);
    let before = TRANSFERS.load(Ordering::SeqCst);
    let done = anthropic.run(&call, &ctx).await;
    assert_eq!(
        done.into_result::<String>().unwrap(),
        "sent 1200 to DE44500105175407324931"
    );
    assert_eq!(TRANSFERS.load(Ordering::SeqCst), before + 1);
    // The same transfer written another way is the same call: one key, one approval.
    let again = ToolCall {
        id: Some("toolu_2".into()),
        name: "transfer".into(),
        arguments: json!({"to": "DE44500105175407324931", "cents": 1200}),
    };
    let replay = anthropic.run(&again, &ctx).await;
    assert!(replay.is_replay(), "{}", replay.to_json());
    assert_eq!(TRANSFERS.load(Ordering::SeqCst), before + 1);
    let records = sink.records();
    assert!(
        records
            .iter()
            .all(|r| r.arguments["to"] == "DE44500105175407324931")
    );
}

#[tokio::test]
async fn a_refusal_comes_before_anyone_is_asked() {
    let approvals = Approvals::new();
    let sink = Arc::new(MemorySink::default());
    let toolbox = toolbox(&approvals, &sink);
    let ctx = ToolContext::new().with_principal("bob");
    let out = toolbox
        .call("transfer", json!({"to": "DE1", "cents": 900_000}), &ctx)
        .await;
    let err = out.error().unwrap();
    assert_eq!(err.code().as_str(), "permission_denied");
    assert!(err.message().contains("500 €"));
    assert!(
        approvals.pending().is_empty(),
        "nobody is asked about a refused call"
    );
}

#[tokio::test]
async fn invalid_arguments_never_reach_a_guard_and_a_bad_rewrite_is_refused() {
    let approvals = Approvals::new();
    let sink = Arc::new(MemorySink::default());
    let toolbox = counted_toolbox(&approvals, &sink, &ASKED);
    let out = toolbox
        .call(
            "transfer",
            json!({"to": "", "cents": 5}),
            &ToolContext::new(),
        )
        .await;
    assert_eq!(out.error().unwrap().code().as_str(), "invalid_arguments");
    assert_eq!(
        ASKED.load(Ordering::SeqCst),
        0,
        "the guard sees only valid arguments"
    );

    // A guard whose rewrite breaks the schema: the call is refused, never run.
    let broken = Guard::new(|_: &GuardRequest<'_>| GuardDecision::Rewrite(json!({"to": "X"})));
    let toolbox = Toolbox::new()
        .with(Transfer)
        .with_approver(Approvals::new())
        .with_defaults(Defaults {
            guards: vec![broken],
            ..Defaults::default()
        });
    let out = toolbox
        .call(
            "transfer",
            json!({"to": "DE1", "cents": 5}),
            &ToolContext::new(),
        )
        .await;
    let err = out.error().unwrap();
    assert_eq!(err.code().as_str(), "internal_error");
    assert!(
        !err.message().contains("guard rewrite"),
        "the detail stays in the logs"
    );
}

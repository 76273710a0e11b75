//! Repair that cannot invent: lossless fixes and an application hook, only for arguments that
//! ended, recorded in the audit and shown to the approver; off by default.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::{Value, json};
use toolsmith::audit::MemorySink;
use toolsmith::policy::{Approvals, Defaults, Repair, RepairRequest};
use toolsmith::{ToolContext, Toolbox, tool};

static HOOKED: AtomicU32 = AtomicU32::new(0);
/// The hook of the cut-off test alone (tests run at once).
static CLOSER: AtomicU32 = AtomicU32::new(0);

/// Tags a ticket. Writes the ticket's tags. Not for removing tags.
#[tool(effect = "write")]
fn tag(
    /// The ticket.
    #[arg(range(min = 1))]
    id: u64,
    /// The tags.
    #[arg(length(max = 5))]
    tags: Vec<String>,
) -> usize {
    let _ = id;
    tags.len()
}

/// Merges two tickets. Destructive: it cannot be undone. Not for linking tickets.
#[tool(effect = "destructive", requires_approval)]
fn merge(
    /// The ticket kept.
    #[arg(range(min = 1))]
    into: u64,
    /// The tickets merged into it.
    #[arg(length(max = 10))]
    from: Vec<u64>,
) -> String {
    format!("merged {from:?} into {into}")
}

/// Reads numbers written as text: a fix the application vouches for, not a lossless one.
fn numbers_as_text(request: &RepairRequest<'_>) -> Option<Value> {
    HOOKED.fetch_add(1, Ordering::SeqCst);
    let mut value: Value = serde_json::from_str(request.text).ok()?;
    let id = value.get("id")?.as_str()?.parse::<u64>().ok()?;
    value["id"] = json!(id);
    Some(value)
}

fn toolbox(sink: &Arc<MemorySink>, approvals: &Approvals, repair: Option<Repair>) -> Toolbox {
    Toolbox::new()
        .with(Tag)
        .with(Merge)
        .with_audit(Arc::clone(sink))
        .with_approver(approvals.clone())
        .with_defaults(Defaults {
            repair,
            ..Defaults::default()
        })
}

#[tokio::test]
async fn lossless_fixes_are_made_and_recorded() {
    let sink = Arc::new(MemorySink::default());
    let toolbox = toolbox(&sink, &Approvals::new(), Some(Repair::lossless()));
    let ctx = ToolContext::new();
    let out = toolbox
        .call(
            "tag",
            r#"{"id": 7, "tags": "[\"vpn\", \"urgent\"]",}"#,
            &ctx,
        )
        .await;
    assert_eq!(out.into_result::<usize>().unwrap(), 2);
    let record = &sink.records()[0];
    assert_eq!(
        record.arguments,
        json!({"id": 7, "tags": ["vpn", "urgent"]})
    );
    assert_eq!(record.repairs.len(), 2, "{:?}", record.repairs);
    assert!(record.repairs.iter().any(|r| r.contains("trailing comma")));
    assert!(record.repairs.iter().any(|r| r.contains("`tags`")));
    // Valid arguments are never touched.
    let out = toolbox
        .call("tag", json!({"id": 8, "tags": []}), &ctx)
        .await;
    assert!(out.is_success());
    assert!(sink.records()[1].repairs.is_empty());
}

#[tokio::test]
async fn off_by_default() {
    let sink = Arc::new(MemorySink::default());
    let toolbox = toolbox(&sink, &Approvals::new(), None);
    let out = toolbox
        .call("tag", r#"{"id": 7, "tags": ["vpn"],}"#, &ToolContext::new())
        .await;
    assert_eq!(out.error().unwrap().code().as_str(), "invalid_arguments");
}

#[tokio::test]
async fn cut_off_arguments_are_never_repaired() {
    let sink = Arc::new(MemorySink::default());
    let repair = Repair::lossless().with_hook(|request: &RepairRequest<'_>| {
        CLOSER.fetch_add(1, Ordering::SeqCst);
        // A hook that would close anything: never asked about a cut-off call.
        serde_json::from_str(&format!("{}\"]}}", request.text)).ok()
    });
    let toolbox = toolbox(&sink, &Approvals::new(), Some(repair));
    let out = toolbox
        .call("tag", r#"{"id": 7, "tags": ["vpn"#, &ToolContext::new())
        .await;
    assert_eq!(out.error().unwrap().code().as_str(), "invalid_arguments");
    assert_eq!(CLOSER.load(Ordering::SeqCst), 0, "the hook never saw it");
    assert!(sink.records()[0].repairs.is_empty());
}

#[tokio::test]
async fn a_hook_repairs_what_is_left_and_the_approver_sees_it() {
    let sink = Arc::new(MemorySink::default());
    let approvals = Approvals::new();
    let repair = Repair::lossless().with_hook(numbers_as_text);
    let toolbox = toolbox(&sink, &approvals, Some(repair));
    let ctx = ToolContext::new().with_principal("ada");
    let out = toolbox
        .call("tag", json!({"id": "12", "tags": ["a"]}), &ctx)
        .await;
    assert!(out.is_success(), "{}", out.to_json());
    assert!(
        sink.records()[0]
            .repairs
            .iter()
            .any(|r| r.contains("repair hook"))
    );
    // A hook that cannot make them valid changes nothing: the first refusal stands.
    let out = toolbox
        .call("tag", json!({"id": "twelve", "tags": ["a"]}), &ctx)
        .await;
    let err = out.error().unwrap();
    assert_eq!(err.code().as_str(), "invalid_arguments");
    assert_eq!(err.fields()[0].pointer, "/id");

    // A call that waits for a person: they see the repaired arguments, and that they were.
    let out = toolbox
        .call("merge", r#"{"into": 1, "from": "[2, 3]"}"#, &ctx)
        .await;
    assert_eq!(out.error().unwrap().code().as_str(), "approval_required");
    let pending = approvals.pending();
    assert_eq!(pending[0].arguments, json!({"into": 1, "from": [2, 3]}));
    assert!(
        pending[0].repairs[0].contains("`from`"),
        "{:?}",
        pending[0].repairs
    );
}

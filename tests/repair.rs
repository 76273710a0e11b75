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

/// Sets a limit on a ticket's spending. Writes the ticket. Not for refunds.
#[tool(
    effect = "write",
    limits(max_depth = 3, max_items = 4, max_members = 4, max_bytes = 300)
)]
fn set_limit(
    /// The amount.
    #[arg(range(min = 1, max = 1000))]
    amount: u64,
    /// Notes, if any.
    notes: Option<Vec<String>>,
    /// Extra fields, if any.
    extra: Option<std::collections::BTreeMap<String, Value>>,
) -> u64 {
    let _ = (notes, extra);
    amount
}

#[tokio::test]
async fn no_lossless_fix_weakens_a_rule() {
    let sink = Arc::new(MemorySink::default());
    let approvals = Approvals::new();
    let toolbox = toolbox(&sink, &approvals, Some(Repair::lossless())).with(SetLimit);
    let ctx = ToolContext::new();
    let long = "x".repeat(300);
    // Each rule, broken in text that one lossless fix would otherwise make valid.
    let cases: Vec<(&str, String)> = vec![
        // A repeated key, at the top and deeper, with a trailing comma.
        (
            "repeated key, trailing comma",
            r#"{"amount":1,"amount":900,}"#.to_owned(),
        ),
        (
            "nested repeated key, trailing comma",
            r#"{"amount":1,"extra":{"a":1,"a":2},}"#.to_owned(),
        ),
        // A repeated key inside a list sent as a string.
        (
            "repeated key in a string",
            r#"{"amount":1,"extra":"{\"a\":1,\"a\":2}"}"#.to_owned(),
        ),
        // An unknown field, each fix.
        (
            "unknown field, trailing comma",
            r#"{"amount":1,"colour":"red",}"#.to_owned(),
        ),
        (
            "unknown field, list as a string",
            r#"{"amount":1,"notes":"[\"a\"]","colour":"red"}"#.to_owned(),
        ),
        // The limits, each fix.
        (
            "max_bytes, trailing comma",
            format!(r#"{{"amount":1,"notes":["{long}"],}}"#),
        ),
        (
            "max_items, list as a string",
            r#"{"amount":1,"notes":"[\"a\",\"b\",\"c\",\"d\",\"e\"]"}"#.to_owned(),
        ),
        (
            "max_items, trailing comma",
            r#"{"amount":1,"notes":["a","b","c","d","e",]}"#.to_owned(),
        ),
        (
            "max_depth, object as a string",
            r#"{"amount":1,"extra":"{\"a\":{\"b\":{\"c\":1}}}"}"#.to_owned(),
        ),
        (
            "max_members, object as a string",
            r#"{"amount":1,"extra":"{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5}"}"#.to_owned(),
        ),
        // The schema's own rules.
        ("range, trailing comma", r#"{"amount":5000,}"#.to_owned()),
        // A comma that follows no value is not trailing: `[,]` is not `[]`.
        ("comma after [", r#"{"amount":1,"notes":[,]}"#.to_owned()),
        ("comma after {", r#"{"amount":1,"extra":{,}}"#.to_owned()),
        ("two commas", r#"{"amount":1,"notes":["a",,]}"#.to_owned()),
    ];
    for (why, text) in &cases {
        let out = toolbox.call("set_limit", text.as_str(), &ctx).await;
        assert_eq!(
            out.error().map(|e| e.code().as_str()),
            Some("invalid_arguments"),
            "{why}: {text} was repaired into {}",
            out.to_json()
        );
    }
    // And each fix still repairs what breaks no rule.
    for text in [
        r#"{"amount":900,}"#,
        r#"{"amount":900,"notes":"[\"a\"]"}"#,
        r#"{"amount":900,"extra":"{\"a\":1}"}"#,
    ] {
        let out = toolbox.call("set_limit", text, &ctx).await;
        assert_eq!(out.into_result::<u64>().unwrap(), 900, "{text}");
    }
}

#[tokio::test]
async fn the_hook_sees_only_text_that_ended() {
    static SEEN: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let sink = Arc::new(MemorySink::default());
    let approvals = Approvals::new();
    let repair = Repair::lossless().with_hook(|request: &RepairRequest<'_>| {
        SEEN.lock().unwrap().push(request.text.to_owned());
        None
    });
    let toolbox = toolbox(&sink, &approvals, Some(repair)).with(SetLimit);
    let ctx = ToolContext::new();
    // An early fault no longer hides a cut: none of these ended.
    for text in [
        r#"{"amount": [,"#,
        r#"{"amount": 1, "notes": ["a" "b""#,
        r#"{"amount": 1 "notes": "#,
        r#"{"amount": "#,
    ] {
        let out = toolbox.call("set_limit", text, &ctx).await;
        assert!(out.error().is_some());
    }
    assert!(
        SEEN.lock().unwrap().is_empty(),
        "{:?}",
        SEEN.lock().unwrap()
    );
    // Text that ended, broken, reaches the hook.
    let out = toolbox
        .call("set_limit", r#"{"amount": "one"}"#, &ctx)
        .await;
    assert!(out.error().is_some());
    assert_eq!(SEEN.lock().unwrap().len(), 1);
}

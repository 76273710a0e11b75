//! What the model must not see goes to `tracing`: an internal error's detail and a panic's text
//! are logged with the tool's name and the trace id.

use std::sync::{Arc, Mutex};

use toolsmith::{ToolContext, ToolError, Toolbox, tool};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// Records every event's fields as `name=value` lines.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<String>>>);

struct Fields(String);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!("{}={:?} ", field.name(), value));
    }
}

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = Fields(String::new());
        event.record(&mut fields);
        self.0.lock().unwrap().push(fields.0);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// Fails inside.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
async fn fetch() -> Result<u8, ToolError> {
    Err(std::io::Error::other("disk /dev/sda1 is full"))?
}

/// Panics inside.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
async fn crash() -> u8 {
    panic!("index 7 out of range in cache.rs")
}

#[tokio::test(flavor = "current_thread")]
async fn details_are_logged_not_returned() {
    let capture = Capture::default();
    let _guard = tracing::subscriber::set_default(capture.clone());
    let toolbox = Toolbox::new().with(Fetch).with(Crash);
    let ctx = ToolContext::new().with_trace_id("tr_log");

    let out = toolbox.call("fetch", "{}", &ctx).await.to_json();
    assert!(!out.contains("sda1"), "{out}");
    let out = toolbox.call("crash", "{}", &ctx).await.to_json();
    assert!(!out.contains("cache.rs"), "{out}");

    let lines = capture.0.lock().unwrap().clone();
    let logged = |needle: &str, tool: &str| {
        lines.iter().any(|l| {
            l.contains(needle)
                && l.contains(&format!("tool={tool:?}"))
                && l.contains("trace_id=\"tr_log\"")
        })
    };
    assert!(logged("disk /dev/sda1 is full", "fetch"), "{lines:#?}");
    assert!(
        logged("index 7 out of range in cache.rs", "crash"),
        "{lines:#?}"
    );
}

/// Deletes a record. Destructive: it cannot be undone. Not for archiving.
#[tool(effect = "destructive", requires_approval)]
async fn delete_record(
    /// The record.
    id: u64,
) -> u64 {
    id
}

#[tokio::test(flavor = "current_thread")]
async fn a_tool_needing_approval_without_an_approver_is_warned_about() {
    let capture = Capture::default();
    let _guard = tracing::subscriber::set_default(capture.clone());
    let toolbox = Toolbox::new().with(DeleteRecord);
    let out = toolbox
        .call("delete_record", r#"{"id": 1}"#, &ToolContext::new())
        .await;
    assert_eq!(out.error().unwrap().code().as_str(), "approval_required");
    let lines = capture.0.lock().unwrap().join("\n");
    assert!(
        lines.contains("has no approver") && lines.contains("tool=\"delete_record\""),
        "{lines}"
    );
}

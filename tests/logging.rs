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

// ---- the error types of quick code ----

/// Reads a config file. Read-only. Not for writing files.
#[tool(effect = "read")]
async fn read_config(
    /// The file's name.
    #[arg(length(max = 64))]
    name: String,
) -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
    let inner = std::io::Error::other(format!("/etc/app/{name}: permission denied"));
    Err(Box::new(std::io::Error::other(inner)))
}

/// Parses a port number. Read-only. Not for host names.
#[tool(effect = "read")]
fn parse_port(
    /// The port, as text.
    #[arg(length(max = 8))]
    text: String,
) -> Result<u16, Box<dyn std::error::Error>> {
    // `?` on any error, as quick code writes it.
    let port: u16 = text.parse()?;
    Ok(port)
}

/// Reads a file's size. Read-only. Not for directories.
#[tool(effect = "read")]
fn file_size(
    /// The file.
    #[arg(length(max = 64))]
    path: String,
) -> std::io::Result<u64> {
    Err(std::io::Error::other(format!(
        "{path}: no such file in /srv/secret"
    )))
}

#[tokio::test(flavor = "current_thread")]
async fn boxed_errors_are_internal_errors_whose_text_is_logged() {
    let capture = Capture::default();
    let _guard = tracing::subscriber::set_default(capture.clone());
    let toolbox = Toolbox::new()
        .with(ReadConfig)
        .with(ParsePort)
        .with(FileSize);
    let ctx = ToolContext::new().with_trace_id("tr_boxed");
    for (tool, args, secret) in [
        ("read_config", r#"{"name":"db.toml"}"#, "permission denied"),
        ("parse_port", r#"{"text":"http"}"#, "invalid digit"),
        ("file_size", r#"{"path":"a.txt"}"#, "/srv/secret"),
    ] {
        let out = toolbox.call(tool, args, &ctx).await;
        let err = out.error().unwrap_or_else(|| panic!("{tool}: {out}"));
        assert_eq!(err.code().as_str(), "internal_error", "{tool}");
        assert!(!out.to_json().contains(secret), "{tool}: {out}");
        let lines = capture.0.lock().unwrap().join("\n");
        assert!(lines.contains(secret), "{tool} was not logged: {lines}");
    }
    let out = toolbox.call("parse_port", r#"{"text":"8080"}"#, &ctx).await;
    assert_eq!(out.into_result::<u16>().unwrap(), 8080);
}

#[cfg(feature = "anyhow")]
mod with_anyhow {
    use super::Capture;
    use anyhow::Context as _;
    use toolsmith::{ToolContext, Toolbox, tool};

    /// Loads a user's settings. Read-only. Not for other users.
    #[tool(effect = "read")]
    async fn load_settings(
        /// The user.
        #[arg(length(max = 32))]
        user: String,
    ) -> anyhow::Result<String> {
        let raw: Result<String, std::io::Error> =
            Err(std::io::Error::other("connection reset by 10.0.0.7"));
        let text = raw.with_context(|| format!("loading settings of {user}"))?;
        Ok(text)
    }

    /// Counts a user's sessions. Read-only. Not for other users.
    #[tool(effect = "read")]
    fn count_sessions(
        /// The user.
        #[arg(length(max = 32))]
        user: String,
    ) -> Result<u32, anyhow::Error> {
        anyhow::ensure!(user != "root", "sessions of root are not counted");
        Ok(3)
    }

    #[tokio::test(flavor = "current_thread")]
    async fn anyhow_errors_are_internal_errors_with_their_context_logged() {
        let capture = Capture::default();
        let _guard = tracing::subscriber::set_default(capture.clone());
        let toolbox = Toolbox::new().with(LoadSettings).with(CountSessions);
        let ctx = ToolContext::new().with_trace_id("tr_anyhow");
        let out = toolbox
            .call("load_settings", r#"{"user":"ada"}"#, &ctx)
            .await;
        assert_eq!(out.error().unwrap().code().as_str(), "internal_error");
        assert!(!out.to_json().contains("10.0.0.7"), "{out}");
        let lines = capture.0.lock().unwrap().join("\n");
        assert!(
            lines.contains("loading settings of ada: connection reset by 10.0.0.7"),
            "{lines}"
        );
        let out = toolbox
            .call("count_sessions", r#"{"user":"root"}"#, &ctx)
            .await;
        assert_eq!(out.error().unwrap().code().as_str(), "internal_error");
        let out = toolbox
            .call("count_sessions", r#"{"user":"ada"}"#, &ctx)
            .await;
        assert_eq!(out.into_result::<u32>().unwrap(), 3);
    }
}

//! One audit record per call, to `tracing` and to any number of sinks.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Mutex;

use serde::Serialize;
use serde_json::Value;

/// What happened in one call. Arguments marked `#[arg(sensitive)]` are `"[redacted]"`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AuditRecord {
    /// When the call started, in milliseconds since the Unix epoch.
    pub time_unix_ms: u64,
    /// The run id, if the context has one.
    pub run_id: Option<String>,
    /// The call id, if the context has one.
    pub call_id: Option<String>,
    /// The trace id.
    pub trace_id: String,
    /// The principal, if known.
    pub principal: Option<String>,
    /// The tool's name as called.
    pub tool: String,
    /// The arguments, redacted (`null` when they were not JSON).
    pub arguments: Value,
    /// `success`, `degraded` or `error`.
    pub status: &'static str,
    /// The error code of a failed call.
    pub error_code: Option<&'static str>,
    /// How many times the tool ran (0 when the call was refused before running).
    pub attempts: u32,
    /// How long the call took, retries and waits included.
    pub duration_ms: u64,
}

/// Receives every audit record. Implementations must not block for long: they run on the
/// call's task.
pub trait AuditSink: Send + Sync + 'static {
    /// Stores one record.
    fn record(&self, record: &AuditRecord);
}

/// Appends each record as one JSON line to a file.
///
/// ```
/// let path = std::env::temp_dir().join(format!("audit-doc-{}.jsonl", std::process::id()));
/// let sink = toolsmith::JsonLinesSink::create(&path).unwrap();
/// # drop(sink); std::fs::remove_file(&path).unwrap();
/// ```
pub struct JsonLinesSink {
    file: Mutex<BufWriter<File>>,
}

impl JsonLinesSink {
    /// Opens (or creates) `path` for appending.
    ///
    /// # Errors
    ///
    /// When the file cannot be opened.
    pub fn create(path: impl AsRef<Path>) -> std::io::Result<Self> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Self {
            file: Mutex::new(BufWriter::new(file)),
        })
    }
}

impl AuditSink for JsonLinesSink {
    fn record(&self, record: &AuditRecord) {
        let Ok(line) = serde_json::to_string(record) else {
            return;
        };
        if let Ok(mut file) = self.file.lock() {
            let written = writeln!(file, "{line}").and_then(|()| file.flush());
            if let Err(err) = written {
                tracing::warn!(%err, "the audit file could not be written");
            }
        }
    }
}

/// Keeps records in memory, for tests and golden call sequences.
///
/// ```
/// let sink = toolsmith::MemorySink::default();
/// assert!(sink.records().is_empty());
/// ```
#[derive(Default)]
pub struct MemorySink {
    records: Mutex<Vec<AuditRecord>>,
}

impl MemorySink {
    /// The records so far.
    #[must_use]
    pub fn records(&self) -> Vec<AuditRecord> {
        self.records.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

impl AuditSink for MemorySink {
    fn record(&self, record: &AuditRecord) {
        if let Ok(mut records) = self.records.lock() {
            records.push(record.clone());
        }
    }
}

impl<S: AuditSink> AuditSink for std::sync::Arc<S> {
    fn record(&self, record: &AuditRecord) {
        (**self).record(record);
    }
}

/// The arguments with the sensitive top-level parameters replaced by `"[redacted]"`.
pub(crate) fn redact(arguments: &mut Value, sensitive: &[&str]) {
    if let Value::Object(map) = arguments {
        for name in sensitive {
            if let Some(value) = map.get_mut(*name) {
                *value = Value::String("[redacted]".into());
            }
        }
    }
}

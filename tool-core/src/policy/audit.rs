//! One audit record per call, to `tracing` and to any number of sinks.

use std::borrow::Cow;
use std::fs::{File, OpenOptions};
use std::future::IntoFuture;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::Value;
use tokio::time::Instant;
use tracing::Instrument;

use crate::arguments::Arguments;
use crate::limits::InputLimits;
use crate::outcome::{OutputNotes, ToolOutcome};

pub use super::decided::ApprovalNote;
use super::step::{Call, Done, Flow, Next, Ran, Role, Step};

/// What happened in one call. Arguments marked `#[arg(sensitive)]` are `"[redacted]"`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AuditRecord {
    /// When the call started, in milliseconds since the Unix epoch.
    pub time_unix_ms: u64,
    /// The run id, if the context has one.
    pub run_id: Option<String>,
    /// The call id, if the context has one.
    pub call_id: Option<String>,
    /// The call that made this one: for a call a program made, the `run_code` call that ran
    /// the program ([`ToolContext::parent_call_id`](crate::ToolContext::parent_call_id)).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_call_id: Option<String>,
    /// The trace id.
    pub trace_id: String,
    /// The principal, if known.
    pub principal: Option<String>,
    /// The tool's name as called.
    pub tool: String,
    /// The arguments, redacted. Once a call's arguments were read (they were valid), their
    /// canonical form, the one every step and the tool saw
    /// ([`ToolDefinition::canonical_arguments`](crate::ToolDefinition::canonical_arguments));
    /// for a call refused before that, the arguments as received (a note in place of arguments
    /// that were not JSON within the limits).
    pub arguments: Value,
    /// The hash of the canonical arguments that approvals and idempotency keys are bound to
    /// ([`arguments_hash`](crate::policy::arguments_hash)), once they were read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments_hash: Option<String>,
    /// How the arguments were repaired before they could be read, when they were
    /// ([`Repair`](crate::policy::Repair)).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub repairs: Vec<String>,
    /// `success`, `degraded`, `replayed` or `error`; for a tool the provider ran itself
    /// (recorded by the agent loop), `hosted`, `hosted_result` or `hosted_for_application`.
    pub status: &'static str,
    /// The error code of a failed call.
    pub error_code: Option<&'static str>,
    /// How many times the tool ran (0 when the call was refused before running).
    pub attempts: u32,
    /// How long the call took, retries and waits included.
    pub duration_ms: u64,
    /// What the output checks did to the result (neutralized, redacted, marked untrusted),
    /// when they did anything: a security event worth keeping (docs/output.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<crate::outcome::OutputNotes>,
    /// The artifacts the tool handed the application beside its result
    /// ([`Viewed::artifact`](crate::output::Viewed::artifact)), with secrets and paths
    /// redacted and steering text escaped.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<crate::outcome::Artifact>,
    /// The person's decision the call ran (or was refused) on, with who decided and why,
    /// when it was decided in an agent run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalNote>,
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
/// let sink = toolsmith::audit::JsonLinesSink::create(&path).unwrap();
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
/// let sink = toolsmith::audit::MemorySink::default();
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

impl<S: AuditSink + ?Sized> AuditSink for Arc<S> {
    fn record(&self, record: &AuditRecord) {
        (**self).record(record);
    }
}

/// The arguments with the sensitive top-level parameters replaced by `"[redacted]"`.
pub(crate) fn redact(arguments: &mut Value, sensitive: &[Cow<'static, str>]) {
    if let Value::Object(map) = arguments {
        for name in sensitive {
            if let Some(value) = map.get_mut(name.as_ref()) {
                *value = Value::String("[redacted]".into());
            }
        }
    }
}

/// The step that records each call: its `execute_tool` span (the tool, the call id, the
/// error code; see [`telemetry`](crate::telemetry)), the final touch on its error (trace id, operator-only details logged
/// and removed), and one [`AuditRecord`] per sink.
pub(crate) struct Audit {
    pub(crate) sinks: Arc<[Arc<dyn AuditSink>]>,
    /// The parameters redacted in records.
    pub(crate) sensitive: Vec<Cow<'static, str>>,
    /// The limits the arguments are read under for the record, unless the context has some.
    pub(crate) limits: Option<InputLimits>,
    /// The tool's description, for its span.
    pub(crate) description: Arc<str>,
    /// For an MCP server's tool: the transport its calls go over.
    pub(crate) remote: Option<&'static str>,
    /// What the span carries.
    pub(crate) telemetry: crate::telemetry::Telemetry,
}

impl Step for Audit {
    fn run<'a>(&'a self, call: Call<'a>, next: Next<'a>) -> Flow<'a> {
        Flow::later(self.record(call, next))
    }

    fn role(&self) -> Role<'_> {
        if self.is_idle() {
            Role::Idle
        } else {
            Role::Wraps
        }
    }
}

impl Audit {
    /// Nothing to do when no subscriber wants the span and there is no sink.
    #[inline]
    pub(crate) fn is_idle(&self) -> bool {
        self.sinks.is_empty() && !tracing::level_enabled!(tracing::Level::INFO)
    }

    /// The arguments as the record (and a span with content) shows them: as read, or as
    /// far as they can be read, with sensitive parameters redacted.
    fn recorded(
        &self,
        read: &std::sync::OnceLock<Box<crate::validate::canonical::Checked>>,
        arguments: &Arguments<'_>,
        ctx: &crate::context::ToolContext,
    ) -> Value {
        let limits = ctx
            .input_limits()
            .or(self.limits.as_ref())
            .unwrap_or(&InputLimits::DEFAULT);
        let mut value = match read.get() {
            Some(checked) => checked.value.clone(),
            None => arguments_value(arguments, limits),
        };
        redact(&mut value, &self.sensitive);
        value
    }

    async fn record<'a>(&'a self, call: Call<'a>, next: Next<'a>) -> Done {
        let name = call.name;
        let ctx = call.ctx;
        // The name (and, over MCP, the call id) is the client's: logged cut and escaped.
        let shown = crate::echo::echo(name);
        let call_id = ctx.call_id().map(crate::echo::echo);
        let rpc = ctx.get::<crate::telemetry::Rpc>();
        let span = match self.remote {
            Some(transport) => crate::telemetry::client_tool_span(
                &shown,
                call_id.as_deref(),
                &self.description,
                transport,
            ),
            None => crate::telemetry::tool_span(&shown, call_id.as_deref(), &self.description, rpc),
        };
        let audited = !self.sinks.is_empty();
        // What the call was given and answered goes on the span only when asked, redacted.
        let content = self.telemetry.content && !span.is_disabled();
        // Clocks only for someone who reads them: a sink.
        let started = audited.then(Instant::now);
        let time = audited.then(SystemTime::now);
        let arguments = (audited || content).then(|| call.arguments.clone());
        let read = call.read;
        let done = next.run(call).into_future().instrument(span.clone()).await;
        crate::telemetry::tool_ended(
            &span,
            done.ran.error().map(|e| e.code().as_str()),
            rpc.is_some() || self.remote.is_some(),
        );
        let arguments = arguments.map(|arguments| self.recorded(read, &arguments, ctx));
        if let (true, Some(arguments)) = (content, &arguments) {
            let result = match &done.ran {
                Ran::Outcome(outcome) => crate::output::data_for_program(outcome),
                _ => None,
            };
            crate::telemetry::tool_content(&span, &arguments.to_string(), result.as_deref());
        }
        let (Some(started), Some(time), Some(arguments)) = (started, time, arguments) else {
            return done;
        };
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let status = done.ran.status();
        let error_code = done.ran.error().map(|e| e.code().as_str());
        {
            let checked = read.get();
            let record = AuditRecord {
                time_unix_ms: unix_ms(time),
                run_id: ctx.run_id().map(str::to_owned),
                call_id: ctx.call_id().map(str::to_owned),
                parent_call_id: ctx.parent_call_id().map(str::to_owned),
                trace_id: ctx.trace_id().to_owned(),
                principal: ctx.principal().map(str::to_owned),
                tool: name.to_owned(),
                arguments,
                approval: done.approval.as_deref().cloned(),
                arguments_hash: checked.map(|checked| checked.hash().to_owned()),
                repairs: checked
                    .map(|checked| checked.repairs.clone())
                    .unwrap_or_default(),
                status,
                error_code,
                attempts: done.attempts,
                duration_ms,
                artifacts: match &done.ran {
                    Ran::Outcome(outcome) => outcome
                        .artifacts()
                        .iter()
                        .map(|artifact| {
                            let mut artifact = artifact.clone();
                            crate::output::sanitize(&mut artifact.data);
                            artifact
                        })
                        .collect(),
                    _ => Vec::new(),
                },
                output: match &done.ran {
                    Ran::Outcome(outcome) => match outcome.for_model() {
                        ToolOutcome::Checked(_, notes) => Some((**notes).clone()),
                        ToolOutcome::Stored(_, stored)
                            if stored.notes != OutputNotes::default() =>
                        {
                            Some(stored.notes.clone())
                        }
                        ToolOutcome::Error(err) if !err.redacted().is_empty() => {
                            Some(OutputNotes {
                                redacted: err.redacted().iter().map(|k| (*k).to_owned()).collect(),
                                ..OutputNotes::default()
                            })
                        }
                        _ => None,
                    },
                    Ran::Marked(notes, _) => Some((**notes).clone()),
                    Ran::Written => None,
                },
            };
            for sink in self.sinks.iter() {
                sink.record(&record);
            }
        }
        done
    }
}

/// The arguments as a value, for the audit record: read under the call's limits (and without
/// repeated keys), so that recording a refused call costs no more than refusing it.
fn arguments_value(arguments: &Arguments<'_>, limits: &InputLimits) -> Value {
    fn read(text: &str, limits: &InputLimits, unwrap: bool) -> Option<Value> {
        if text.trim().is_empty() {
            return Some(Value::Object(serde_json::Map::new()));
        }
        match crate::validate::reader::read(text, limits).ok()?.value {
            // OpenAI's arguments: a JSON string holding the object's text.
            Value::String(inner) if unwrap => read(&inner, limits, false),
            value => Some(value),
        }
    }
    let value = match arguments {
        Arguments::Text(text) => read(text, limits, true),
        Arguments::Value(value) => match &**value {
            Value::String(inner) => read(inner, limits, false),
            value => crate::limits::check_value(value, limits)
                .broken
                .is_none()
                .then(|| value.clone()),
        },
    };
    value.unwrap_or_else(|| {
        Value::String("(not recorded: the arguments were not JSON within the limits)".into())
    })
}

pub(crate) fn unix_ms(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

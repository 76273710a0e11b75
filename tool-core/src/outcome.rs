//! The envelope every call ends in: `{"status":"success","data":…}` or `{"status":"error","error":…}`.

use std::fmt;
use std::sync::Arc;

use serde::de::Error as _;
use serde::ser::SerializeStruct;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

use crate::error::ToolError;

/// The result of one tool call, always in the same envelope shape.
///
/// Successful data is kept as already-encoded JSON, so encoding the envelope does not walk the
/// data again.
///
/// ```
/// use toolsmith::{ToolError, ToolOutcome};
///
/// let ok = ToolOutcome::success(&vec![1, 2]).unwrap();
/// assert_eq!(ok.to_json(), r#"{"status":"success","data":[1,2]}"#);
///
/// let err = ToolOutcome::from(ToolError::not_found("No such city; check the spelling."));
/// let json: toolsmith::serde_json::Value = toolsmith::serde_json::from_str(&err.to_json()).unwrap();
/// assert_eq!(json["status"], "error");
/// assert_eq!(json["error"]["code"], "not_found");
/// assert_eq!(json["error"]["retryable"], false);
/// ```
#[derive(Clone, Debug)]
pub enum ToolOutcome {
    /// The tool returned a value; this is its JSON encoding.
    Success(Box<RawValue>),
    /// The tool failed and its fallback answered instead: success, marked degraded.
    Degraded(Box<RawValue>, Box<Degradation>),
    /// The stored result of an earlier call with the same idempotency key; the tool did not
    /// run again. The envelope says `"replayed": true`.
    Replayed(Box<RawValue>),
    /// The tool's data after the output checks changed it or marked it: what was
    /// neutralized or redacted, and where untrusted data came from (docs/output.md).
    Checked(Box<RawValue>, Arc<OutputNotes>),
    /// Data too large to give a model inline, kept in the toolbox's result store: the
    /// outcome holds all of it ([`data`](Self::data), [`into_result`](Self::into_result));
    /// its envelope carries the reference, a summary and the start instead of the data
    /// (docs/output.md).
    Stored(Box<RawValue>, Box<StoredResult>),
    /// A result with a view of its own for the model ([`Viewed`](crate::output::Viewed)):
    /// the program gets the typed value ([`data`](Self::data),
    /// [`into_result`](Self::into_result)), the model reads the view
    /// ([`for_model`](Self::for_model)), and artifacts reach the application and the audit
    /// but never a provider.
    Viewed(Box<ViewedResult>),
    /// The call failed.
    Error(ToolError),
}

/// The parts of a result whose model-facing view differs from its typed value
/// ([`ToolOutcome::Viewed`]).
///
/// The view is computed once, when the tool returns, and is kept with the value wherever the
/// result is kept (an idempotency key's stored result included), so a replay shows the model
/// the same view. The output checks (steering text, secrets, large results) run on the view;
/// a hand-written output schema is checked on the value.
///
/// ```
/// use toolsmith::outcome::{Artifact, ViewedResult};
/// use toolsmith::ToolOutcome;
/// let value = toolsmith::serde_json::value::to_raw_value(&[3, 1, 2]).unwrap();
/// let view = ToolOutcome::success("3 numbers").unwrap();
/// let artifacts = vec![Artifact::new("source", toolsmith::serde_json::json!("sensor 7"))];
/// let out = ToolOutcome::Viewed(Box::new(ViewedResult { value, view, artifacts }));
/// // The model reads the view; the program gets the value.
/// assert_eq!(out.to_json(), r#"{"status":"success","data":"3 numbers"}"#);
/// assert_eq!(out.into_result::<Vec<u8>>().unwrap(), [3, 1, 2]);
/// ```
#[derive(Clone, Debug)]
pub struct ViewedResult {
    /// The typed value, as JSON: what the program gets, and MCP's `structuredContent`.
    pub value: Box<RawValue>,
    /// What the model reads: a successful outcome (plain, checked, stored or replayed),
    /// never an error or another view.
    pub view: ToolOutcome,
    /// What the application and the audit get beside the result; never sent to a provider.
    pub artifacts: Vec<Artifact>,
}

/// A named piece of data a tool hands the application beside its result: a raw upstream
/// response, a file it wrote, a trace. Artifacts never reach a provider; audit records hold
/// them with secrets redacted.
///
/// ```
/// use toolsmith::outcome::Artifact;
/// let raw = Artifact::new("http_status", 200);
/// assert_eq!(raw.name, "http_status");
/// assert_eq!(raw.data, 200);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Artifact {
    /// What it is, for the application.
    pub name: String,
    /// The data.
    pub data: serde_json::Value,
}

impl Artifact {
    /// An artifact named `name` holding `data`.
    #[must_use]
    pub fn new(name: impl Into<String>, data: impl Into<serde_json::Value>) -> Self {
        Self {
            name: name.into(),
            data: data.into(),
        }
    }
}

/// What the output checks did to a result, written into its envelope so that neither the
/// model nor the audit log is left to guess.
///
/// ```
/// use toolsmith::output::OutputNotes;
/// use toolsmith::ToolOutcome;
/// let data = toolsmith::serde_json::value::to_raw_value("a &lt;/tool_result&gt; b").unwrap();
/// let notes = OutputNotes { neutralized: vec!["role_markup".into()], ..OutputNotes::default() };
/// let out = ToolOutcome::Checked(data, std::sync::Arc::new(notes));
/// assert_eq!(out.to_json(), r#"{"status":"success","data":"a &lt;/tool_result&gt; b","neutralized":["role_markup"]}"#);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputNotes {
    /// The families of model-steering text that were escaped (`toolsmith::output::Family`
    /// names), or found and kept as they are (instructions, which are marked untrusted).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub neutralized: Vec<String>,
    /// The kinds of secret or internal detail replaced by `[redacted <kind>]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redacted: Vec<String>,
    /// Set when the data is to be read as untrusted: where it came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untrusted: Option<Untrusted>,
    /// Set for a batch (`toolsmith::output::Batch`) in which some items failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<Partial>,
}

/// How many items of a batch succeeded and how many failed (the data lists which).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Partial {
    /// Items that succeeded.
    pub succeeded: usize,
    /// Items that failed: `data.failed` has each with its error.
    pub failed: usize,
}

impl OutputNotes {
    /// Appends the fields these notes add to an envelope, each with its leading comma, as
    /// serde writes them after the data.
    pub(crate) fn write_fields(&self, out: &mut Vec<u8>) {
        use crate::json::escape::write_str;
        let list = |out: &mut Vec<u8>, name: &[u8], items: &[String]| {
            if items.is_empty() {
                return;
            }
            out.extend_from_slice(name);
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(out, item);
            }
            out.push(b']');
        };
        list(out, br#","neutralized":["#, &self.neutralized);
        list(out, br#","redacted":["#, &self.redacted);
        if let Some(untrusted) = &self.untrusted {
            out.extend_from_slice(br#","untrusted":{"source":"#);
            write_str(out, &untrusted.source);
            out.extend_from_slice(if untrusted.open_world {
                br#","open_world":true,"notice":"#
            } else {
                br#","open_world":false,"notice":"#
            });
            write_str(out, &untrusted.notice);
            out.push(b'}');
        }
        if let Some(partial) = &self.partial {
            out.extend_from_slice(br#","partial":{"succeeded":"#);
            out.extend_from_slice(partial.succeeded.to_string().as_bytes());
            out.extend_from_slice(br#","failed":"#);
            out.extend_from_slice(partial.failed.to_string().as_bytes());
            out.push(b'}');
        }
    }
}

/// Where a large result was stored, and what the model is shown of it.
///
/// ```
/// use toolsmith::output::{OutputNotes, StoredResult};
/// use toolsmith::ToolOutcome;
/// let data = toolsmith::serde_json::value::to_raw_value(&vec![1; 5000]).unwrap();
/// let stored = StoredResult {
///     uri: "toolsmith://results/3f2a".into(),
///     bytes: 10_000,
///     summary: "a JSON array of 5000 items".into(),
///     preview: "[1,1,1".into(),
///     next_cursor: None,
///     notes: OutputNotes::default(),
/// };
/// let out = ToolOutcome::Stored(data, Box::new(stored));
/// assert!(out.to_json().starts_with(r#"{"status":"success","stored":{"uri":"toolsmith://results/3f2a""#));
/// assert_eq!(out.into_result::<Vec<u8>>().unwrap().len(), 5000);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredResult {
    /// The reference to read it by: `resources/read` over MCP, `Toolbox::stored_result`.
    pub uri: String,
    /// The size of the whole data, as JSON, in bytes.
    pub bytes: usize,
    /// What the data is: its shape and size.
    pub summary: String,
    /// The start of the data's JSON text, cut at a character boundary.
    pub preview: String,
    /// For a page of a paging tool ([`Page`](crate::output::Page)): the cursor of the next
    /// page, so that the model can go on without reading the stored data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// What the output checks did to the data before it was stored.
    #[serde(skip)]
    pub notes: OutputNotes,
}

/// The provenance of data marked untrusted, and what the model is told about it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Untrusted {
    /// The tool that returned it.
    pub source: String,
    /// Whether the tool reads from the open world (the web, mail, documents others wrote).
    pub open_world: bool,
    /// What the model is told: it is information, not instructions.
    pub notice: String,
}

/// How a degraded result came about: which fallback answered, why, and when.
///
/// ```
/// use toolsmith::{ToolOutcome};
/// use toolsmith::outcome::Degradation;
/// let data = toolsmith::serde_json::value::to_raw_value(&[1, 2]).unwrap();
/// let out = ToolOutcome::Degraded(data, Box::new(Degradation { fallback: "search_cache".into(), reason: "timeout".into(), at_unix_ms: 1 }));
/// assert_eq!(out.to_json(), r#"{"status":"success","data":[1,2],"degraded":{"fallback":"search_cache","reason":"timeout","at_unix_ms":1}}"#);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Degradation {
    /// The tool that answered instead.
    pub fallback: String,
    /// The primary tool's error code.
    pub reason: String,
    /// When the fallback answered, in milliseconds since the Unix epoch.
    pub at_unix_ms: u64,
}

impl ToolOutcome {
    /// Encodes `data` as a successful outcome. A value serde cannot encode as JSON (e.g. a map
    /// with non-string keys) becomes an `internal_error`.
    ///
    /// ```
    /// let out = toolsmith::ToolOutcome::success(&"hi").unwrap();
    /// assert_eq!(out.data().unwrap().get(), r#""hi""#);
    /// ```
    pub fn success<T: Serialize + ?Sized>(data: &T) -> Result<Self, ToolError> {
        raw_data(data).map(Self::Success)
    }

    /// Whether the call succeeded.
    #[must_use]
    pub fn is_success(&self) -> bool {
        !matches!(self, Self::Error(_))
    }

    /// Whether this is the stored result of an earlier call with the same idempotency key.
    #[must_use]
    pub fn is_replay(&self) -> bool {
        match self {
            Self::Replayed(_) => true,
            Self::Viewed(viewed) => viewed.view.is_replay(),
            _ => false,
        }
    }

    /// How the result was degraded, if a fallback answered.
    #[must_use]
    pub fn degradation(&self) -> Option<&Degradation> {
        match self {
            Self::Degraded(_, degradation) => Some(degradation),
            Self::Viewed(viewed) => viewed.view.degradation(),
            _ => None,
        }
    }

    /// The encoded data of a successful call: for a result with a view of its own, the
    /// typed value the program gets (the model reads [`for_model`](Self::for_model)).
    #[must_use]
    pub fn data(&self) -> Option<&RawValue> {
        match self {
            Self::Success(data)
            | Self::Degraded(data, _)
            | Self::Replayed(data)
            | Self::Checked(data, _)
            | Self::Stored(data, _) => Some(data),
            Self::Viewed(viewed) => Some(&viewed.value),
            Self::Error(_) => None,
        }
    }

    /// What the model reads of this outcome: the view of a result that has one, else the
    /// outcome itself. Every provider's answer is made from it; [`to_json`](Self::to_json)
    /// is its envelope.
    ///
    /// ```
    /// use toolsmith::output::Viewed;
    /// let out = Viewed::new(vec![1, 2, 3]).text("three numbers").into_outcome();
    /// assert_eq!(out.for_model().data().unwrap().get(), r#""three numbers""#);
    /// assert_eq!(out.data().unwrap().get(), "[1,2,3]");
    /// ```
    #[must_use]
    pub fn for_model(&self) -> &ToolOutcome {
        match self {
            Self::Viewed(viewed) => &viewed.view,
            other => other,
        }
    }

    /// The artifacts a tool handed the application beside its result (see [`Artifact`]);
    /// empty for most results.
    #[must_use]
    pub fn artifacts(&self) -> &[Artifact] {
        match self {
            Self::Viewed(viewed) => &viewed.artifacts,
            _ => &[],
        }
    }

    /// The error of a failed call.
    #[must_use]
    pub fn error(&self) -> Option<&ToolError> {
        match self {
            Self::Success(_)
            | Self::Degraded(..)
            | Self::Replayed(_)
            | Self::Checked(..)
            | Self::Stored(..)
            | Self::Viewed(_) => None,
            Self::Error(err) => Some(err),
        }
    }

    /// Decodes the data of a successful call, or returns the error of a failed one.
    ///
    /// ```
    /// let out = toolsmith::ToolOutcome::success(&41).unwrap();
    /// assert_eq!(out.into_result::<i64>().unwrap(), 41);
    /// ```
    pub fn into_result<T: serde::de::DeserializeOwned>(self) -> Result<T, ToolError> {
        fn decode<T: serde::de::DeserializeOwned>(data: &RawValue) -> Result<T, ToolError> {
            serde_json::from_str(data.get()).map_err(|err| {
                ToolError::internal(format_args!("the data does not decode as requested: {err}"))
            })
        }
        match self {
            Self::Success(data)
            | Self::Degraded(data, _)
            | Self::Replayed(data)
            | Self::Checked(data, _)
            | Self::Stored(data, _) => decode(&data),
            Self::Viewed(viewed) => decode(&viewed.value),
            Self::Error(err) => Err(err),
        }
    }

    /// The envelope as a JSON string.
    #[must_use]
    pub fn to_json(&self) -> String {
        match self {
            Self::Stored(..) => serde_json::to_string(self).unwrap_or_default(),
            Self::Viewed(viewed) => viewed.view.to_json(),
            _ => {
                let mut out = Vec::with_capacity(self.json_size_hint());
                self.write_json(&mut out);
                // Written from `str`s, ASCII and the data, which is JSON text.
                String::from_utf8(out).unwrap_or_default()
            }
        }
    }

    /// About how many bytes the envelope takes, to allocate it once.
    fn json_size_hint(&self) -> usize {
        match self {
            Self::Success(data) | Self::Replayed(data) | Self::Degraded(data, _) => {
                data.get().len() + 96
            }
            Self::Checked(data, notes) => {
                data.get().len()
                    + 128
                    + notes
                        .untrusted
                        .as_ref()
                        .map_or(0, |u| u.notice.len() + u.source.len())
            }
            Self::Error(err) => err.message().len() * 2 + 96,
            Self::Stored(..) | Self::Viewed(_) => 256,
        }
    }

    /// The outcome as it is kept (an idempotency key's stored result): the envelope, and for
    /// a result with a view of its own, its typed value and artifacts beside it, so that a
    /// replay gives the program and the model what the first call gave them. Reads back with
    /// serde as the outcome.
    pub(crate) fn to_record(&self) -> String {
        match self {
            Self::Viewed(viewed) => {
                let mut out = viewed.view.to_json();
                let mut extra = String::from(r#","value":"#);
                extra.push_str(viewed.value.get());
                if !viewed.artifacts.is_empty() {
                    extra.push_str(r#","artifacts":"#);
                    extra.push_str(&serde_json::to_string(&viewed.artifacts).unwrap_or_default());
                }
                // The envelope is an object: the fields go before its closing brace.
                out.pop();
                out.push_str(&extra);
                out.push('}');
                out
            }
            other => other.to_json(),
        }
    }
}

impl ToolOutcome {
    /// Appends the envelope, as [`to_json`](Self::to_json) writes it, to `out`.
    ///
    /// ```
    /// let mut out = Vec::new();
    /// toolsmith::ToolOutcome::success(&7).unwrap().write_json(&mut out);
    /// assert_eq!(out, br#"{"status":"success","data":7}"#);
    /// ```
    pub fn write_json(&self, out: &mut Vec<u8>) {
        match self {
            Self::Success(data) => {
                open_success(out);
                out.extend_from_slice(data.get().as_bytes());
                close_success(out, "");
            }
            Self::Error(err) => write_error(out, err),
            // The same bytes as serde's, written in one pass (`tests` below hold them to it).
            Self::Checked(data, notes) => {
                open_success(out);
                out.extend_from_slice(data.get().as_bytes());
                notes.write_fields(out);
                out.push(b'}');
            }
            Self::Replayed(data) => {
                open_success(out);
                out.extend_from_slice(data.get().as_bytes());
                close_success(out, r#","replayed":true"#);
            }
            Self::Degraded(data, degradation) => {
                use crate::json::escape::write_str;
                open_success(out);
                out.extend_from_slice(data.get().as_bytes());
                out.extend_from_slice(br#","degraded":{"fallback":"#);
                write_str(out, &degradation.fallback);
                out.extend_from_slice(br#","reason":"#);
                write_str(out, &degradation.reason);
                out.extend_from_slice(br#","at_unix_ms":"#);
                out.extend_from_slice(degradation.at_unix_ms.to_string().as_bytes());
                out.extend_from_slice(b"}}");
            }
            // Only strings, numbers and booleans besides the data: it always encodes.
            Self::Stored(..) => {
                let _ = serde_json::to_writer(&mut *out, self);
            }
            Self::Viewed(viewed) => viewed.view.write_json(out),
        }
    }
}

/// A tool's data as JSON; a value serde cannot write is an `internal_error`.
pub(crate) fn raw_data<T: Serialize + ?Sized>(
    data: &T,
) -> Result<Box<serde_json::value::RawValue>, ToolError> {
    // `to_raw_value` trusts serde_json's own output: no second parse.
    serde_json::value::to_raw_value(data).map_err(|err| not_json(&err))
}

/// The error for a return value serde cannot write as JSON.
pub(crate) fn not_json(err: &serde_json::Error) -> ToolError {
    ToolError::internal(format_args!("the tool's return value is not JSON: {err}"))
}

/// An error's envelope, as serializing the outcome writes it, in one pass.
fn write_error(out: &mut Vec<u8>, err: &ToolError) {
    out.extend_from_slice(br#"{"status":"error","error":"#);
    err.write_json(out);
    out.push(b'}');
}

/// How every success envelope starts.
const SUCCESS_PREFIX: &str = r#"{"status":"success","data":"#;

/// The start of a success envelope, before its data: the one place that writes it, for an
/// outcome ([`ToolOutcome::write_json`], [`ToolOutcome::to_json`]) and for data an inline tool
/// writes in place (`Toolbox::call_into`), so the two are the same bytes. Serializing a
/// [`ToolOutcome`] with serde gives these bytes too.
#[inline]
pub(crate) fn open_success(out: &mut Vec<u8>) {
    out.extend_from_slice(SUCCESS_PREFIX.as_bytes());
}

/// The end of a success envelope, after its data: `fields` (what the output checks said, as
/// serialized fields with their leading comma, or nothing), then the closing brace.
#[inline]
pub(crate) fn close_success(out: &mut Vec<u8>, fields: &str) {
    out.extend_from_slice(fields.as_bytes());
    out.push(b'}');
}

impl From<ToolError> for ToolOutcome {
    fn from(err: ToolError) -> Self {
        Self::Error(err)
    }
}

impl fmt::Display for ToolOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_json())
    }
}

impl Serialize for ToolOutcome {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // The model's envelope: the view. The value and artifacts are the program's.
        if let Self::Viewed(viewed) = self {
            return viewed.view.serialize(serializer);
        }
        let mut s = serializer.serialize_struct("ToolOutcome", 6)?;
        match self {
            Self::Success(data) => {
                s.serialize_field("status", "success")?;
                s.serialize_field("data", data)?;
            }
            Self::Degraded(data, degradation) => {
                s.serialize_field("status", "success")?;
                s.serialize_field("data", data)?;
                s.serialize_field("degraded", degradation)?;
            }
            Self::Replayed(data) => {
                s.serialize_field("status", "success")?;
                s.serialize_field("data", data)?;
                s.serialize_field("replayed", &true)?;
            }
            Self::Stored(_, stored) => {
                s.serialize_field("status", "success")?;
                s.serialize_field("stored", stored)?;
                serialize_notes(&mut s, &stored.notes)?;
            }
            Self::Checked(data, notes) => {
                s.serialize_field("status", "success")?;
                s.serialize_field("data", data)?;
                serialize_notes(&mut s, notes)?;
            }
            Self::Error(err) => {
                s.serialize_field("status", "error")?;
                s.serialize_field("error", err)?;
            }
            Self::Viewed(_) => {}
        }
        s.end()
    }
}

/// The fields that say what the output checks did, after the data.
fn serialize_notes<S: SerializeStruct>(s: &mut S, notes: &OutputNotes) -> Result<(), S::Error> {
    if !notes.neutralized.is_empty() {
        s.serialize_field("neutralized", &notes.neutralized)?;
    }
    if !notes.redacted.is_empty() {
        s.serialize_field("redacted", &notes.redacted)?;
    }
    if let Some(untrusted) = &notes.untrusted {
        s.serialize_field("untrusted", untrusted)?;
    }
    if let Some(partial) = &notes.partial {
        s.serialize_field("partial", partial)?;
    }
    Ok(())
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum Status {
    Success,
    Error,
}

/// Every field an envelope (or a kept record, [`ToolOutcome::to_record`]) may have.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope {
    status: Status,
    // `Option<Box<RawValue>>` would read `"data": null` as absent.
    #[serde(default, deserialize_with = "present")]
    data: Option<Box<RawValue>>,
    error: Option<ToolError>,
    degraded: Option<Degradation>,
    #[serde(default)]
    replayed: bool,
    #[serde(default)]
    neutralized: Vec<String>,
    #[serde(default)]
    redacted: Vec<String>,
    untrusted: Option<Untrusted>,
    partial: Option<Partial>,
    stored: Option<StoredResult>,
    // A kept result with a view of its own: the typed value and the artifacts beside the
    // view's envelope.
    #[serde(default, deserialize_with = "present")]
    value: Option<Box<RawValue>>,
    #[serde(default)]
    artifacts: Vec<Artifact>,
}

fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Box<RawValue>>, D::Error> {
    Box::<RawValue>::deserialize(d).map(Some)
}

impl ToolOutcome {
    /// Reads an envelope or a kept record from its text, as its `Deserialize` does. A plain
    /// success as [`to_json`](Self::to_json) writes it (`{"status":"success","data":…}`) is
    /// its data, read through as one JSON value without building the envelope's fields;
    /// anything else after the data (another field) is not one value and is read in full.
    pub(crate) fn from_text(text: &str) -> serde_json::Result<Self> {
        if let Some(data) = text
            .strip_prefix(r#"{"status":"success","data":"#)
            .and_then(|rest| rest.strip_suffix('}'))
            && let Ok(data) = serde_json::from_str::<Box<RawValue>>(data)
        {
            return Ok(Self::Success(data));
        }
        serde_json::from_str(text)
    }
}

impl<'de> Deserialize<'de> for ToolOutcome {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut envelope = Envelope::deserialize(deserializer)?;
        let artifacts = std::mem::take(&mut envelope.artifacts);
        let Some(value) = envelope.value.take() else {
            if !artifacts.is_empty() {
                return Err(D::Error::custom("`artifacts` come with a `value`"));
            }
            return ToolOutcome::from_envelope(envelope).map_err(D::Error::custom);
        };
        let view = ToolOutcome::from_envelope(envelope).map_err(D::Error::custom)?;
        if !view.is_success() {
            return Err(D::Error::custom(
                "a result's `value` comes with a success envelope",
            ));
        }
        Ok(Self::Viewed(Box::new(ViewedResult {
            value,
            view,
            artifacts,
        })))
    }
}

impl ToolOutcome {
    fn from_envelope(envelope: Envelope) -> Result<Self, &'static str> {
        let notes = OutputNotes {
            neutralized: envelope.neutralized,
            redacted: envelope.redacted,
            untrusted: envelope.untrusted,
            partial: envelope.partial,
        };
        if let (Status::Success, None, None, Some(mut stored)) = (
            &envelope.status,
            &envelope.data,
            &envelope.error,
            envelope.stored,
        ) {
            // Read back, a stored result has only its reference: the data is in the store.
            stored.notes = notes;
            let data = RawValue::from_string("null".to_owned()).map_err(|_| "`null` is JSON")?;
            return Ok(Self::Stored(data, Box::new(stored)));
        }
        match (envelope.status, envelope.data, envelope.error) {
            (Status::Success, Some(data), None) if notes != OutputNotes::default() => {
                Ok(Self::Checked(data, Arc::new(notes)))
            }
            (Status::Success, Some(data), None) => {
                Ok(match (envelope.degraded, envelope.replayed) {
                    (Some(degradation), _) => Self::Degraded(data, Box::new(degradation)),
                    (None, true) => Self::Replayed(data),
                    (None, false) => Self::Success(data),
                })
            }
            (Status::Error, None, Some(error)) => Ok(Self::Error(error)),
            (Status::Success, _, _) => Err("a success envelope has `data` and no `error`"),
            (Status::Error, _, _) => Err("an error envelope has `error` and no `data`"),
        }
    }
}

/// How a call written by [`Toolbox::call_into`](crate::Toolbox::call_into) ended; the envelope in the buffer says the
/// rest.
///
/// ```
/// use toolsmith::outcome::CallStatus;
/// use toolsmith::{ErrorCode, ToolContext, Toolbox};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let mut out = Vec::new();
/// let status = Toolbox::new().call_into("nope", "{}", &ToolContext::new(), &mut out).await;
/// assert_eq!(status, CallStatus::Error(ErrorCode::UnknownTool));
/// assert!(!status.is_success());
/// # });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallStatus {
    /// The tool returned data.
    Success,
    /// A fallback tool answered (`"degraded"` in the envelope).
    Degraded,
    /// An idempotent write's stored result (`"replayed": true`).
    Replayed,
    /// An error envelope, with this code.
    Error(crate::error::ErrorCode),
}

impl CallStatus {
    pub(crate) fn of(outcome: &ToolOutcome) -> Self {
        match outcome {
            ToolOutcome::Success(_) | ToolOutcome::Checked(..) | ToolOutcome::Stored(..) => {
                Self::Success
            }
            ToolOutcome::Degraded(..) => Self::Degraded,
            ToolOutcome::Replayed(_) => Self::Replayed,
            ToolOutcome::Viewed(viewed) => Self::of(&viewed.view),
            ToolOutcome::Error(err) => Self::Error(err.code()),
        }
    }

    /// Whether there is data (success, degraded or replayed).
    #[must_use]
    pub fn is_success(self) -> bool {
        !matches!(self, Self::Error(_))
    }

    /// The error's code, for an error.
    #[must_use]
    pub fn error_code(self) -> Option<crate::error::ErrorCode> {
        match self {
            Self::Error(code) => Some(code),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Arc, Degradation, OutputNotes, Partial, ToolOutcome, Untrusted};
    use serde_json::value::{RawValue, to_raw_value};

    fn data(text: &str) -> Box<RawValue> {
        to_raw_value(&serde_json::json!({"text": text, "n": [1, 2.5, null]})).unwrap()
    }

    fn same_as_serde(outcome: &ToolOutcome) -> Result<(), proptest::test_runner::TestCaseError> {
        let mut ours = Vec::new();
        outcome.write_json(&mut ours);
        let theirs = serde_json::to_string(outcome).unwrap();
        proptest::prop_assert_eq!(String::from_utf8(ours).unwrap(), theirs.clone());
        proptest::prop_assert_eq!(outcome.to_json(), theirs);
        Ok(())
    }

    proptest::proptest! {
        /// Every envelope written by hand is the one serde writes, whatever the texts hold.
        #[test]
        fn an_envelope_is_written_as_serde_writes_it(
            text in "\\PC{0,40}|[\\x00-\\x7f]{0,40}",
            steer in proptest::collection::vec("[a-z_\"\\\\]{0,12}", 0..3),
            secrets in proptest::collection::vec("\\PC{0,12}", 0..3),
            untrusted in proptest::option::of(("\\PC{0,20}", proptest::bool::ANY, "\\PC{0,60}")),
            partial in proptest::option::of((0usize..1000, 0usize..1000)),
            at in proptest::num::u64::ANY,
        ) {
            let notes = OutputNotes {
                neutralized: steer,
                redacted: secrets,
                untrusted: untrusted.map(|(source, open_world, notice)| Untrusted {
                    source,
                    open_world,
                    notice,
                }),
                partial: partial.map(|(succeeded, failed)| Partial { succeeded, failed }),
            };
            same_as_serde(&ToolOutcome::Checked(data(&text), Arc::new(notes)))?;
            same_as_serde(&ToolOutcome::Replayed(data(&text)))?;
            same_as_serde(&ToolOutcome::Degraded(
                data(&text),
                Box::new(Degradation { fallback: text.clone(), reason: text.clone(), at_unix_ms: at }),
            ))?;
            same_as_serde(&ToolOutcome::Success(data(&text)))?;
        }

        /// `from_text` reads every outcome written, and any text at all, as the outcome's
        /// reader does.
        #[test]
        fn an_envelope_is_read_from_text_as_serde_reads_it(
            text in "\\PC{0,40}|[\\x00-\\x7f]{0,40}",
            tail in "\\PC{0,20}|[{}\",:a-z0-9 ]{0,20}",
        ) {
            let outcomes = [
                ToolOutcome::Success(data(&text)),
                ToolOutcome::Replayed(data(&text)),
                ToolOutcome::Checked(data(&text), Arc::new(OutputNotes {
                    neutralized: vec![text.clone()],
                    ..OutputNotes::default()
                })),
                ToolOutcome::Error(crate::error::ToolError::new(
                    crate::error::ErrorCode::NotFound,
                    text.clone(),
                )),
            ];
            for written in outcomes.iter().map(ToolOutcome::to_record).chain([
                format!(r#"{{"status":"success","data":{tail}}}"#),
                format!(r#"{{"status":"success","data":1{tail}}}"#),
                format!(r#"{{"status":"success","data":"{text}"}}{tail}"#),
            ]) {
                same_read(&written)?;
            }
        }
    }

    fn same_read(text: &str) -> Result<(), proptest::test_runner::TestCaseError> {
        let ours = ToolOutcome::from_text(text).map(|o| o.to_json());
        let theirs = serde_json::from_str::<ToolOutcome>(text).map(|o| o.to_json());
        proptest::prop_assert_eq!(ours.is_ok(), theirs.is_ok(), "{}", text);
        if let (Ok(ours), Ok(theirs)) = (ours, theirs) {
            proptest::prop_assert_eq!(ours, theirs, "{}", text);
        }
        Ok(())
    }

    #[test]
    fn a_plain_success_is_read_from_text_as_its_data() {
        for data in [
            "7",
            "null",
            r#""text""#,
            r#"{"a":"}"}"#,
            r#"[1,{"a":[]}]"#,
            r#"{"a":1,"a":2}"#,
        ] {
            let text = format!(r#"{{"status":"success","data":{data}}}"#);
            same_read(&text).unwrap();
            assert!(
                matches!(ToolOutcome::from_text(&text), Ok(ToolOutcome::Success(d)) if d.get() == data)
            );
        }
        // Shapes the short cut leaves to the reader: more fields, no data, a broken value.
        for text in [
            r#"{"status":"success","data":1,"untrusted":{"source":"web","open_world":true,"notice":"x"}}"#,
            r#"{"status":"success","data":1,"replayed":true}"#,
            r#"{"status":"success","data":1,"extra":true}"#,
            r#"{"status":"success","data":}"#,
            r#"{"status":"success","data":1}}"#,
        ] {
            same_read(text).unwrap();
        }
        assert!(matches!(
            ToolOutcome::from_text(r#"{"status":"success","data":1,"replayed":true}"#),
            Ok(ToolOutcome::Replayed(_))
        ));
        assert!(ToolOutcome::from_text(r#"{"status":"success","data":1,"extra":true}"#).is_err());
    }
}

//! The envelope every call ends in: `{"status":"success","data":…}` or `{"status":"error","error":…}`.

use std::fmt;

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
/// use toolsmith_core::{ToolError, ToolOutcome};
///
/// let ok = ToolOutcome::success(&vec![1, 2]).unwrap();
/// assert_eq!(ok.to_json(), r#"{"status":"success","data":[1,2]}"#);
///
/// let err = ToolOutcome::from(ToolError::not_found("No such city; check the spelling."));
/// let json: serde_json::Value = serde_json::from_str(&err.to_json()).unwrap();
/// assert_eq!(json["status"], "error");
/// assert_eq!(json["error"]["code"], "not_found");
/// assert_eq!(json["error"]["retryable"], false);
/// ```
#[derive(Clone, Debug)]
pub enum ToolOutcome {
    /// The tool returned a value; this is its JSON encoding.
    Success(Box<RawValue>),
    /// The call failed.
    Error(ToolError),
}

impl ToolOutcome {
    /// Encodes `data` as a successful outcome. A value serde cannot encode as JSON (e.g. a map
    /// with non-string keys) becomes an `internal_error`.
    ///
    /// ```
    /// let out = toolsmith_core::ToolOutcome::success(&"hi").unwrap();
    /// assert_eq!(out.data().unwrap().get(), r#""hi""#);
    /// ```
    pub fn success<T: Serialize + ?Sized>(data: &T) -> Result<Self, ToolError> {
        // `to_raw_value` trusts serde_json's own output: no second parse.
        serde_json::value::to_raw_value(data)
            .map(Self::Success)
            .map_err(|err| {
                ToolError::internal(format_args!("the tool's return value is not JSON: {err}"))
            })
    }

    /// Whether the call succeeded.
    #[must_use]
    pub fn is_success(&self) -> bool {
        matches!(self, Self::Success(_))
    }

    /// The encoded data of a successful call.
    #[must_use]
    pub fn data(&self) -> Option<&RawValue> {
        match self {
            Self::Success(data) => Some(data),
            Self::Error(_) => None,
        }
    }

    /// The error of a failed call.
    #[must_use]
    pub fn error(&self) -> Option<&ToolError> {
        match self {
            Self::Success(_) => None,
            Self::Error(err) => Some(err),
        }
    }

    /// Decodes the data of a successful call, or returns the error of a failed one.
    ///
    /// ```
    /// let out = toolsmith_core::ToolOutcome::success(&41).unwrap();
    /// assert_eq!(out.into_result::<i64>().unwrap(), 41);
    /// ```
    pub fn into_result<T: serde::de::DeserializeOwned>(self) -> Result<T, ToolError> {
        match self {
            Self::Success(data) => serde_json::from_str(data.get()).map_err(|err| {
                ToolError::internal(format_args!("the data does not decode as requested: {err}"))
            }),
            Self::Error(err) => Err(err),
        }
    }

    /// The envelope as a JSON string.
    #[must_use]
    pub fn to_json(&self) -> String {
        match self {
            Self::Success(data) => {
                let data = data.get();
                let mut out = String::with_capacity(data.len() + 30);
                out.push_str(r#"{"status":"success","data":"#);
                out.push_str(data);
                out.push('}');
                out
            }
            // A ToolError holds only strings, numbers and booleans: it always encodes.
            Self::Error(_) => serde_json::to_string(self).unwrap_or_default(),
        }
    }
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
        let mut s = serializer.serialize_struct("ToolOutcome", 2)?;
        match self {
            Self::Success(data) => {
                s.serialize_field("status", "success")?;
                s.serialize_field("data", data)?;
            }
            Self::Error(err) => {
                s.serialize_field("status", "error")?;
                s.serialize_field("error", err)?;
            }
        }
        s.end()
    }
}

impl<'de> Deserialize<'de> for ToolOutcome {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "snake_case")]
        enum Status {
            Success,
            Error,
        }
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Envelope {
            status: Status,
            // `Option<Box<RawValue>>` would read `"data": null` as absent.
            #[serde(default, deserialize_with = "present")]
            data: Option<Box<RawValue>>,
            error: Option<ToolError>,
        }
        fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Box<RawValue>>, D::Error> {
            Box::<RawValue>::deserialize(d).map(Some)
        }
        let envelope = Envelope::deserialize(deserializer)?;
        match (envelope.status, envelope.data, envelope.error) {
            (Status::Success, Some(data), None) => Ok(Self::Success(data)),
            (Status::Error, None, Some(error)) => Ok(Self::Error(error)),
            (Status::Success, _, _) => Err(D::Error::custom(
                "a success envelope has `data` and no `error`",
            )),
            (Status::Error, _, _) => Err(D::Error::custom(
                "an error envelope has `error` and no `data`",
            )),
        }
    }
}

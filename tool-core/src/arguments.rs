//! The arguments of a call as they arrive from a provider.

use std::borrow::Cow;

use serde_json::Value;

/// The arguments of a call as they arrive from a provider: JSON text, or a parsed value.
///
/// Either may be an object, or a JSON string that contains the object's text (OpenAI sends the
/// arguments as a string). Empty text stands for `{}`.
///
/// ```
/// use toolsmith::Arguments;
/// let a: Arguments<'_> = r#"{"city":"Paris"}"#.into();
/// let v = toolsmith::serde_json::json!({"city": "Paris"});
/// let b: Arguments<'_> = (&v).into();
/// assert!(matches!(a, Arguments::Text(_)));
/// assert!(matches!(b, Arguments::Value(_)));
/// ```
#[derive(Clone, Debug)]
pub enum Arguments<'a> {
    /// JSON text.
    Text(Cow<'a, str>),
    /// An already-parsed JSON value.
    Value(Cow<'a, Value>),
}

impl Arguments<'_> {
    /// The same arguments, borrowed: no copy of owned text or values.
    pub(crate) fn reborrow(&self) -> Arguments<'_> {
        match self {
            Self::Text(text) => Arguments::Text(Cow::Borrowed(text)),
            Self::Value(value) => Arguments::Value(Cow::Borrowed(value)),
        }
    }
}

impl<'a> From<&'a str> for Arguments<'a> {
    fn from(text: &'a str) -> Self {
        Self::Text(Cow::Borrowed(text))
    }
}

impl<'a> From<&'a String> for Arguments<'a> {
    fn from(text: &'a String) -> Self {
        Self::Text(Cow::Borrowed(text))
    }
}

impl From<String> for Arguments<'_> {
    fn from(text: String) -> Self {
        Self::Text(Cow::Owned(text))
    }
}

impl<'a> From<&'a Value> for Arguments<'a> {
    fn from(value: &'a Value) -> Self {
        Self::Value(Cow::Borrowed(value))
    }
}

impl From<Value> for Arguments<'_> {
    fn from(value: Value) -> Self {
        Self::Value(Cow::Owned(value))
    }
}

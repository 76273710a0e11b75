//! Canonical JSON: the same arguments give the same hash whatever their key order, and an
//! integer written `5.0` is the integer 5.

use std::borrow::Cow;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::limits::InputLimits;

/// The hash an approval is bound to: `sha256:<hex>` of the arguments with object keys sorted,
/// so the same arguments in another key order hash the same.
///
/// ```
/// use toolsmith::serde_json::json;
/// use toolsmith::policy::arguments_hash;
/// assert_eq!(arguments_hash(&json!({"a": 1, "b": [2]})), arguments_hash(&json!({"b": [2], "a": 1})));
/// assert_ne!(arguments_hash(&json!({"a": 1})), arguments_hash(&json!({"a": 2})));
/// ```
#[must_use]
pub fn arguments_hash(arguments: &Value) -> String {
    /// Writes the canonical JSON straight into the hasher: no intermediate text.
    fn canonical(value: &Value, out: &mut Sha256) {
        match value {
            Value::Object(map) => {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
                out.update(b"{");
                for (i, (key, item)) in entries.into_iter().enumerate() {
                    if i > 0 {
                        out.update(b",");
                    }
                    scalar(key.as_str(), out);
                    out.update(b":");
                    canonical(item, out);
                }
                out.update(b"}");
            }
            Value::Array(items) => {
                out.update(b"[");
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.update(b",");
                    }
                    canonical(item, out);
                }
                out.update(b"]");
            }
            other => scalar(other, out),
        }
    }
    /// A scalar (or a key) as serde_json writes it.
    fn scalar<T: serde::Serialize + ?Sized>(value: &T, out: &mut Sha256) {
        struct Hashing<'a>(&'a mut Sha256);
        impl std::io::Write for Hashing<'_> {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0.update(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        // Writing a string or a JSON scalar into an infallible writer cannot fail.
        let _ = serde_json::to_writer(Hashing(out), value);
    }
    let mut hasher = Sha256::new();
    canonical(arguments, &mut hasher);
    let mut hex = String::with_capacity(7 + 64);
    hex.push_str("sha256:");
    push_hex(&mut hex, &hasher.finalize());
    hex
}

/// Appends `bytes` as lowercase hex digits.
pub(crate) fn push_hex(out: &mut String, bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for byte in bytes {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
}

/// `value` with integral numbers written as integers (`5.0` → `5`) where a float holds the
/// integer unambiguously (below 2^53); borrowed when it has none, which is almost always.
pub(crate) fn normalized_integers(value: &Value) -> Cow<'_, Value> {
    if crate::limits::check_value(value, &InputLimits::UNBOUNDED).integral_floats {
        Cow::Owned(crate::limits::integral_floats_as_integers(value))
    } else {
        Cow::Borrowed(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integers_written_with_a_fraction_are_normalized() {
        assert_eq!(
            normalized_integers(&json!({"a": [5.0, 5.5, -2.0, 1e19]})).into_owned(),
            json!({"a": [5, 5.5, -2, 1e19]})
        );
        let whole = json!({"a": [5.0]});
        assert!(
            matches!(normalized_integers(&whole), std::borrow::Cow::Owned(v) if v == json!({"a": [5]}))
        );
        let plain = json!({"a": [5, 5.5, "x"]});
        assert!(matches!(
            normalized_integers(&plain),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}

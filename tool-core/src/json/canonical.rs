//! Canonical JSON (RFC 8785, the JSON Canonicalization Scheme): the same arguments give the
//! same bytes, and so the same hash, whatever their key order, whitespace or number spelling
//! (`5`, `5.0` and `5e0` are one number). A client in another language that implements
//! RFC 8785 derives the same bytes, with one deliberate difference, for integers beyond
//! ±2^53 (see [`canonical_json`]).

use serde_json::Value;
use sha2::{Digest, Sha256};

/// `value` as canonical JSON (RFC 8785): object members sorted by the UTF-16 code units of
/// their names, no whitespace, strings escaped only where JSON requires it, numbers in the
/// shortest form that reads back as the same double (ECMAScript's `Number.prototype.toString`).
///
/// One difference from RFC 8785, on purpose: an integer beyond ±2^53 is written with its
/// exact digits, where RFC 8785 (which reads every number as a double) would round it to the
/// nearest double. Two ids a digit apart must never share an idempotency key. Within the
/// I-JSON range that RFC 8785 asks of its input the bytes are RFC 8785's.
///
/// ```
/// use toolsmith::policy::canonical_json;
/// use toolsmith::serde_json::json;
/// assert_eq!(canonical_json(&json!({"b": [1.0, 2.5e-7], "a": "\u{e9}"})), r#"{"a":"é","b":[1,2.5e-7]}"#);
/// assert_eq!(canonical_json(&json!(1e21)), "1e+21");
/// assert_eq!(canonical_json(&json!(9007199254740993u64)), "9007199254740993");
/// ```
#[must_use]
pub fn canonical_json(value: &Value) -> String {
    let mut out = Vec::with_capacity(128);
    write(value, &mut |bytes| out.extend_from_slice(bytes));
    // Every byte written is UTF-8: member names and strings as given, the rest ASCII.
    String::from_utf8(out).unwrap_or_default()
}

/// The hash an approval and an idempotency key are bound to: `sha256:<hex>` of the
/// arguments' [`canonical_json`], so the same arguments in another key order or number
/// spelling hash the same.
///
/// A toolbox hashes a call's canonical arguments: read under the tool's schema, with `null`
/// for an optional parameter read as absent and defaults applied
/// ([`ToolDefinition::canonical_arguments`](crate::ToolDefinition::canonical_arguments)).
///
/// ```
/// use toolsmith::serde_json::json;
/// use toolsmith::policy::arguments_hash;
/// assert_eq!(arguments_hash(&json!({"a": 1, "b": [2]})), arguments_hash(&json!({"b": [2], "a": 1.0})));
/// assert_ne!(arguments_hash(&json!({"a": 1})), arguments_hash(&json!({"a": 2})));
/// ```
#[must_use]
pub fn arguments_hash(arguments: &Value) -> String {
    hash_text(&canonical_json(arguments))
}

/// `sha256:<hex>` of canonical JSON text.
pub(crate) fn hash_text(text: &str) -> String {
    hash_of(&digest_text(text))
}

/// SHA-256 of canonical JSON text: the digest an arguments' hash writes out, and an idempotency
/// key is derived from.
pub(crate) fn digest_text(text: &str) -> [u8; 32] {
    Sha256::digest(text.as_bytes()).into()
}

/// `sha256:<hex>` of a digest.
pub(crate) fn hash_of(digest: &[u8; 32]) -> String {
    let mut hex = String::with_capacity(7 + 64);
    hex.push_str("sha256:");
    push_hex(&mut hex, digest);
    hex
}

/// Writes the canonical JSON of `value` into `out`, a piece at a time (straight into a
/// hasher: no intermediate text).
fn write(value: &Value, out: &mut dyn FnMut(&[u8])) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| utf16_order(a.0, b.0));
            out(b"{");
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out(b",");
                }
                string(key, out);
                out(b":");
                write(item, out);
            }
            out(b"}");
        }
        Value::Array(items) => {
            out(b"[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out(b",");
                }
                write(item, out);
            }
            out(b"]");
        }
        Value::String(text) => string(text, out),
        Value::Number(number) => self::number(number, out),
        Value::Bool(true) => out(b"true"),
        Value::Bool(false) => out(b"false"),
        Value::Null => out(b"null"),
    }
}

/// RFC 8785 sorts member names by their UTF-16 code units. That is byte order for ASCII
/// names (almost all), and differs from it only where a name holds a character at or above
/// U+E000.
fn utf16_order(a: &str, b: &str) -> std::cmp::Ordering {
    if a.is_ascii() && b.is_ascii() {
        a.cmp(b)
    } else {
        a.encode_utf16().cmp(b.encode_utf16())
    }
}

/// A string as RFC 8785 writes it, which is how serde_json writes one: `"` and `\` escaped,
/// `\b \t \n \f \r`, other control characters as `\u00xx` (lower-case hex), everything else
/// as it is.
fn string(text: &str, out: &mut dyn FnMut(&[u8])) {
    serialized(text, out);
}

/// A number as ECMAScript writes the double it stands for; an integer beyond ±2^53 with its
/// exact digits (see [`canonical_json`]). Within ±2^53 an integer's digits are also
/// ECMAScript's for the same double.
fn number(number: &serde_json::Number, out: &mut dyn FnMut(&[u8])) {
    if number.is_u64() || number.is_i64() {
        serialized(number, out);
    } else if let Some(f) = number.as_f64().filter(|f| f.is_finite()) {
        let mut buffer = ryu_js::Buffer::new();
        out(buffer.format_finite(f).as_bytes());
    } else {
        // serde_json holds no other numbers (no NaN, no infinity).
        out(b"null");
    }
}

/// `value` as serde_json writes it.
fn serialized<T: serde::Serialize + ?Sized>(value: &T, out: &mut dyn FnMut(&[u8])) {
    struct Sink<'a>(&'a mut dyn FnMut(&[u8]));
    impl std::io::Write for Sink<'_> {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            (self.0)(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    // Writing a string or a number into an infallible writer cannot fail.
    let _ = serde_json::to_writer(Sink(out), value);
}

/// Appends `bytes` as lowercase hex digits.
pub(crate) fn push_hex(out: &mut String, bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for byte in bytes {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// RFC 8785, section 3.2.2.3 and appendix B: numbers as ECMAScript writes them.
    #[test]
    fn numbers_follow_ecmascript() {
        let cases: &[(&str, &str)] = &[
            ("0", "0"),
            ("-0.0", "0"),
            ("5.0", "5"),
            ("-5", "-5"),
            ("1e21", "1e+21"),
            ("1e20", "100000000000000000000"),
            ("1e-7", "1e-7"),
            ("0.000001", "0.000001"),
            ("123456789012345680000", "123456789012345680000"),
            ("4.50", "4.5"),
            ("2e-3", "0.002"),
            ("0.000001234", "0.000001234"),
            ("1.7976931348623157e308", "1.7976931348623157e+308"),
            ("5e-324", "5e-324"),
            ("333333333.33333329", "333333333.3333333"),
            ("9007199254740992", "9007199254740992"),
            ("-9007199254740992", "-9007199254740992"),
        ];
        for (text, expected) in cases {
            let value: Value = serde_json::from_str(text).unwrap();
            assert_eq!(canonical_json(&value), *expected, "{text}");
        }
    }

    /// Integers beyond 2^53 keep their digits: neighbours stay apart.
    #[test]
    fn large_integers_stay_exact() {
        assert_eq!(
            canonical_json(&json!(9_007_199_254_740_993u64)),
            "9007199254740993"
        );
        assert_eq!(
            canonical_json(&json!(-9_007_199_254_740_993i64)),
            "-9007199254740993"
        );
        assert_eq!(canonical_json(&json!(u64::MAX)), "18446744073709551615");
        assert_ne!(
            arguments_hash(&json!({"id": 9_007_199_254_740_993u64})),
            arguments_hash(&json!({"id": 9_007_199_254_740_992u64}))
        );
    }

    /// RFC 8785 section 3.2.3's sorting example: names ordered by UTF-16 code units.
    #[test]
    fn members_sort_by_utf16_code_units() {
        let value = json!({
            "\u{20ac}": "Euro Sign",
            "\r": "Carriage Return",
            "\u{fb33}": "Hebrew Letter Dalet With Dagesh",
            "1": "One",
            "\u{1f600}": "Emoji: Grinning Face",
            "\u{0080}": "Control",
            "\u{00f6}": "Latin Small Letter O With Diaeresis"
        });
        let expected = "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u{0080}\":\"Control\",\"\u{00f6}\":\"Latin Small Letter O With Diaeresis\",\"\u{20ac}\":\"Euro Sign\",\"\u{1f600}\":\"Emoji: Grinning Face\",\"\u{fb33}\":\"Hebrew Letter Dalet With Dagesh\"}";
        assert_eq!(canonical_json(&value), expected);
    }

    /// RFC 8785 section 3.2.2.2: string escapes.
    #[test]
    fn strings_escape_as_rfc_8785() {
        let value = json!("\u{0}\u{8}\t\n\u{c}\r\u{1f}\"\\/\u{7f}é");
        assert_eq!(
            canonical_json(&value),
            "\"\\u0000\\b\\t\\n\\f\\r\\u001f\\\"\\\\/\u{7f}é\""
        );
    }
}

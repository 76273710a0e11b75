//! Short, safe renderings of JSON for messages: pointers, values cut to the echo cap, kinds
//! and counts in words.

use serde_json::Value;

/// A key as a JSON pointer segment (RFC 6901), cut to the echo cap with control characters
/// shown escaped: a pointer quotes the model's keys like any message does.
pub(crate) fn escape(segment: &str) -> String {
    if !segment.contains(['~', '/']) {
        return crate::echo::echo(segment).into_owned();
    }
    crate::echo::echo(&segment.replace('~', "~0").replace('/', "~1")).into_owned()
}

pub(crate) fn unescape(segment: &str) -> String {
    segment.replace("~1", "/").replace("~0", "~")
}

/// `text` cut to `max` characters, marked with `…` when cut, control characters escaped.
pub(crate) fn cut(text: &str, max: usize) -> String {
    crate::echo::echo_to(text, max).into_owned()
}

/// A short rendering of a value for messages: its JSON, cut to the echo cap. Only the start
/// of a long value is ever written out.
pub(crate) fn brief(value: &Value) -> String {
    // A number or a literal is plain ASCII: its JSON as it is, when short enough (a number
    // read with serde_json's `arbitrary_precision` can be long).
    match value {
        Value::String(text) => return brief_str(text),
        Value::Number(_) => {
            let mut text = String::with_capacity(20);
            push_display(&mut text, value);
            if text.len() <= crate::echo::ECHO_CAP {
                return text;
            }
        }
        Value::Bool(b) => return b.to_string(),
        Value::Null => return "null".to_owned(),
        _ => {}
    }
    brief_json(value)
}

/// Appends `value` as its `Display` writes it: an integer other than zero by its digits,
/// without the formatting machinery.
pub(crate) fn push_display(out: &mut String, value: &Value) {
    if let Value::Number(n) = value
        && let Some(int) = nonzero_int(n)
    {
        push_int(out, int);
        return;
    }
    let _ = std::fmt::Write::write_fmt(out, format_args!("{value}"));
}

/// An integer other than zero, whose digits [`push_int`] writes as its `Display` does (zero
/// is left to `Display`: read with `arbitrary_precision`, it may have been written `-0`).
fn nonzero_int(n: &serde_json::Number) -> Option<i128> {
    let int = n
        .as_i64()
        .map(i128::from)
        .or_else(|| n.as_u64().map(i128::from))?;
    (int != 0).then_some(int)
}

/// [`brief`] of a string, without making a `Value` of it.
pub(crate) fn brief_str(text: &str) -> String {
    // A short string is written out whole: its JSON as it is when that is short and plain
    // (what `brief_json` then returns, without its cut-short writer).
    if text.len() + 2 <= crate::echo::ECHO_CAP {
        let mut json = Vec::with_capacity(text.len() + 2);
        crate::json::escape::write_str(&mut json, text);
        if let Ok(json) = String::from_utf8(json)
            && matches!(crate::echo::echo(&json), std::borrow::Cow::Borrowed(_))
        {
            return json;
        }
    }
    brief_json(text)
}

/// The JSON of `value`, cut to the echo cap; only the start of a long value is written out.
fn brief_json<T: serde::Serialize + ?Sized>(value: &T) -> String {
    /// Takes bytes until it has enough, then refuses the rest (ending serialization early).
    struct Prefix(Vec<u8>);
    impl std::io::Write for Prefix {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let room = PREFIX.saturating_sub(self.0.len());
            if room == 0 {
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            let n = room.min(buf.len());
            self.0.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    // Enough bytes for the cap in any script (at most 4 bytes a character), plus one.
    const PREFIX: usize = crate::echo::ECHO_CAP * 4 + 4;
    let mut prefix = Prefix(Vec::new());
    let cut_short = serde_json::to_writer(&mut prefix, value).is_err();
    let text = String::from_utf8_lossy(&prefix.0);
    let shown = crate::echo::echo(&text);
    if cut_short && !shown.ends_with('…') {
        format!("{shown}…")
    } else {
        shown.into_owned()
    }
}

pub(crate) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

pub(crate) fn type_name(name: &str) -> &str {
    match name {
        "integer" => "an integer",
        "number" => "a number",
        "string" => "a string",
        "boolean" => "a boolean",
        "array" => "an array",
        "object" => "an object",
        "null" => "null",
        other => other,
    }
}

/// Appends the decimal digits of `n` (with its sign), without the formatting machinery: a
/// refusal's message is written on every invalid call.
pub(crate) fn push_int(out: &mut String, n: i128) {
    let mut digits = [0_u8; 40];
    let mut at = digits.len();
    let mut rest = n.unsigned_abs();
    // 128-bit division is a call per digit; the digits below 2^64 are divided in 64 bits.
    while u64::try_from(rest).is_err() {
        at -= 1;
        // A digit: `rest % 10` is below 10.
        #[allow(clippy::cast_possible_truncation)]
        let digit = (rest % 10) as u8;
        digits[at] = b'0' + digit;
        rest /= 10;
    }
    let mut rest = u64::try_from(rest).unwrap_or_default();
    loop {
        at -= 1;
        #[allow(clippy::cast_possible_truncation)]
        let digit = (rest % 10) as u8;
        digits[at] = b'0' + digit;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    if n < 0 {
        at -= 1;
        digits[at] = b'-';
    }
    out.push_str(std::str::from_utf8(&digits[at..]).unwrap_or_default());
}

/// Appends "1 character", "2 characters".
pub(crate) fn push_count(out: &mut String, n: u64, noun: &str) {
    push_int(out, i128::from(n));
    out.push(' ');
    out.push_str(noun);
    if n != 1 {
        out.push('s');
    }
}

pub(crate) fn join_or(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_written_as_display_writes_them() {
        for n in [
            0,
            1,
            -1,
            9,
            10,
            -10,
            255,
            i128::from(i64::MIN),
            i128::from(u64::MAX),
            i128::MIN,
            i128::MAX,
        ] {
            let mut out = String::new();
            push_int(&mut out, n);
            assert_eq!(out, n.to_string());
        }
    }

    /// What [`brief`] wrote before its short cuts: the value's JSON through the cut-short
    /// writer, shown as an echo.
    fn brief_by_definition(value: &Value) -> String {
        match value {
            Value::Number(n) if n.to_string().len() <= crate::echo::ECHO_CAP => n.to_string(),
            Value::Bool(b) => b.to_string(),
            Value::Null => "null".to_owned(),
            _ => brief_json(value),
        }
    }

    #[test]
    fn brief_writes_what_its_definition_writes() {
        let mut texts: Vec<String> = ["", "r", "y1", "a\"b", "tab\there", "\u{200b}x", "\u{7f}"]
            .iter()
            .map(|t| (*t).to_owned())
            .collect();
        for len in [56, 57, 58, 59, 60, 61, 300] {
            texts.push("é".repeat(len));
            texts.push("x".repeat(len));
            texts.push(format!("{}\"", "x".repeat(len)));
        }
        for text in texts {
            let value = Value::String(text.clone());
            assert_eq!(brief(&value), brief_by_definition(&value), "{text:?}");
            assert_eq!(brief_str(&text), brief_by_definition(&value), "{text:?}");
        }
        for n in [0_i64, 1, -1, 11, i64::MIN, i64::MAX] {
            let value = Value::from(n);
            assert_eq!(brief(&value), brief_by_definition(&value));
        }
        for value in [Value::from(u64::MAX), Value::from(2.5), Value::from(-0.0)] {
            assert_eq!(brief(&value), brief_by_definition(&value));
        }
    }

    proptest::proptest! {
        #[test]
        fn brief_of_any_string_is_its_definition(text in "\\PC{0,70}|[\\x00-\\x7f]{0,70}") {
            let value = Value::String(text);
            proptest::prop_assert_eq!(brief(&value), brief_by_definition(&value));
        }
    }

    #[test]
    fn values_are_displayed_as_display_writes_them() {
        for value in [
            Value::from(0),
            Value::from(10),
            Value::from(-3),
            Value::from(u64::MAX),
            Value::from(0.5),
            Value::from(-0.0),
            Value::from("x"),
            Value::Null,
        ] {
            let mut out = String::new();
            push_display(&mut out, &value);
            assert_eq!(out, value.to_string());
        }
    }

    #[test]
    fn counts_are_worded_by_number() {
        for (n, expected) in [
            (0, "0 items"),
            (1, "1 item"),
            (2, "2 items"),
            (u64::MAX, "18446744073709551615 items"),
        ] {
            let mut out = String::new();
            push_count(&mut out, n, "item");
            assert_eq!(out, expected);
        }
    }

    #[test]
    fn brief_cuts_long_values() {
        let long = Value::String("x".repeat(500));
        assert!(brief(&long).chars().count() <= 61);
    }
}

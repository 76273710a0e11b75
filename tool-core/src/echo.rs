//! Showing a model's input back to it, bounded.
//!
//! Error messages quote what the model sent (an unknown key, a value out of range) so that it
//! can fix it. A quote is at most [`ECHO_CAP`] characters, marked with `…` when cut, and
//! control characters are shown escaped (`\n`, `\u{1b}`), never as they are: a message must
//! not grow with the input, nor carry terminal escapes or line breaks into logs.

use std::borrow::Cow;

/// The most characters of the model's input any message, pointer segment or log line quotes.
pub const ECHO_CAP: usize = 60;

/// Whether `c` is shown escaped: control characters, and the invisible marks that reorder or
/// hide text (bidirectional overrides, zero-width characters).
fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
}

/// `text` as a message may quote it: control characters escaped, cut to [`ECHO_CAP`]
/// characters with `…`.
pub(crate) fn echo(text: &str) -> Cow<'_, str> {
    echo_to(text, ECHO_CAP)
}

/// [`echo`] with another cap.
pub(crate) fn echo_to(text: &str, max: usize) -> Cow<'_, str> {
    // Fast path: short plain text is quoted as it is.
    if text.len() <= max && !text.chars().any(hidden) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(max.min(text.len()) + 4);
    let mut shown = 0;
    for c in text.chars() {
        let piece: String = if hidden(c) {
            c.escape_default().collect()
        } else {
            c.to_string()
        };
        let width = piece.chars().count();
        if shown + width > max {
            out.push('…');
            return Cow::Owned(out);
        }
        shown += width;
        out.push_str(&piece);
    }
    Cow::Owned(out)
}

/// A parser's message (serde's, jsonschema's), which may quote the input in `"..."` or
/// `` `...` ``: each quote cut to [`ECHO_CAP`] characters, the whole to `max`, control
/// characters escaped.
pub(crate) fn message(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max + 8));
    let mut rest = text;
    while let Some(open) = rest.find(['"', '`']) {
        let quote = rest.as_bytes()[open] as char;
        out.push_str(&rest[..=open]);
        let after = &rest[open + 1..];
        match after.find(quote) {
            Some(close) => {
                out.push_str(&echo(&after[..close]));
                out.push(quote);
                rest = &after[close + 1..];
            }
            None => {
                out.push_str(&echo(after));
                rest = "";
            }
        }
    }
    out.push_str(rest);
    echo_to(&out, max).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parser_messages_quote_briefly() {
        let long = "x".repeat(500);
        let text = format!("invalid type: string \"{long}\", expected i64 at line 1 column 510");
        let shown = message(&text, 300);
        assert!(shown.chars().count() < 130, "{shown}");
        assert!(
            shown.ends_with("expected i64 at line 1 column 510"),
            "{shown}"
        );
        assert_eq!(
            message("unknown field `a\nb`", 300),
            "unknown field `a\\nb`"
        );
    }

    #[test]
    fn quotes_are_bounded_and_control_characters_visible() {
        assert_eq!(echo("search_web"), "search_web");
        assert_eq!(echo("a\nb\u{1b}[31m"), "a\\nb\\u{1b}[31m");
        assert_eq!(echo("x\u{202E}y"), "x\\u{202e}y");
        let long = "é".repeat(1_000);
        let shown = echo(&long);
        assert_eq!(shown.chars().count(), ECHO_CAP + 1);
        assert!(shown.ends_with('…'));
        let controls = "\u{1}".repeat(1_000);
        assert!(echo(&controls).chars().count() <= ECHO_CAP + 1);
        assert!(!echo(&controls).contains('\u{1}'));
    }
}

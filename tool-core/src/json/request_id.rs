//! The `id` of a JSON-RPC request read from the start of its text, without parsing the rest:
//! a message refused for its size or its values is answered with its id when the id can be
//! read, so the client that waits for it hears back.

use serde_json::Value;

/// The top-level `id` of the JSON object that `text` starts (or, for a text cut short, the
/// part of it given), when it is a number or a string that ends within `text`; `None`
/// otherwise (no object, no `id` before the text ends, an `id` of another type).
pub(crate) fn request_id(text: &[u8]) -> Option<Value> {
    let mut at = skip_space(text, 0);
    if text.get(at) != Some(&b'{') {
        return None;
    }
    at += 1;
    loop {
        at = skip_space(text, at);
        match text.get(at)? {
            b'}' => return None,
            b',' => {
                at += 1;
                continue;
            }
            b'"' => {}
            _ => return None,
        }
        let key_end = string_end(text, at)?;
        let key = &text[at..key_end];
        at = skip_space(text, key_end);
        if text.get(at) != Some(&b':') {
            return None;
        }
        at = skip_space(text, at + 1);
        let value_end = value_end(text, at)?;
        if key == b"\"id\"" {
            let value: Value = serde_json::from_slice(&text[at..value_end]).ok()?;
            return (value.is_number() || value.is_string()).then_some(value);
        }
        at = value_end;
    }
}

fn skip_space(text: &[u8], mut at: usize) -> usize {
    while text.get(at).is_some_and(u8::is_ascii_whitespace) {
        at += 1;
    }
    at
}

/// The index just past the string starting at `at` (its opening quote).
fn string_end(text: &[u8], at: usize) -> Option<usize> {
    let mut i = at + 1;
    while let Some(&b) = text.get(i) {
        match b {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// The index just past the value starting at `at`: a string, an object or array (skipped
/// by counting brackets outside strings), or a scalar (up to the next `,` `}` or space).
fn value_end(text: &[u8], at: usize) -> Option<usize> {
    match text.get(at)? {
        b'"' => string_end(text, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            while let Some(&b) = text.get(i) {
                match b {
                    b'"' => {
                        i = string_end(text, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => {
            let mut i = at;
            while text
                .get(i)
                .is_some_and(|b| !matches!(b, b',' | b'}' | b']') && !b.is_ascii_whitespace())
            {
                i += 1;
            }
            // A scalar that runs to the end of a text cut short may be cut too.
            (i < text.len()).then_some(i)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::request_id;
    use serde_json::json;

    #[test]
    fn the_id_is_read_wherever_it_stands_at_the_top() {
        assert_eq!(
            request_id(br#"{"jsonrpc":"2.0","id":7,"method":"x"}"#),
            Some(json!(7))
        );
        assert_eq!(
            request_id(
                br#" { "method" : "x", "params": {"id": 1, "a": [1, {"id": 2}]}, "id" : "r-9" }"#
            ),
            Some(json!("r-9"))
        );
        assert_eq!(
            request_id(br#"{"params":{"s":"}\"id\":3"},"id":4}"#),
            Some(json!(4))
        );
    }

    #[test]
    fn a_text_cut_short_gives_the_id_only_when_it_came_first() {
        let cut =
            br#"{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"arguments":{"a":[1,2,3"#;
        assert_eq!(request_id(cut), Some(json!(12)));
        assert_eq!(
            request_id(br#"{"method":"tools/call","params":{"a":[1,2"#),
            None
        );
        assert_eq!(request_id(br#"{"id":123"#), None);
    }

    #[test]
    fn no_id_where_there_is_none_to_read() {
        assert_eq!(request_id(b"[1,2]"), None);
        assert_eq!(request_id(b"not json"), None);
        assert_eq!(request_id(br#"{"id":null}"#), None);
        assert_eq!(request_id(br#"{"id":{"x":1}}"#), None);
        assert_eq!(request_id(b""), None);
        assert_eq!(request_id(br#"{"a":"\"#), None);
    }
}

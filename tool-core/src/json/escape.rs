//! Writing a string as a JSON string literal, byte for byte as `serde_json` writes it, eight
//! bytes at a time: most text in an error envelope (messages, pointers) has nothing to escape,
//! and `serde_json` looks up every byte in a table.

/// `0x0101…01`, for the word-at-a-time tests.
const ONES: u64 = u64::from_le_bytes([0x01; 8]);
/// The high bit of every byte.
const HIGHS: u64 = u64::from_le_bytes([0x80; 8]);

/// The bytes of `word` (read little-endian) that may need an escape: a control character
/// (below 0x20), `"` or `\`, each marked by its high bit. The lowest byte marked always needs
/// one, so a word with no mark has nothing to escape and the first mark is the first byte to
/// escape: a subtraction borrows from the next byte only at a byte that needs an escape, and a
/// byte of 0x80 or more never needs one and is never marked. Bytes past the first may be
/// marked for nothing.
#[inline(always)]
fn marks(word: u64) -> u64 {
    // Each subtraction sets a byte's high bit when the byte is below 0x20, or is `"` or `\`
    // (then zero after the XOR); `!word` keeps the ASCII bytes' answers only.
    let control = word.wrapping_sub(ONES * 0x20);
    let quote = (word ^ (ONES * u64::from(b'"'))).wrapping_sub(ONES);
    let backslash = (word ^ (ONES * u64::from(b'\\'))).wrapping_sub(ONES);
    (control | quote | backslash) & !word & HIGHS
}

fn needs_escape(b: u8) -> bool {
    b == b'"' || b == b'\\' || b < 0x20
}

/// Where the first byte of `bytes` from `at` on that needs an escape is, if any: eight bytes at
/// a time, then the last few one by one.
#[inline]
fn next_escape(bytes: &[u8], mut at: usize) -> Option<usize> {
    while let Some(chunk) = bytes.get(at..at + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let marks = marks(u64::from_le_bytes(word));
        if marks != 0 {
            // At most 63 over 8: a byte's index in the word.
            return Some(at + (marks.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    bytes[at..]
        .iter()
        .position(|&b| needs_escape(b))
        .map(|n| at + n)
}

/// How many bytes at the start of `bytes` need no escape: the run a JSON string's text takes
/// as it is, up to its first `"`, `\` or control character.
pub(crate) fn plain_run(bytes: &[u8]) -> usize {
    next_escape(bytes, 0).unwrap_or(bytes.len())
}

/// Appends `text` to `out` as a JSON string, quotes included, with the escapes `serde_json`
/// writes: `\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t` and `\u00xx` for the other control
/// characters; everything else as it is.
pub(crate) fn write_str(out: &mut Vec<u8>, text: &str) {
    out.reserve(text.len() + 2);
    out.push(b'"');
    write_escaped(out, text);
    out.push(b'"');
}

/// Appends `text` as the inside of a JSON string, escaped as [`write_str`] escapes it, without
/// the quotes. Every escape stands for one byte, so the escaped form of a text is the escaped
/// forms of its parts, wherever it is cut.
#[inline(always)]
pub(crate) fn write_escaped(out: &mut Vec<u8>, text: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = text.as_bytes();
    let mut copied = 0;
    while let Some(at) = next_escape(bytes, copied) {
        out.extend_from_slice(&bytes[copied..at]);
        copied = at + 1;
        match bytes[at] {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0C => out.extend_from_slice(b"\\f"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b => out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 0xF)],
            ]),
        }
    }
    out.extend_from_slice(&bytes[copied..]);
}

#[cfg(test)]
mod tests {
    use super::write_str;

    fn same_as_serde(text: &str) {
        let mut ours = Vec::new();
        write_str(&mut ours, text);
        let theirs = serde_json::to_vec(text).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&ours),
            String::from_utf8_lossy(&theirs),
            "{text:?}"
        );
    }

    #[test]
    fn a_plain_run_ends_at_the_first_byte_to_escape() {
        for text in [
            "",
            "abc",
            "abcdefghijkl\"x",
            "abcdefgh\\",
            "é\u{1F600}\n",
            "0123456\u{1}",
        ] {
            let expected = text
                .bytes()
                .position(|b| b == b'"' || b == b'\\' || b < 0x20)
                .unwrap_or(text.len());
            assert_eq!(super::plain_run(text.as_bytes()), expected, "{text:?}");
        }
    }

    #[test]
    fn every_byte_is_written_as_serde_json_writes_it() {
        for c in (0..=0x7F_u8)
            .map(char::from)
            .chain(['é', '€', '😀', '\u{7f}'])
        {
            for len in 0..20 {
                for at in 0..len {
                    let mut text: Vec<char> =
                        "abcdefghijklmnopqrstuvwxyz".chars().take(len).collect();
                    text[at] = c;
                    same_as_serde(&text.iter().collect::<String>());
                }
            }
        }
        same_as_serde("");
        same_as_serde("\"\\\u{0}\u{1f}\n\r\t\u{8}\u{c} \"quoted\" C:\\path ☃");
    }

    proptest::proptest! {
        #[test]
        fn any_text_is_written_as_serde_json_writes_it(text in "\\PC*|[\\x00-\\x7f]*") {
            same_as_serde(&text);
            let expected = text
                .bytes()
                .position(|b| b == b'"' || b == b'\\' || b < 0x20)
                .unwrap_or(text.len());
            proptest::prop_assert_eq!(super::plain_run(text.as_bytes()), expected);
        }
    }
}

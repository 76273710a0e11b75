//! The view of a text that the scan reads for steering text: what a model would read once the
//! text's disguises are taken off. Format characters are dropped (a zero-width space or a soft
//! hyphen inside a word), compatibility forms are folded by Unicode NFKC (fullwidth and
//! mathematical letters), letters that only look like Latin ones are folded to them by the
//! Unicode confusables data (Cyrillic `о`, Greek `ο`), a run of white space becomes one space
//! (or one paragraph break, for the legacy `\n\nHuman:` turn), and HTML character references
//! to letters, digits and white space are decoded. Every byte of the view knows the range of
//! the original text it came from, so what the scan finds is rewritten in the original text.

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::decompose_compatible;

/// A text's view, and where each of its bytes came from.
pub(crate) struct View {
    pub(crate) bytes: Vec<u8>,
    /// For each byte of the view, the start of the original text it came from.
    starts: Vec<u32>,
    /// For each byte of the view, the end of the original text it came from.
    ends: Vec<u32>,
}

impl View {
    /// The range of the original text that the view's bytes `start..end` came from.
    pub(crate) fn origin(&self, start: usize, end: usize) -> Option<(usize, usize)> {
        let first = *self.starts.get(start)?;
        let last = *self.ends.get(end.checked_sub(1)?)?;
        Some((first as usize, last as usize))
    }

    fn push(&mut self, text: &str, start: usize, end: usize) {
        for &b in text.as_bytes() {
            self.bytes.push(b);
            self.starts.push(start as u32);
            self.ends.push(end as u32);
        }
    }

    fn push_char(&mut self, c: char, start: usize, end: usize) {
        let mut buf = [0u8; 4];
        self.push(c.encode_utf8(&mut buf), start, end);
    }
}

/// The view of `text`, or `None` for a text longer than the offsets the view keeps.
pub(crate) fn view(text: &str) -> Option<View> {
    u32::try_from(text.len()).ok()?;
    let mut view = View {
        bytes: Vec::with_capacity(text.len()),
        starts: Vec::with_capacity(text.len()),
        ends: Vec::with_capacity(text.len()),
    };
    // An open run of white space: where it started and ended, and how many line breaks.
    let mut space: Option<(usize, usize, u32)> = None;
    let mut at = 0;
    while let Some(c) = text[at..].chars().next() {
        let (c, len) = match c {
            // A reference to a letter, a digit or white space: a disguised word. One to a
            // sign of markup (`&lt;`) is how escaped text, the output checks' own included,
            // writes markup as data, and stays.
            '&' => reference(&text[at..])
                .filter(|(c, _)| c.is_alphanumeric() || c.is_whitespace() || is_ignorable(*c))
                .unwrap_or(('&', 1)),
            c => (c, c.len_utf8()),
        };
        let end = at + len;
        if is_ignorable(c) {
            at = end;
            continue;
        }
        if c.is_whitespace() {
            let breaks = u32::from(c == '\n');
            space = Some(match space {
                Some((from, _, n)) => (from, end, n + breaks),
                None => (at, end, breaks),
            });
            at = end;
            continue;
        }
        if let Some((from, to, breaks)) = space.take() {
            view.push(if breaks >= 2 { "\n\n" } else { " " }, from, to);
        }
        fold(c, |folded| view.push_char(folded, at, end));
        at = end;
    }
    if let Some((from, to, breaks)) = space {
        view.push(if breaks >= 2 { "\n\n" } else { " " }, from, to);
    }
    Some(view)
}

/// Characters a reader does not see and the view drops: Unicode's default-ignorable code
/// points (zero-width characters, joiners, direction marks, variation selectors, tag
/// characters, the soft hyphen), as listed in DerivedCoreProperties.txt.
pub(crate) fn is_ignorable(c: char) -> bool {
    matches!(
        c,
        '\u{AD}'
            | '\u{34F}'
            | '\u{61C}'
            | '\u{115F}'..='\u{1160}'
            | '\u{17B4}'..='\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF0}'..='\u{FFF8}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E0FFF}'
    )
}

/// `c` as the view reads it: ASCII as it is; else its compatibility decomposition (NFKC's
/// first half), each part folded to the Latin letter it imitates when the confusables data
/// says it imitates one.
fn fold(c: char, mut emit: impl FnMut(char)) {
    if c.is_ascii() || skip(c) {
        emit(c);
        return;
    }
    let mut parts: [char; 4] = ['\0'; 4];
    let mut n = 0;
    let mut more = false;
    decompose_compatible(c, |part| {
        if let Some(slot) = parts.get_mut(n) {
            *slot = part;
            n += 1;
        } else {
            more = true;
        }
    });
    if more {
        // A long decomposition (a ligature of a phrase): composed again, as NFKC does.
        let mut buf = [0u8; 4];
        for part in c.encode_utf8(&mut buf).nfkc() {
            emit(lookalike(part).unwrap_or(part));
        }
        return;
    }
    for &part in parts.iter().take(n) {
        if is_mark(part) {
            continue; // an accent the decomposition split off: `é` reads as `e`
        }
        emit(lookalike(part).unwrap_or(part));
    }
}

/// Scripts whose letters neither decompose to nor imitate a Latin letter in a way that
/// spells an instruction: CJK ideographs, kana and Hangul syllables, left as they are
/// without a lookup.
fn skip(c: char) -> bool {
    matches!(c, '\u{3040}'..='\u{30FF}' | '\u{3400}'..='\u{4DBF}' | '\u{4E00}'..='\u{9FFF}' | '\u{AC00}'..='\u{D7A3}')
}

/// A combining mark of the common blocks (accents split off by the decomposition).
fn is_mark(c: char) -> bool {
    matches!(c, '\u{300}'..='\u{36F}' | '\u{1AB0}'..='\u{1AFF}' | '\u{1DC0}'..='\u{1DFF}' | '\u{20D0}'..='\u{20FF}' | '\u{FE20}'..='\u{FE2F}')
}

/// The ASCII letter or sign `c` imitates, by the Unicode confusables data (UTS #39), when it
/// imitates exactly one.
fn lookalike(c: char) -> Option<char> {
    if c.is_ascii() {
        return Some(c);
    }
    let mut buf = [0u8; 4];
    let mut skeleton = unicode_security::skeleton(c.encode_utf8(&mut buf));
    let first = skeleton.next()?;
    if skeleton.next().is_some() || !first.is_ascii() {
        return None;
    }
    // The data folds capital I to small l (they look alike); a capital that imitates one
    // reads as the capital.
    Some(if first == 'l' && c.is_uppercase() {
        'I'
    } else {
        first
    })
}

/// The HTML character reference at the start of `text` (`&#105;`, `&#x69;`, `&lt;`), as the
/// character it stands for and the length of the reference.
fn reference(text: &str) -> Option<(char, usize)> {
    let window = text.as_bytes().get(1..text.len().min(34))?;
    let body_end = window.iter().position(|&b| b == b';')? + 1;
    let body = text.get(1..body_end)?;
    let c = if let Some(number) = body.strip_prefix('#') {
        let code = match number.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
            None => number.parse::<u32>().ok()?,
        };
        char::from_u32(code)?
    } else {
        named(body)?
    };
    Some((c, body_end + 1))
}

/// The named references of white space and invisible characters (HTML's named references of
/// letters are of accented and foreign letters, which spell no instruction).
fn named(name: &str) -> Option<char> {
    Some(match name {
        "nbsp" | "NonBreakingSpace" => '\u{A0}',
        "Tab" => '\t',
        "NewLine" => '\n',
        "ensp" => '\u{2002}',
        "emsp" => '\u{2003}',
        "thinsp" => '\u{2009}',
        "shy" => '\u{AD}',
        "ZeroWidthSpace" => '\u{200B}',
        "zwj" => '\u{200D}',
        "zwnj" => '\u{200C}',
        "lrm" => '\u{200E}',
        "rlm" => '\u{200F}',
        _ => return None,
    })
}
